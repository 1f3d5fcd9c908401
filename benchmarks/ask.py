"""`kgdb ask` latency without an LLM (extractive reasoner): p50/p90 per question and a per-stage breakdown.

    KGDB_NEO4J_URI=$WEBQSP_URI .venv/bin/python benchmarks/ask.py \
        --questions $KGDB_DATA/webqsp/questions.jsonl --n 100

Questions are asked as a user would: the topic entity is linked from the text (no gold topics).

    .venv/bin/python benchmarks/ask.py --cold 5 [--question "What is the capital of France?"]

times whole `kgdb ask` processes from a cold start (imports, model load, connection, one
question), and the CLI commands that must start fast (`--help`, `status`, `neo4j status`,
`runs list`), each as the median of N runs, all in this one run. With `--before DIR` (another
checkout of kgdb, e.g. `git worktree add /tmp/before 4f24784`) each command is also timed with
that checkout first on PYTHONPATH, before and after alternating, and the table shows both and
their ratio; the load average is printed next to the timings (the machine may be shared). Each
command runs once untimed first, so every process starts from compiled bytecode, as an installed kgdb.
Warm-up questions (model load, first queries) are not counted. It also prints the answer Hit@1 of
the timed questions (eval qa's matching; a question that fails is a miss), so `--topics linked` against
`--topics gold` on a `--split` shows what linking from the text costs a user. With --write the scores are written
back and evidence chains built, as plain `kgdb ask` does; the runs created are pruned at the end.
With --reasoner rrp the sum of the RRP stages (plan, ground, structural, rethink: linking excluded)
is printed too; --profile adds, per question, the calls and milliseconds of every database query
(by its name) and of every sentence encoding, so a stage's time splits into round trips, encoding
and the rest (torch, Python).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=Path)
    ap.add_argument(
        "--cold", type=int, default=0, help="time N cold `kgdb ask` processes and the fast CLI commands instead"
    )
    ap.add_argument("--question", default="What is the capital of France?", help="the question the cold runs ask")
    ap.add_argument(
        "--default-ask",
        action="store_true",
        help="with --cold: also time `kgdb ask` with the default retriever, and plain `kgdb ask` (RRP without an LLM)",
    )
    ap.add_argument(
        "--before",
        type=Path,
        help="with --cold: also time this kgdb checkout (its root folder), for a before/after table",
    )
    ap.add_argument("--n", type=int, default=100, help="questions timed (first N of the file, or of --split)")
    ap.add_argument("--split", default="all", help="train | val | test | all: the questions asked (the fixed splits)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--retriever", default=None, help="default: relation-paths with --reasoner rrp, else subgraphrag")
    ap.add_argument(
        "--reasoner",
        default="extractive",
        choices=("extractive", "rrp"),
        help="no-LLM reasoner (rrp: planner + grounding + structural reasoner + rethinking)",
    )
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--hops", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="write back + build chains (pruned afterwards)")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="also time, per question, every database round trip (by query name) and every sentence encoding",
    )
    ap.add_argument(
        "--topics",
        choices=("linked", "gold"),
        default="linked",
        help="linked: link topics from the text as a user's question is (default); gold: the file's topics",
    )
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (the shared machine: 1)")
    args = ap.parse_args()
    if args.cold:
        cold(args)
        return
    if args.questions is None:
        ap.error("--questions is required (or use --cold N)")
    # Imported here: --cold must not import kgdb itself (it may time another checkout of it).
    import torch

    from kgdb.config import load_settings
    from kgdb.cypher import Graph
    from kgdb.data.questions import read_questions
    from kgdb.errors import KgdbError
    from kgdb.qa.ask import ASK_STAGES, AskPipeline
    from kgdb.qa.metrics import score_question

    torch.set_num_threads(args.threads)
    settings = load_settings()
    args.retriever = args.retriever or ("relation-paths" if args.reasoner == "rrp" else "subgraphrag")
    questions = read_questions(args.questions).split(args.split)[: args.warmup + args.n]
    graph = Graph.connect(settings)
    t0 = time.perf_counter()
    pipe = AskPipeline(
        graph, settings, retriever=args.retriever, k=args.k, reasoner=args.reasoner, hops=args.hops, write=args.write
    )
    setup = time.perf_counter() - t0
    totals: list[float] = []
    stages: dict[str, list[float]] = {s: [] for s in ASK_STAGES}
    for s in ("plan", "ground", "structural", "rethink"):  # the relation-path retriever's stages
        stages.setdefault(s, [])
    runs, failed, hits = [], 0, []
    calls: list[tuple[str, float]] = []  # (database query name or "encode", ms) of the current question
    per_question: list[list[tuple[str, float]]] = []
    if args.profile:
        _record(graph, "run_text", calls, lambda a, kw: kw.get("_name", "inline"))
        embedder = getattr(pipe.retrieval, "embedder", None)
        if embedder is not None:
            _record(embedder, "encode", calls, lambda a, kw: "encode")
    load_start = os.getloadavg()
    for i, q in enumerate(questions):
        calls.clear()
        start = time.perf_counter()
        try:
            res = pipe.ask(q.text, q.topics if args.topics == "gold" else None, qid=f"bench-{q.id}")
        except KgdbError:
            failed += 1
            if i >= args.warmup and q.answers:
                hits.append(False)  # the user got no answer
            continue
        wall = (time.perf_counter() - start) * 1000
        if res.run:
            runs.append(res.run)
        if i < args.warmup:
            continue
        totals.append(wall)
        per_question.append(list(calls))
        if q.answers:  # what the user got: the first answer against the gold ones (eval qa's matching)
            hits.append(score_question([a.answer for a in res.answers], q.answers, q.text).hit1)
        for s in stages:
            stages[s].append(res.timings.get(s, 0.0))
    if runs:
        from kgdb.cypher.writeback import prune_runs

        prune_runs(graph, runs)
    graph.close()

    print(
        f"graph {settings.neo4j_uri}; retriever {getattr(pipe.retrieval, 'retriever', pipe.retrieval.name)}"
        f"{' (fallback: no checkpoint)' if pipe.retriever_note else ''}; reasoner {args.reasoner} (no LLM); "
        f"k {args.k}; hops {args.hops}; write-back {'on' if args.write else 'off'}; setup {setup:.1f} s"
    )
    print(f"timed {len(totals)} questions (after {args.warmup} warm-up), {failed} failed (no linkable entity etc.)")
    if hits:
        print(
            f"answer Hit@1 of the timed questions with an answer, topics {args.topics}: {100 * sum(hits) / len(hits):.2f} "
            f"({sum(hits)} of {len(hits)}; a failed question is a miss)"
        )
    print(
        f"per question wall ms: p50 {statistics.median(totals):.1f}  p90 {pct(totals, 0.9):.1f}  p95 {pct(totals, 0.95):.1f}  "
        f"mean {statistics.fmean(totals):.1f}  max {max(totals):.1f}"
    )
    print(
        f"load average (1/5/15 min) at start {' '.join(f'{x:.2f}' for x in load_start)}, "
        f"at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs"
    )
    rrp = [sum(stages[s][i] for s in ("plan", "ground", "structural", "rethink")) for i in range(len(totals))]
    if any(rrp):  # the latency: planner + grounding + reasoning + rethinking (no linking)
        print(
            f"RRP stages (plan + ground + structural + rethink) per question ms: p50 {statistics.median(rrp):.1f}  "
            f"p95 {pct(rrp, 0.95):.1f}  mean {statistics.fmean(rrp):.1f}"
        )
    print(f"{'stage':<10} {'p50 ms':>9} {'mean ms':>9}")
    for s, v in stages.items():
        if not v:
            continue
        print(f"{s:<10} {statistics.median(v):9.1f} {statistics.fmean(v):9.1f}")
    if args.profile and per_question:
        n = len(per_question)
        names = sorted({name for qc in per_question for name, _ in qc})
        print(
            f"\nper question, over {n} questions: calls and ms of each database query (by name) and of sentence encoding"
        )
        print(f"{'call':<28} {'calls':>7} {'p50 ms':>9} {'mean ms':>9}")
        for name in names:
            ms = [sum(t for nm, t in qc if nm == name) for qc in per_question]
            count = sum(1 for qc in per_question for nm, _ in qc if nm == name) / n
            print(f"{name:<28} {count:7.2f} {statistics.median(ms):9.1f} {statistics.fmean(ms):9.1f}")
        trips = [sum(1 for nm, _ in qc if nm != "encode") for qc in per_question]
        print(f"{'database round trips':<28} {statistics.fmean(trips):7.2f}")


def _record(obj, method: str, calls: list, name_of) -> None:
    """Wrap `obj.method` (this instance only) so each call appends (name, ms) to `calls`."""
    inner = getattr(obj, method)

    def timed(*a, **kw):
        t = time.perf_counter()
        try:
            return inner(*a, **kw)
        finally:
            calls.append((name_of(a, kw), (time.perf_counter() - t) * 1000))

    setattr(obj, method, timed)


def cold(args: argparse.Namespace) -> None:
    """Median wall seconds of whole processes, each started from nothing."""
    import subprocess
    import sys
    import tempfile

    kgdb = [sys.executable, "-m", "kgdb"]  # the kgdb on PYTHONPATH, else the installed one
    commands = {
        "kgdb --help": kgdb + ["--help"],
        "kgdb status": kgdb + ["status"],
        "kgdb neo4j status": kgdb + ["neo4j", "status"],
        "kgdb runs list": kgdb + ["runs", "list", "--limit", "5"],
    }
    # Without --retriever the cold runs time the cosine retriever: it needs no checkpoint on any graph.
    retriever = args.retriever or "cosine"
    commands[f"kgdb ask ({retriever}, no LLM)"] = kgdb + [
        "ask",
        args.question,
        "--retriever",
        retriever,
        "--reasoner",
        "extractive",
        "--no-write",
    ]
    if args.default_ask:
        # the default retriever with the extractive reasoner (SubgraphRAG, or the shipped cosine-dde without a checkpoint),
        # and plain `kgdb ask` without an LLM (RRP: the graph's own model, else the shipped portable ranker)
        commands["kgdb ask (default retriever, no LLM)"] = kgdb + [
            "ask",
            args.question,
            "--reasoner",
            "extractive",
            "--no-write",
        ]
        commands["kgdb ask (plain, no LLM: RRP)"] = kgdb + ["ask", args.question, "--no-write"]
    # An installed kgdb starts from compiled bytecode: each process may write its .pyc (whatever
    # PYTHONDONTWRITEBYTECODE says here), and a first untimed run of each command writes them.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    trees = {"after": env}
    if args.before:
        before = args.before.resolve()
        if not (before / "kgdb" / "__init__.py").is_file():
            sys.exit(f"--before {before}: no kgdb/ package in that folder")
        trees = {"before": {**env, "PYTHONPATH": str(before)}, **trees}

    # `python -m` puts the working folder first on sys.path: run from an empty one, so each process
    # imports the kgdb its PYTHONPATH names (else the installed one), never a checkout in the cwd.
    neutral = tempfile.mkdtemp(prefix="kgdb-bench-")

    def timed(cmd: list[str], env: dict[str, str]) -> float:
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, check=False, env=env, cwd=neutral)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(
                f"{' '.join(cmd[2:])} failed ({done.returncode}): {done.stderr.decode(errors='replace').strip()[-500:]}"
            )
        return wall

    load_start = os.getloadavg()
    cols = "".join(f" {t + ' s':>10}" for t in trees) + ("  after/before" if args.before else "")
    print(f"{'command':<40}{cols}  (median of {args.cold} cold processes each)")
    for name, cmd in commands.items():
        walls: dict[str, list[float]] = {t: [] for t in trees}
        for tree_env in trees.values():
            timed(cmd, tree_env)
        for _ in range(args.cold):
            for tree, env in trees.items():  # alternating, so both see the same load
                walls[tree].append(timed(cmd, env))
        med = {t: statistics.median(w) for t, w in walls.items()}
        line = f"{name:<40}" + "".join(f" {med[t]:10.2f}" for t in trees)
        if args.before:
            line += f"  {med['after'] / med['before']:13.2f}"
        print(line, flush=True)
    load_end = os.getloadavg()
    print(
        f"load average (1/5/15 min) at start {' '.join(f'{x:.2f}' for x in load_start)}, "
        f"at end {' '.join(f'{x:.2f}' for x in load_end)}; {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
