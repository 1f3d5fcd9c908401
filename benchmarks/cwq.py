"""ComplexWebQuestions by question type: Hit, Hit@1, Macro-F1, reachable and seconds per question of RRP without an
LLM, overall and for each of CWQ's four kinds (composition, conjunction, comparative, superlative; read from the
question's wording by `kgdb.rrp.report.question_type`, since the file carries no label).

    KGDB_NEO4J_URI=bolt://localhost:7687 KGDB_CHECKPOINTS_DIR=/tmp/none .venv/bin/python benchmarks/cwq.py \\
        --questions $KGDB_DATA/cwq/questions.jsonl --split val --checkpoint kgdb/models/default/rrp-ranker-portable \\
        [--out cwq-val.json]

The answers are those of `kgdb eval rrp` (one retrieval pass per question, the retriever's answering mode, topics
from the file). `--out` keeps every question's type, gold ids, answers (first 50) and seconds, for re-ranking
experiments that need no second pass. Choices are made on train and val; `--split test` is for the one figure
reported.
"""

from __future__ import annotations

import argparse
import json
import time
from itertools import pairwise
from pathlib import Path

from kgdb.config import load_settings
from kgdb.cypher import Graph
from kgdb.data.questions import read_questions, subsample
from kgdb.rrp.model_choice import relation_path_retriever
from kgdb.rrp.report import QUESTION_TYPES, by_type, choose_split, rrp_rows, summarise
from kgdb.rrp.structural import gather_questions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--split", help="train | val (default) | test | all")
    ap.add_argument("--sample", type=int, help="N questions of the split at random (fixed seed)")
    ap.add_argument(
        "--checkpoint", help="ranker or planner checkpoint (default: the graph's own, else the shipped portable ranker)"
    )
    ap.add_argument(
        "--mode", help="answering mode (default: the retriever's own; planner where there is no structural reasoner)"
    )
    ap.add_argument("--out", type=Path, help="JSON: the figures and every question's row")
    args = ap.parse_args()
    qs = read_questions(args.questions)
    split, note = choose_split(qs, args.split)
    if note:
        print(f"note: {note}")
    records = subsample(qs.split(split), sample=args.sample)
    settings = load_settings()
    graph = Graph.connect(settings)
    retriever = relation_path_retriever(graph, settings, checkpoint=args.checkpoint, write=False)
    mode = args.mode or retriever.mode
    stamps = [time.perf_counter()]
    items = gather_questions(retriever, records, lambda n: stamps.append(time.perf_counter()))
    graph.close()
    seconds = [b - a for a, b in pairwise(stamps)]
    rows = rrp_rows(items, mode, retriever.lambda1, retriever.theta, seconds, records, model=retriever.answer_model)
    overall, kinds = summarise(rows), by_type(rows)
    about = retriever.describe()
    print(
        f"{qs.dataset} {split}, {len(records)} questions, mode {mode}, planner {about['planner']} ({about['checkpoint']})"
    )
    print(f"{'type':<12} {'n':>4} {'Hit':>6} {'Hit@1':>6} {'Mac-F1':>6} {'reach%':>6} {'s/q':>6}")
    for name, m in [("all", overall)] + [(k, kinds[k]) for k in QUESTION_TYPES if k in kinds]:
        print(
            f"{name:<12} {m['n']:>4} {m['hit']:>6.2f} {m['hit1']:>6.2f} {m['macro_f1']:>6.2f} {m['reachable']:>6.2f} {m['seconds_mean']:>6.3f}"
        )
    print(
        f"seconds per question: p50 {overall['seconds_p50']:.3f}, p95 {overall['seconds_p95']:.3f}; retrieval failed for {overall['failed']}"
    )
    if args.out:
        per_question = [
            {
                "id": r.qid,
                "question": q.text,
                "type": r.kind,
                "topics": q.topics,
                "gold": sorted(r.gold),
                "answers": list(r.predicted[:50]),
                "reachable": r.reachable,
                "failed": r.failed,
                "seconds": r.seconds,
            }
            for r, q in zip(rows, records)
        ]
        args.out.write_text(
            json.dumps(
                {
                    "dataset": qs.dataset,
                    "split": split,
                    "mode": mode,
                    "overall": overall,
                    "by_type": kinds,
                    "questions": per_question,
                },
                indent=1,
                ensure_ascii=False,
            ),
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
