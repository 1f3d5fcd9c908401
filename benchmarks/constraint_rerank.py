"""What the constraint functions of kgdb/pipeline/constraints.py would change if they re-ordered the shipped ranker's
answers: literal constraints (year bounds, last / first) and answer types learned on the training split from the
graph's own relations. A re-ranking experiment on saved answer lists, val only; nothing in `kgdb ask` changes.

    # the answer lists, once per split (benchmarks/cwq.py --out), then:
    KGDB_NEO4J_URI=bolt://localhost:7687 .venv/bin/python benchmarks/constraint_rerank.py \\
        --train cwq-train.json --val cwq-val.json [--margin 0.0] [--out rerank.json]

The type model is fitted on the train file's questions (each question's listed answers, gold against the rest);
its one setting, the margin, is chosen on the train file by two-fold cross-fitting (fitted on one half, Hit@1 on
the other), unless given. Hit@1 is reported for the ranker's order, each
constraint alone and both (types first, then the literal constraint), overall and by question type, with the
questions each re-ordering turns right (+) and wrong (-). Macro-F1 does not move: the answer set is the same.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from kgdb.config import load_settings
from kgdb.cypher import Graph
from kgdb.cypher.answer_evidence import attached_values, type_features
from kgdb.reading.constraints import parse_constraints
from kgdb.rrp.constraints import AnswerTypeModel, apply_literal, years_of
from kgdb.rrp.report import QUESTION_TYPES


def _evidence(graph: Graph, questions: list[dict], *, dates: bool) -> tuple[dict, dict]:
    ids = sorted({a for q in questions for a in q["answers"]})
    feats, values = {}, {}
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        feats.update(type_features(graph, chunk))
        if dates:
            values.update(attached_values(graph, chunk))
    return feats, values


MARGINS = (0.0, 0.5, 1.0, 2.0, 3.0, 5.0, float("inf"))  # inf: the ranker's order


def _fit(questions: list[dict], feats: dict) -> AnswerTypeModel:
    return AnswerTypeModel.fit(
        (
            parse_constraints(q["question"]).cue,
            [feats.get(a, frozenset()) for a in q["answers"]],
            [a in set(q["gold"]) for a in q["answers"]],
        )
        for q in questions
    )


def _choose_margin(questions: list[dict], feats: dict) -> float:
    """The margin with the best two-fold cross-fitted Hit@1 on the training questions (ties: the larger)."""
    halves = (questions[0::2], questions[1::2])
    right = Counter()
    for fit_on, score_on in (halves, halves[::-1]):
        model = _fit(fit_on, feats)
        for q in score_on:
            cue = parse_constraints(q["question"]).cue
            for m in MARGINS:
                order = model.rerank(cue, q["answers"], feats, margin=m)
                right[m] += bool(order) and order[0] in set(q["gold"])
    print(
        "train Hit@1 by margin (two-fold): " + ", ".join(f"{m}: {100 * right[m] / len(questions):.2f}" for m in MARGINS)
    )
    return max(MARGINS, key=lambda m: (right[m], m))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", type=Path, required=True, help="benchmarks/cwq.py --out of the train split")
    ap.add_argument("--val", type=Path, required=True, help="benchmarks/cwq.py --out of the val split")
    ap.add_argument(
        "--margin",
        type=float,
        help="type score a candidate must beat the first answer's by to move up (default: chosen on train)",
    )
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    train, val = (json.loads(p.read_text(encoding="utf-8")) for p in (args.train, args.val))
    if train["split"] != "train" or val["split"] != "val":
        raise SystemExit(f"expected a train and a val file, got {train['split']} and {val['split']}")
    graph = Graph.connect(load_settings())
    train_q = [q for q in train["questions"] if q["answers"]]
    val_q = [q for q in val["questions"]]
    feats_train, _ = _evidence(graph, train_q, dates=False)
    feats_val, values = _evidence(graph, val_q, dates=True)
    graph.close()
    model = _fit(train_q, feats_train)
    margin = args.margin if args.margin is not None else _choose_margin(train_q, feats_train)
    variants = ("ranker", "literal", "types", "both")
    hits = {v: Counter() for v in variants}
    moved = {v: Counter() for v in variants}
    fired = Counter()
    rows = []
    for q in val_q:
        gold, answers = set(q["gold"]), q["answers"]
        c = parse_constraints(q["question"])
        years = {a: years_of(a, a, values.get(a, [])) for a in answers}
        typed = model.rerank(c.cue, answers, feats_val, margin=margin)
        orders = {
            "ranker": answers,
            "literal": apply_literal(answers, years, c),
            "types": typed,
            "both": apply_literal(typed, years, c),
        }
        fired["literal"] += c.literal and len(answers) > 1
        fired["types"] += typed != answers
        row = {"id": q["id"], "type": q["type"], "cue": c.cue, "literal": c.literal}
        for v, order in orders.items():
            right = bool(order) and order[0] in gold
            for key in ("all", q["type"]):
                hits[v][key] += right
            was = bool(answers) and answers[0] in gold
            moved[v]["+"] += right and not was
            moved[v]["-"] += was and not right
            row[v] = order[0] if order else None
        rows.append(row)
    counts = Counter(q["type"] for q in val_q)
    counts["all"] = len(val_q)
    kinds = ["all"] + [k for k in QUESTION_TYPES if counts[k]]
    print(
        f"{val['dataset']} val, {len(val_q)} questions; type model fitted on {len(train_q)} train questions "
        f"({len(model.weights)} cues: {', '.join(sorted(model.weights))}); margin {margin}"
        + (" (given)" if args.margin is not None else " (chosen on train)")
    )
    print(
        f"literal constraint parsed (and more than one answer) for {fired['literal']}, type order changed for {fired['types']}"
    )
    print(f"{'Hit@1':<10}" + "".join(f"{k:>13}" for k in kinds) + f"{'+':>5}{'-':>5}")
    for v in variants:
        print(
            f"{v:<10}"
            + "".join(f"{100 * hits[v][k] / counts[k]:>7.2f} ({counts[k]:>3})" for k in kinds)
            + f"{moved[v]['+']:>5}{moved[v]['-']:>5}"
        )
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "model": model.to_json(),
                    "hit1": {v: {k: 100 * hits[v][k] / counts[k] for k in kinds} for v in variants},
                    "questions": rows,
                },
                indent=1,
                ensure_ascii=False,
            ),
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
