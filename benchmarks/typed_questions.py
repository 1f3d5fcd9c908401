"""How `kgdb ask` (no LLM) answers the hand-written questions of benchmarks/data/typed_questions_<graph>.jsonl: a
spouse's birthplace, a spouse's parent, what a team won (not what it lost) and the last thing it won. Each file is
written from one graph's facts, so it runs against the server that holds that graph:

    KGDB_NEO4J_URI=bolt://localhost:7687 KGDB_CHECKPOINTS_DIR=/tmp/none .venv/bin/python benchmarks/typed_questions.py \\
        --questions benchmarks/data/typed_questions_default.jsonl [--topics gold|linked|both] [--out FILE]

`kgdb ask --reasoner rrp --no-write --json` runs once per question in a subprocess (the command a user types);
the first answer is right when its entity id is a gold answer. An empty checkpoints folder gives the shipped
default (the portable ranker).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from kgdb.data.questions import read_questions


def ask(text: str, topics: list[str] | None) -> dict:
    cmd = [sys.executable, "-m", "kgdb", "ask", text, "--reasoner", "rrp", "--no-write", "--json"]
    for t in topics or []:
        cmd += ["--topic", t]
    done = subprocess.run(
        cmd, capture_output=True, text=True, timeout=600, check=False
    )  # a failed ask is a wrong answer, reported
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1], "answers": []}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--topics", choices=("gold", "linked", "both"), default="both")
    ap.add_argument("--out", type=Path, help="JSON lines: one per question and topic source")
    args = ap.parse_args()
    qs = read_questions(args.questions)
    sources = ("gold", "linked") if args.topics == "both" else (args.topics,)
    rows, right = [], {s: 0 for s in sources}
    for q in qs.questions:
        for source in sources:
            res = ask(q.text, list(q.topics) if source == "gold" else None)
            answers = [a.get("entity_id") or a["answer"] for a in res.get("answers") or []]
            ok = bool(answers) and answers[0] in set(q.answers)
            right[source] += ok
            row = {
                "id": q.id,
                "question": q.text,
                "topics": source,
                "linked": res.get("topics"),
                "answers": answers[:5],
                "grounded": [a.get("grounded") for a in (res.get("answers") or [])[:5]],
                "right": ok,
                "error": res.get("error"),
            }
            rows.append(row)
            first = answers[0] if answers else "(no answer)"
            print(
                f"{'RIGHT' if ok else 'WRONG'} [{source}] {q.text!r}: {first!r}"
                + (f" (+{len(answers) - 1} more)" if len(answers) > 1 else "")
                + (f"; error {row['error']}" if row["error"] else ""),
                flush=True,
            )
    n = len(qs.questions)
    print(f"{args.questions}: first answer right " + ", ".join(f"{right[s]}/{n} with {s} topics" for s in sources))
    if args.out:
        args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    main()
