"""What reading compositional questions in two steps (`RankedPathPlanner.compose`) changes: each question
answered with and without it by the same RRP retriever, Hit@1 (the first answer's entity id among the
gold answers, as `kgdb eval rrp`) both ways, and every question where the composed reading was taken.

    KGDB_NEO4J_URI=$DEFAULT_URI KGDB_CHECKPOINTS_DIR=/tmp/none .venv/bin/python benchmarks/compositions.py \\
        --questions benchmarks/data/default_compositional_dev.jsonl --split all [--topics linked]

`--checkpoint` names the ranker (default: the graph's own, else the shipped portable one); `--sample N` takes
N questions of the split at random (fixed seed). A question that fails (e.g. its topic is not in the graph)
is a miss both ways. Choices are made on train and val splits; `--split test` is for the one figure reported.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kgdb.config import load_settings
from kgdb.cypher import Graph
from kgdb.data.questions import read_questions, subsample
from kgdb.errors import KgdbError
from kgdb.rrp.model_choice import relation_path_retriever
from kgdb.rrp.path_ranker import RankedPathPlanner
from kgdb.rrp.structural import answers_of


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--split", default="val", help="train | val | test | all")
    ap.add_argument("--sample", type=int, help="N questions of the split at random (fixed seed)")
    ap.add_argument(
        "--checkpoint", help="ranker checkpoint (default: the graph's own, else the shipped portable ranker)"
    )
    ap.add_argument(
        "--topics",
        choices=("gold", "linked"),
        default="gold",
        help="the file's topics, or linked from the text as `kgdb ask` does",
    )
    args = ap.parse_args()
    settings = load_settings()
    graph = Graph.connect(settings)
    retriever = relation_path_retriever(graph, settings, checkpoint=args.checkpoint, write=False)
    if not isinstance(retriever.planner, RankedPathPlanner):
        raise SystemExit(
            f"the planner ({type(retriever.planner).__name__}) is not a path ranker: it reads no compositions"
        )
    questions = subsample(read_questions(args.questions).split(args.split), sample=args.sample)

    def first(q) -> tuple[str | None, list[str]]:
        """The first answer in the order `kgdb ask --reasoner rrp` and `kgdb eval rrp` give (`answers_of`)."""
        try:
            g = retriever.gather(q.text, None if args.topics == "linked" else list(q.topics))
        except KgdbError:
            return None, []
        answers = answers_of(retriever.mode, g, retriever.lambda1, retriever.theta)
        return (answers[0] if answers else None), [n for n in g.notes if n.startswith("read as a composition")]

    hits = {False: 0, True: 0}
    taken = []
    for q in questions:
        answers = {}
        for on in (False, True):
            retriever.planner.compositions = on
            answers[on], notes = first(q)
            hits[on] += answers[on] in set(q.answers)
        if notes:
            taken.append((q, answers, notes[0]))
    for q, answers, note in taken:
        gold = set(q.answers)
        mark = (
            "+"
            if (answers[True] in gold) > (answers[False] in gold)
            else "-"
            if (answers[True] in gold) < (answers[False] in gold)
            else "="
        )
        print(f"{mark} {q.id} {q.text!r}: {answers[False]} -> {answers[True]} ({note})")
    n = max(len(questions), 1)
    print(
        f"{args.questions} {args.split} ({len(questions)} questions, topics {args.topics}): Hit@1 without the composed reading "
        f"{100 * hits[False] / n:.2f}, with it {100 * hits[True] / n:.2f}; composed reading taken for {len(taken)}"
    )


if __name__ == "__main__":
    main()
