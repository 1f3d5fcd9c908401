"""Feed the question readers (`eval`/`train`'s `read_questions`, `load questions`' `read_question_file`)
and the kgdb.toml reader thousands of generated files, and count what happened to each: read into
typed values, or refused with one `InputError` line naming file:line (questions) or file and key
(config). Anything else (a traceback, a broken property) is printed and fails the run.

    .venv/bin/python benchmarks/fuzz_readers.py --cases 10000

The generators and the property live in tests/support/reader_cases.py, which the unit tier runs a few
dozen examples of (tests/unit/test_reader_properties.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

from support.reader_cases import check_config_file, check_question_file, config_files, question_files  # noqa: E402


def run(kind: str, cases: int, folder: Path, outcomes: Counter, escaped: list[str]) -> None:
    strategy = question_files() if kind == "questions" else config_files()

    @settings(
        max_examples=cases,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def one(case) -> None:
        try:
            if kind == "questions":
                suffix, data = case
                path = folder / "1-hop" / f"qa{suffix}"
                path.parent.mkdir(exist_ok=True)
                path.write_bytes(data)
                outcomes[(kind, check_question_file(path))] += 1
            else:
                path = folder / "kgdb.toml"
                path.write_bytes(case)
                outcomes[(kind, check_config_file(path))] += 1
        except Exception:  # the point of the run: every escape is counted and shown, none stops it
            outcomes[(kind, "ESCAPED")] += 1
            if len(escaped) < 5:
                escaped.append(f"{kind} case {case!r:.300}\n{traceback.format_exc()}")

    one()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000, help="Generated files per reader family (default 10,000).")
    args = parser.parse_args()
    for name in [n for n in os.environ if n.startswith("KGDB_")]:
        del os.environ[name]  # only the generated kgdb.toml may set anything
    outcomes: Counter = Counter()
    escaped: list[str] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("questions", "config"):
            run(kind, args.cases, Path(tmp), outcomes, escaped)
    total = sum(outcomes.values())
    print(f"{total:,} generated files in {time.perf_counter() - start:.1f} s")
    for (kind, outcome), n in sorted(outcomes.items()):
        print(f"  {kind:9s} {outcome:26s} {n:7,d}")
    bad = sum(n for (_, outcome), n in outcomes.items() if outcome == "ESCAPED")
    print(f"tracebacks or broken properties: {bad}")
    for text in escaped:
        print(text, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
