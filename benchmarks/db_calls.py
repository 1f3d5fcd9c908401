"""The database reads an RRP answer makes, replayed: for comparing two checkouts' Cypher on the same calls.

    KGDB_NEO4J_URI=$SCALE_URI .venv/bin/python benchmarks/db_calls.py \\
        --questions <synth-50M>/questions.jsonl --n 40 --calls /tmp/calls.pkl [--rounds 3]

The first run answers the first N questions of the file (their own topics, `kgdb ask --reasoner rrp`
as `benchmarks/ask.py --topics gold` does) and records the arguments of every call to the two
functions that read the graph most on a dense one: `relation_steps` (the path ranker's enumeration, one
hop of many prefixes) and `ground_relation_paths` (grounding a beam of relation paths). They are saved to
`--calls`; a run that finds the file replays those calls instead, so another checkout (this script run
with that checkout's kgdb: `cd OTHER && PYTHONPATH=OTHER python /path/to/benchmarks/db_calls.py …
--calls /tmp/calls.pkl`) reads exactly the same ones. Each function's calls are replayed `--rounds` times after one warm-up pass; printed per
function: calls, ms per call (mean of the rounds, and each round), and the SHA-256 of everything the
calls returned. Equal digests mean equal results, call by call and in order; run the checkouts
alternately and compare the ms only within one sitting.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import time
from pathlib import Path

FUNCTIONS = (("kgdb.cypher.path_candidates", "relation_steps"), ("kgdb.cypher.paths", "ground_relation_paths"))


def record(args, graph, settings) -> dict[str, list]:
    """Answer the questions and keep each function's (args, kwargs) without the graph."""
    import importlib

    from rich.progress import track

    from kgdb.data.questions import read_questions
    from kgdb.qa.ask import AskPipeline

    calls: dict[str, list] = {name: [] for _, name in FUNCTIONS}
    originals = []
    for module_name, name in FUNCTIONS:
        module = importlib.import_module(module_name)
        original = getattr(module, name)
        originals.append((module, name, original))

        def recorder(graph_, *a, _name=name, _original=original, **kw):
            calls[_name].append((a, kw))
            return _original(graph_, *a, **kw)

        setattr(module, name, recorder)
    try:  # the callers look both up in their module when they call them
        pipe = AskPipeline(graph, settings, retriever="relation-paths", k=100, reasoner="rrp", hops=2, write=False)
        for q in track(read_questions(args.questions).split("all")[: args.n], description="recording"):
            pipe.ask(q.text, q.topics or None, qid="db-calls")
    finally:
        for module, name, original in originals:
            setattr(module, name, original)
    return calls


def replay(graph, calls: dict[str, list], rounds: int) -> None:
    import importlib

    for module_name, name in FUNCTIONS:
        function = getattr(importlib.import_module(module_name), name)
        todo = calls.get(name, [])
        if not todo:
            print(f"{name:<24} no calls recorded")
            continue
        for a, kw in todo:  # warm-up: plans cached, the store's pages read
            function(graph, *a, **kw)
        times, digest = [], hashlib.sha256()
        for r in range(rounds):
            t = time.perf_counter()
            results = [function(graph, *a, **kw) for a, kw in todo]
            times.append(1000 * (time.perf_counter() - t) / len(todo))
            if r == 0:
                for result in results:
                    digest.update(json.dumps(result, sort_keys=True, default=list).encode())
        print(
            f"{name:<24} {len(todo):>5} calls  {sum(times) / len(times):7.2f} ms per call (rounds: "
            + ", ".join(f"{t:.2f}" for t in times)
            + f")  results sha256 {digest.hexdigest()[:16]}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--n", type=int, default=40, help="first N questions of the file, their own topics")
    ap.add_argument(
        "--calls", type=Path, required=True, help="where the recorded calls are kept (replayed when it exists)"
    )
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    from kgdb.config import load_settings
    from kgdb.cypher import Graph
    from kgdb.errors import KgdbError

    try:
        settings = load_settings()
        graph = Graph.connect(settings)
        if args.calls.is_file():
            calls = pickle.loads(args.calls.read_bytes())
            print(f"replaying the calls in {args.calls}")
        else:
            calls = record(args, graph, settings)
            args.calls.write_bytes(pickle.dumps(calls))
            print(
                f"recorded {', '.join(f'{len(v)} {k}' for k, v in calls.items())} calls of {args.n} questions into {args.calls}"
            )
        replay(graph, calls, args.rounds)
    except KgdbError as exc:  # a missing file, a server that does not answer: one line, no traceback
        raise SystemExit(f"benchmarks/db_calls.py: {exc}") from None


if __name__ == "__main__":
    main()
