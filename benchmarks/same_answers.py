"""Answers of `kgdb ask` (shipped defaults, no LLM, nothing written) for every question of a split, one JSON
line each, so that two trees can be compared answer for answer: run it once with the other tree first on
`PYTHONPATH`, once with this one, then `--compare A B`.

    PYTHONPATH=/path/to/other/tree python benchmarks/same_answers.py --questions $KGDB_DATA/webqsp/questions.jsonl \
        --split val --topics given --out /tmp/before.jsonl
    python benchmarks/same_answers.py ... --out /tmp/after.jsonl
    python benchmarks/same_answers.py --compare /tmp/before.jsonl /tmp/after.jsonl

What is compared: the answers (ids, names, scores, paths), the evidence lines, the topics read and the
notes; timings and run ids differ between any two runs and are left out.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.progress import Progress

COMPARED = ("topics", "topic_names", "answers", "alternatives", "tied_first", "evidence", "error", "retriever")


def answers(questions: Path, split: str, topics: str, sample: int | None, out: Path) -> None:
    from kgdb.api import connect
    from kgdb.data.questions import read_questions
    from kgdb.errors import KgdbError

    qs = read_questions(questions)
    records = qs.split(split)
    if sample is not None and len(records) > sample:
        import random

        chosen = set(random.Random(0).sample(range(len(records)), sample))
        records = [r for i, r in enumerate(records) if i in chosen]
    with connect() as kg, out.open("w") as sink, Progress() as bar:
        task = bar.add_task(f"{questions.parent.name} {split} ({topics})", total=len(records))
        for r in records:
            given = list(r.topics) if topics == "given" and r.topics else None
            try:
                result = kg.ask(r.text, given, write=False).to_json()
            except KgdbError as exc:  # a question kgdb refuses is an outcome to compare too
                result = {"error": f"{type(exc).__name__}: {exc}"}
            kept = {k: result.get(k) for k in COMPARED}
            sink.write(json.dumps({"qid": r.id, **kept}, sort_keys=True) + "\n")
            bar.advance(task)


def compare(before: Path, after: Path) -> int:
    a, b = before.read_text().splitlines(), after.read_text().splitlines()
    differ = [json.loads(x)["qid"] for x, y in zip(a, b) if x != y]
    print(f"{len(a)} / {len(b)} questions; {len(differ)} differ" + (f": {', '.join(differ[:20])}" if differ else ""))
    return int(bool(differ) or len(a) != len(b))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--questions", type=Path)
    p.add_argument("--split", default="val")
    p.add_argument("--topics", choices=("given", "linked"), default="given")
    p.add_argument("--sample", type=int, help="N questions of the split drawn with a fixed seed")
    p.add_argument("--out", type=Path)
    p.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = p.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare))
    if args.questions is None or args.out is None:
        p.error("--questions and --out are needed unless --compare")
    answers(args.questions, args.split, args.topics, args.sample, args.out)


if __name__ == "__main__":
    main()
