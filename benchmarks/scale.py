"""Loading and retrieval at scale: synthetic Freebase-shaped graphs of 1M, 10M, 50M triples.

For each size: generate the graph with benchmarks/synth.py (streamed, fixed seed; reused when the
folder already holds that size and seed), bulk-load it into the local server of KGDB_NEO4J_HOME
(`kgdb load freebase-subset … --bulk --replace --embeddings MODE`, which replaces the database),
ask one planted question with `kgdb ask`, then time retrieval on planted questions in-process.

    KGDB_NEO4J_HOME=~/kgdb-servers/scale KGDB_NEO4J_BOLT_PORT=<bolt port> KGDB_NEO4J_HTTP_PORT=<http port> \\
    KGDB_NEO4J_HEAP=2g KGDB_NEO4J_PAGECACHE=2g KGDB_NEO4J_URI=$SCALE_URI \\
    .venv/bin/python benchmarks/scale.py --sizes 1M,10M,50M --data /work/scale-data --out benchmarks/out/scale

Figures per size:
- load s: wall time of the load command (read, sort, import, restart, schema) plus the first
  `kgdb ask` on a planted question, i.e. until the graph answers (ask s is that first ask alone);
- import tr/s: distinct triples / seconds of the `neo4j-admin import` step;
- py RSS: peak resident memory of the load's Python process, sampled with psutil every 0.2 s
  (tree RSS: the same sampling summed over its process tree: the `sort`s and neo4j-admin's JVM);
- store: `du` of the server's data folder after the load;
- p50 / p95: retrieval latency (link + fetch + featurise + score; the question embedding is
  batched beforehand and not counted) over `--questions` planted questions, warm (a first pass
  over the same questions is not timed), cosine retriever, no write-back;
- R@100: answer recall@100 on those questions (gold answers among the heads and tails of the
  top 100 triples), averaged.
Results accumulate in OUT/results.json (one entry per size and embeddings mode), so sizes can be
run separately; the table and OUT/scale.png show all of them. `uptime`'s load average is printed
with each size: the machine is shared, and the timings depend on it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
# (header, result key, format); every cell is right-aligned to its header's width or more.
COLUMNS = [
    ("size", "triples", "{:>5}"),
    ("emb", "embeddings", "{:>5}"),
    ("load s", "load_s", "{:>7.0f}"),
    ("ask s", "ask_s", "{:>6.1f}"),
    ("import s", "import_s", "{:>8.0f}"),
    ("import tr/s", "import_tps", "{:>11,.0f}"),
    ("py RSS MB", "py_rss_mb", "{:>9,.0f}"),
    ("tree RSS MB", "tree_rss_mb", "{:>11,.0f}"),
    ("store MB", "store_mb", "{:>8,.0f}"),
    ("p50 ms", "p50_ms", "{:>6.1f}"),
    ("p95 ms", "p95_ms", "{:>6.1f}"),
    ("R@100", "recall_100", "{:>5.3f}"),
    ("load avg 1 min", "load_avg", "{:>14}"),
]


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmM]?)", text.strip())
    if m is None:
        raise SystemExit(f"--sizes: cannot read {text!r} (examples: 500k, 1M, 10M)")
    return int(float(m.group(1)) * {"": 1, "k": 1_000, "m": 1_000_000}[m.group(2).lower()])


def label(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1_000}k" if n % 1_000 == 0 else str(n)


def load_average() -> float:
    return os.getloadavg()[0]


def generate(n: int, seed: int, data: Path) -> tuple[Path, float]:
    """The synthetic graph of n triples (reused when stats.json says it is that size and seed)."""
    folder = data / f"synth-{label(n)}-seed{seed}"
    stats = folder / "stats.json"
    if stats.is_file():
        info = json.loads(stats.read_text())
        if info.get("seed") == seed and info.get("triples") == n:
            print(f"[{label(n)}] reusing {folder}", flush=True)
            return folder, 0.0
    t = time.perf_counter()
    print(f"[{label(n)}] generating {n:,} triples into {folder} ...", flush=True)
    subprocess.run(
        [sys.executable, str(HERE / "synth.py"), "--triples", str(n), "--seed", str(seed), "--out", str(folder)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return folder, time.perf_counter() - t


class RssSampler:
    """Peak RSS of one process and of its whole tree, sampled every `every` seconds."""

    def __init__(self, pid: int, every: float = 0.2):
        import psutil

        self.proc = psutil.Process(pid)
        self.every, self.peak, self.peak_tree = every, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            try:
                own = self.proc.memory_info().rss
                tree = own
                for child in self.proc.children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        tree += child.memory_info().rss
                self.peak, self.peak_tree = max(self.peak, own), max(self.peak_tree, tree)
            except psutil.Error:
                return
            self._stop.wait(self.every)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def kgdb_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "kgdb", *args]


def summary_value(text: str, row: str) -> float | None:
    m = re.search(rf"{re.escape(row)}\s*│\s*([\d,.]+)", text)
    return float(m.group(1).replace(",", "")) if m else None


def bulk_load(folder: Path, embeddings: str, log: Path) -> dict:
    env = {**os.environ, "COLUMNS": "200"}
    cmd = kgdb_cmd(
        "load",
        "freebase-subset",
        str(folder / "triples.tsv"),
        "--names",
        str(folder / "names.tsv"),
        "--bulk",
        "--replace",
        "--embeddings",
        embeddings,
    )
    t = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        sampler = RssSampler(proc.pid)
        rc = proc.wait()
        sampler.stop()
    wall = time.perf_counter() - t
    text = log.read_text(errors="replace")
    if rc:
        raise SystemExit(f"the load failed (exit {rc}); see {log}:\n{text[-2000:]}")
    triples = summary_value(text, "triples (distinct)")
    import_s = summary_value(text, "seconds: import")
    return {
        "load_cmd_s": wall,
        "distinct_triples": triples,
        "import_s": import_s,
        "import_tps": triples / import_s if triples and import_s else None,
        "py_rss_mb": sampler.peak / 2**20,
        "tree_rss_mb": sampler.peak_tree / 2**20,
        "phases": {m.group(1): float(m.group(2)) for m in re.finditer(r"seconds: ([\w +]+?)\s*│\s*([\d.]+)", text)},
    }


def first_ask(question: dict, log: Path) -> dict:
    t = time.perf_counter()
    out = subprocess.run(
        kgdb_cmd("ask", question["question"]), capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}
    )
    secs = time.perf_counter() - t
    log.write_text(out.stdout + out.stderr)
    answered = out.returncode == 0 and any(a in out.stdout for a in question["answer"])
    return {"ask_s": secs, "ask_rc": out.returncode, "ask_found_answer": answered}


def store_mb(home: Path) -> float:
    out = subprocess.run(["du", "-sb", str(home / "data")], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) / 2**20


STAGES = ("link", "fetch", "featurise", "score")


def retrieval(
    questions: list[dict],
    k: int,
    hops: int | None,
    retriever: str = "cosine",
    checkpoint: str | None = None,
    cap: int | None = None,
) -> dict:
    """Warm latency (total and per stage), subgraph sizes and answer recall@k on planted questions.

    Stages are the pipeline's own timings: link (candidate query + vectors filled for candidates),
    fetch (the subgraph levels from Neo4j), featurise (entity rows: cached, read from Neo4j, or
    encoded and written back when a lazy load left them out) and score. Recall is also given per
    planted hop count, with the share of questions whose topic was linked and whose answers were
    in the fetched subgraph at all, so a low recall says whether linking, the fetch or the ranking
    lost the answer."""
    from rich.progress import track

    from kgdb.config import load_settings
    from kgdb.cypher import Graph
    from kgdb.limits import DEFAULT_CAP
    from kgdb.models.metrics import answer_recall_at
    from kgdb.pipeline import RetrievePipeline

    settings = load_settings()
    with Graph.connect(settings) as graph:
        pipe = RetrievePipeline(graph, settings, retriever, checkpoint, k=k, hops=hops, cap=cap, write=False)
        embs = pipe.embed([q["question"] for q in questions])
        t = time.perf_counter()
        for q, emb in track(
            list(zip(questions, embs)), description="warm-up (untimed)"
        ):  # caches, page cache, lazy vectors filled
            pipe.retrieve(q["question"], None, q_emb=emb)
        warm_s, filled = time.perf_counter() - t, pipe.vectors.filled
        per = []
        for q, emb in track(list(zip(questions, embs)), description="timed pass"):
            res = pipe.retrieve(q["question"], None, q_emb=emb)
            sg = res.subgraph
            row = {
                "id": q["id"],
                "hop": q["hop"],
                **{s: res.timings.get(s, 0.0) for s in STAGES},
                "linked": set(q["q_entity"]) <= set(res.topics),
                "triples": sg.num_triples if sg is not None else 0,
                "truncated": bool(sg is not None and sg.meta.get("truncated")),
                "in_subgraph": False,
                "recall": 0.0,
            }
            row["total"] = sum(row[s] for s in STAGES)
            if sg is not None and sg.num_triples:
                local = {e: i for i, e in enumerate(sg.entity_ids)}
                answers = np.array([local[a] for a in q["a_entity"] if a in local], dtype=np.int64)
                order = np.array([t.index for t in res.triples], dtype=np.int64)
                row["in_subgraph"] = bool(answers.size)
                row["recall"] = (
                    answer_recall_at(order, np.asarray(sg.head), np.asarray(sg.tail), answers, len(q["a_entity"]), k)
                    or 0.0
                )
            per.append(row)

    def pct(key: str, rows: list[dict] = per) -> list[float]:
        return [float(np.percentile([r[key] for r in rows], p)) for p in (50, 95)]

    by_hop = {}
    for hop in sorted({r["hop"] for r in per}):
        rows = [r for r in per if r["hop"] == hop]
        by_hop[str(hop)] = {
            "questions": len(rows),
            f"recall_{k}": float(np.mean([r["recall"] for r in rows])),
            "linked": float(np.mean([r["linked"] for r in rows])),
            "answer_in_subgraph": float(np.mean([r["in_subgraph"] for r in rows])),
            "p50_ms": pct("total", rows)[0],
            "p95_ms": pct("total", rows)[1],
        }
    return {
        "p50_ms": pct("total")[0],
        "p95_ms": pct("total")[1],
        f"recall_{k}": float(np.mean([r["recall"] for r in per])),
        "topics_linked": float(np.mean([r["linked"] for r in per])),
        "answer_in_subgraph": float(np.mean([r["in_subgraph"] for r in per])),
        "questions": len(questions),
        "stages_ms": {s: pct(s) for s in STAGES},
        "triples_p50_p95": pct("triples"),
        "truncated": float(np.mean([r["truncated"] for r in per])),
        "by_hop": by_hop,
        "retriever": pipe.name,
        "hops": pipe.hops,
        "cap": pipe.cap or DEFAULT_CAP,
        "fetch_max_triples": settings.fetch_max_triples,
        "fetch_hub_scan": settings.fetch_hub_scan,
        "warmup_s": warm_s,
        "vectors_filled": filled,
        "per_question": per,
    }


def keep_per_question(row: dict, path: Path) -> None:
    """Per-question timings go to a file of their own (results.json keeps the summary)."""
    path.write_text(json.dumps(row.pop("per_question"), indent=0))


def report(size: str, row: dict, k: int) -> str:
    """The retrieval lines printed per size: totals, stages, sizes, recall per planted hop count."""
    stages = ", ".join(f"{s} {a:.1f}/{b:.1f}" for s, (a, b) in row["stages_ms"].items())
    # rows measured before stop 22 did not record the hub bound (a count of 8 hubs then)
    hubs = f"hub scan {row['fetch_hub_scan']:,}" if "fetch_hub_scan" in row else "hub bound not recorded"
    lines = [
        f"[{size}] retrieval ({row['retriever']}, {row['hops']} hops, cap {row['cap']}, "
        f"max triples {row['fetch_max_triples']:,}, {hubs}, {row['questions']} questions): p50 {row['p50_ms']:.1f} ms, "
        f"p95 {row['p95_ms']:.1f} ms, answer recall@{k} {row[f'recall_{k}']:.3f}, topics linked "
        f"{row['topics_linked']:.1%}, answer in subgraph {row['answer_in_subgraph']:.1%}",
        f"[{size}]   stages p50/p95 ms: {stages}; subgraph triples p50/p95 "
        f"{row['triples_p50_p95'][0]:,.0f}/{row['triples_p50_p95'][1]:,.0f}, truncated {row['truncated']:.1%}; "
        f"warm-up pass {row['warmup_s']:.0f} s ({row['vectors_filled']:,} entity vectors filled)",
    ]
    for hop, h in row["by_hop"].items():
        lines.append(
            f"[{size}]   {hop}-hop ({h['questions']}): recall@{k} {h[f'recall_{k}']:.3f}, linked {h['linked']:.1%}, "
            f"answer in subgraph {h['answer_in_subgraph']:.1%}, p50/p95 {h['p50_ms']:.1f}/{h['p95_ms']:.1f} ms"
        )
    return "\n".join(lines)


def table(results: list[dict]) -> str:
    lines = [" ".join(name for name, _, _ in COLUMNS)]
    for r in results:
        cells = []
        for name, key, fmt in COLUMNS:
            value = label(r[key]) if key == "triples" else r.get(key)
            cells.append(fmt.format(value).rjust(len(name)) if value is not None else "-".rjust(len(name)))
        lines.append(" ".join(cells))
    return "\n".join(lines)


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    for mode in sorted({r["embeddings"] for r in results}):
        rows = sorted((r for r in results if r["embeddings"] == mode), key=lambda r: r["triples"])
        x = [r["triples"] for r in rows]
        left.plot(x, [r["load_s"] / 60 for r in rows], "o-", label=f"load until ask answers ({mode})")
        left.plot(x, [r["import_s"] / 60 for r in rows], "s--", label=f"neo4j-admin import ({mode})")
        timed = [r for r in rows if r.get("p50_ms") is not None]  # sizes whose retrieval was measured
        if timed:
            tx = [r["triples"] for r in timed]
            right.plot(tx, [r["p50_ms"] for r in timed], "o-", label=f"p50 ({mode})")
            right.plot(tx, [r["p95_ms"] for r in timed], "s--", label=f"p95 ({mode})")
    left.set(xscale="log", xlabel="triples", ylabel="minutes", title="Bulk load (2 shared cores)")
    right.set(xscale="log", yscale="log", xlabel="triples", ylabel="ms", title="Retrieval latency, cosine, warm")
    if not right.lines:
        right.text(0.5, 0.5, "not measured", ha="center", va="center", transform=right.transAxes)
    for ax in (left, right):
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1M,10M,50M", help="comma-separated triple counts (500k, 1M, 10M, ...)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--data", type=Path, required=True, help="folder for the generated graphs (large: ~65 bytes per triple)"
    )
    ap.add_argument("--out", type=Path, default=HERE / "out" / "scale", help="results.json, scale.png and the logs")
    ap.add_argument(
        "--embeddings", choices=["eager", "lazy", "auto"], default="lazy", help="entity embeddings of the load"
    )
    ap.add_argument(
        "--questions", type=int, default=200, help="planted questions timed per size (1, 2, 3 hops in turn)"
    )
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--hops", type=int, default=None, help="fetch depth (default: the pipeline's)")
    ap.add_argument(
        "--cap",
        type=int,
        default=None,
        help="per-node expansion cap (default: the checkpoint's, else the fetch default)",
    )
    ap.add_argument(
        "--retriever", default="cosine", help="retriever timed (untrained: cosine; or one with a shipped checkpoint)"
    )
    ap.add_argument(
        "--checkpoint",
        default=None,
        help="checkpoint name or folder of a trained --retriever (e.g. the shipped cosine-dde)",
    )
    ap.add_argument("--offset", type=int, default=0, help="skip this many planted questions first")
    ap.add_argument(
        "--no-retrieval", action="store_true", help="loads only (retrieval needs entity vectors, or lazy filling)"
    )
    ap.add_argument(
        "--retrieval-only",
        action="store_true",
        help="time retrieval on the graph the server holds now (loaded by an earlier run of this size)",
    )
    args = ap.parse_args()

    from kgdb.config import load_settings

    home = load_settings().neo4j_home
    if not os.environ.get("KGDB_NEO4J_HOME"):
        raise SystemExit("set KGDB_NEO4J_HOME (and the ports) to a server of its own: every size replaces its database")
    args.out.mkdir(parents=True, exist_ok=True)
    store = args.out / "results.json"
    results: list[dict] = json.loads(store.read_text()) if store.is_file() else []
    for n in (parse_size(s) for s in args.sizes.split(",")):
        if args.retrieval_only:
            folder = args.data / f"synth-{label(n)}-seed{args.seed}"
            questions = [json.loads(line) for line in (folder / "questions.jsonl").open(encoding="utf-8")][
                args.offset : args.offset + args.questions
            ]
            row = next((r for r in results if (r["triples"], r["embeddings"]) == (n, args.embeddings)), None)
            if row is None:
                raise SystemExit(
                    f"--retrieval-only: {store} holds no {label(n)} --embeddings {args.embeddings} load; pass the "
                    "--out of the run that loaded this graph, or load it first (without --retrieval-only)"
                )
            before = load_average()
            row.update(retrieval(questions, args.k, args.hops, args.retriever, args.checkpoint, args.cap))
            keep_per_question(row, args.out / f"retrieval-{label(n)}-{args.embeddings}.json")
            row["load_avg"] = (
                f"{str(row.get('load_avg', '')).split('; retrieval')[0]}; retrieval {before:.1f} -> {load_average():.1f}"
            )
            print(report(label(n), row, args.k) + f"\n[{label(n)}]   load average {row['load_avg']}", flush=True)
            store.write_text(json.dumps(results, indent=1))
            continue
        folder, gen_s = generate(n, args.seed, args.data)
        before = load_average()
        print(f"[{label(n)}] bulk load (--embeddings {args.embeddings}), load average {before:.1f} ...", flush=True)
        load = bulk_load(folder, args.embeddings, args.out / f"load-{label(n)}-{args.embeddings}.log")
        questions = [json.loads(line) for line in (folder / "questions.jsonl").open(encoding="utf-8")][: args.questions]
        ask = first_ask(questions[0], args.out / f"ask-{label(n)}-{args.embeddings}.log")
        row = {
            "triples": n,
            "seed": args.seed,
            "embeddings": args.embeddings,
            "generate_s": gen_s,
            **load,
            **ask,
            "load_s": load["load_cmd_s"] + ask["ask_s"],
            "store_mb": store_mb(home),
        }
        print(
            f"[{label(n)}] loaded in {row['load_s']:.0f} s (import {load['import_s']} s), peak Python RSS "
            f"{load['py_rss_mb']:,.0f} MB; first ask {ask['ask_s']:.1f} s (answer found: {ask['ask_found_answer']})",
            flush=True,
        )
        row["load_avg"] = f"{before:.1f} -> {load_average():.1f}"  # at the start -> at the end
        results = [r for r in results if (r["triples"], r["embeddings"]) != (n, args.embeddings)] + [row]
        results.sort(key=lambda r: (r["embeddings"], r["triples"]))
        store.write_text(json.dumps(results, indent=1))  # the load's figures are kept even if retrieval is cut short
        if not args.no_retrieval:
            before = load_average()
            row.update(retrieval(questions, args.k, args.hops, args.retriever, args.checkpoint, args.cap))
            keep_per_question(row, args.out / f"retrieval-{label(n)}-{args.embeddings}.json")
            row["load_avg"] += f"; retrieval {before:.1f} -> {load_average():.1f}"
            print(report(label(n), row, args.k), flush=True)
            store.write_text(json.dumps(results, indent=1))
    print(table(results))
    try:
        plot(results, args.out / "scale.png")
        print(f"plot: {args.out / 'scale.png'}")
    except ImportError:  # matplotlib is the optional `bench` extra
        print("no plot: pip install -e '.[bench]' (matplotlib)")


if __name__ == "__main__":
    main()
