"""Why RRP misses: every Hit@1 miss of a split sorted into one cause, per question file.

    KGDB_NEO4J_URI=$METAQA_URI .venv/bin/python benchmarks/rrp_misses.py \\
        --questions $KGDB_DATA/metaqa/2-hop/qa.txt --split val [--limit 500] [--examples 5]

Causes, in the order they are tested (the first that applies):
  (a) unreachable     no topic or no answer in the graph, or no relation path of the question's hop
                      count (MetaQA; else 1..--hops) joins a topic to an answer in the whole graph
  (b) not in beam     no labelled (shortest, best-F1) relation path is among the planner's beam
  (b) not top         a labelled path is in the beam but the answering path is another one
  (c) grounding cut   the answering path is a labelled one, but its grounding (frontier cap, walk
                      rule) reached no gold answer
  (d) ranking         the answering path reaches a gold answer, another of its ends ranks first
                      (ties among the path's ends, several relation paths mixing in rethinking)
  (e) label noise     a labelled path answers, the gold answers are not all it reaches and the
                      first answer is not gold although the path is what the question asks (judged
                      by reading the printed examples; the script reports (d) and (e) together as
                      "ranking" when it cannot tell, and separately counts first answers that share
                      a name with a gold answer: MetaQA titles shared by several films)
Topics are the gold ones (as `kgdb eval rrp`); the answering mode is the one `kgdb ask` uses (the
checkpoint's val-chosen `rethinking.mode`) unless --mode says otherwise. Val only for choices.
"""

from __future__ import annotations

import argparse
import collections
import os
from pathlib import Path

CAUSES = (
    "hit",
    "(a) unreachable",
    "(b) not in beam",
    "(b) not top",
    "(c) grounding cut",
    "(d) ranking",
    "(d) same-name answer",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=Path, action="append", required=True, help="repeatable")
    ap.add_argument("--split", default="val")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--hops", type=int, default=3, help="longest relation path when the file states no hop count")
    ap.add_argument("--mode", help="planner, structural, union or rethink (default: the checkpoint's chosen mode)")
    ap.add_argument("--checkpoint")
    ap.add_argument("--structural")
    ap.add_argument("--examples", type=int, default=3, help="questions printed per cause")
    args = ap.parse_args()

    from kgdb.config import load_settings
    from kgdb.cypher import Graph
    from kgdb.cypher.paths import graph_triples
    from kgdb.data.questions import read_questions
    from kgdb.data.relation_paths import TripleArrays, shortest_relation_paths
    from kgdb.rrp.model_choice import relation_path_retriever
    from kgdb.rrp.structural import gather_questions

    settings = load_settings()
    graph = Graph.connect(settings)
    retriever = relation_path_retriever(
        graph, settings, checkpoint=args.checkpoint, write=False, structural=args.structural or None
    )
    mode = args.mode or retriever.mode
    arrays = TripleArrays.from_triples(graph_triples(graph))
    print(
        f"server {settings.neo4j_uri}; split {args.split}; mode {mode} (λ1 {retriever.lambda1}, θ {retriever.theta}); "
        f"planner {retriever.describe()['checkpoint']}, structural {retriever.describe()['structural']}"
    )
    header = f"{'file':<28} {'n':>5} {'Hit@1':>6} {'MacF1':>6} {'reach%':>6} " + " ".join(
        f"{c:>8.8}" for c in CAUSES[1:]
    )
    rows = []
    for path in args.questions:
        qs = read_questions(path)
        records = qs.split(args.split)[: args.limit]
        items = gather_questions(retriever, records)
        counts: collections.Counter = collections.Counter()
        f1 = 0.0
        examples: dict[str, list[str]] = collections.defaultdict(list)
        for q, it in zip(records, items):
            cause, note = classify(q, it, arrays, mode, retriever, args.hops, shortest_relation_paths)
            counts[cause] += 1
            f1 += answer_f1(q, it, mode, retriever)
            if cause != "hit" and len(examples[cause]) < args.examples:
                examples[cause].append(f"{q.id} {q.text!r}: {note}")
        n = len(records)
        reach = n - counts["(a) unreachable"]
        rows.append(
            (
                qs.dataset,
                n,
                100 * counts["hit"] / max(n, 1),
                100 * f1 / max(n, 1),
                100 * reach / max(n, 1),
                [counts[c] for c in CAUSES[1:]],
            )
        )
        print(f"\n{qs.dataset} ({n} {args.split} questions)")
        for c in CAUSES[1:]:
            for line in examples[c]:
                print(f"  {c}: {line}")
    print("\n" + header)
    for name, n, hit, f1, reach, cs in rows:
        print(f"{name:<28} {n:>5} {hit:>6.2f} {f1:>6.2f} {reach:>6.2f} " + " ".join(f"{c:>8}" for c in cs))
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    graph.close()


def answer_f1(q, it, mode, retriever) -> float:
    """F1 of the answered entity ids against the gold ids (`score_mode`'s Macro-F1 term)."""
    from kgdb.rrp.structural import answers_of

    if it.gathered is None or not q.answers:
        return 0.0
    pred, gold = set(answers_of(mode, it.gathered, retriever.lambda1, retriever.theta)), set(q.answers)
    common = len(pred & gold)
    return 2 * common / (len(pred) + len(gold)) if common else 0.0


def classify(q, it, arrays, mode, retriever, hops, shortest_relation_paths) -> tuple[str, str]:
    from kgdb.rrp.structural import answers_of

    gold = set(q.answers)
    g = it.gathered
    if g is None:
        return "(a) unreachable", "retrieval failed (no topic in the graph)"
    pred = answers_of(mode, g, retriever.lambda1, retriever.theta)
    if pred and pred[0] in gold:
        return "hit", ""
    names = g.names
    labels = set(
        shortest_relation_paths(
            arrays,
            q.topics,
            q.answers,
            max_hops=hops,
            exact_hops=q.hop if q.hop and q.hop <= hops else None,
            best_f1=True,
        )
    )
    if not labels:
        why = (
            "no answer in the graph"
            if not any(a in arrays.index for a in gold)
            else "no relation path joins topic and answer"
        )
        return "(a) unreachable", why
    beam = [tuple(zip(c.path.relations, c.path.directions)) for c in g.planned]
    topics, cvt = set(g.found.ids), g.cvt
    first = pred[0] if pred else None
    answering = [c for c in g.planned + g.structural if c.path.answer == first]
    top = max(answering, key=lambda c: c.path.score) if answering else None
    top_path = tuple(zip(top.path.relations, top.path.directions)) if top else None
    gold_names = sorted({names.get(a, a) for a in gold})[:4]
    label_txt = " | ".join(_fmt(p) for p in sorted(labels)[:2])
    note = (
        f"answered {names.get(first, first) if first else None} via {_fmt(top_path) if top_path else '-'}; "
        f"gold {gold_names}; labelled {label_txt}"
    )
    if not labels & set(beam):
        return "(b) not in beam", note + f"; beam {[_fmt(p) for p in dict.fromkeys(beam)][:3]}"
    if top_path not in labels:
        return "(b) not top", note
    ends = {
        c.path.answer for c in g.planned + g.structural if tuple(zip(c.path.relations, c.path.directions)) == top_path
    }
    if not ends & gold:
        return "(c) grounding cut", note + f"; {len(ends)} ends grounded"
    if first and names.get(first, "").lower() in {names.get(a, a).lower() for a in gold}:
        return "(d) same-name answer", note
    others = len(ends - topics - cvt)
    return "(d) ranking", note + f"; the path reaches {others} entities, {len(ends & gold)} gold"


def _fmt(path) -> str:
    return " ".join(f"{r}{'' if d > 0 else '^-1'}" for r, d in path) if path else "-"


if __name__ == "__main__":
    main()
