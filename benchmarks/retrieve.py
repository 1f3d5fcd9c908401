"""Retrieval latency: per-question pipeline stages on a live graph, and scoring alone.

    # per-question latency (fetch + featurise/DDE + score + write-back), gold topics, WebQSP test split
    KGDB_NEO4J_URI=$WEBQSP_URI .venv/bin/python benchmarks/retrieve.py \
        --questions $KGDB_DATA/webqsp/questions.jsonl --split test --cap 500
    # scoring alone of a synthetic 5,000-triple subgraph (no database), e.g. on a GPU
    .venv/bin/python benchmarks/retrieve.py --scoring-only --device cuda

Prints p50/p95 per stage and the scoring time/throughput of the factored model vs the naive
per-triple MLP.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

from kgdb.config import load_settings
from kgdb.models.base import TensorTables, resolve_device
from kgdb.models.features import build_tensors
from kgdb.models.retrievers.subgraphrag import SubgraphRAG, SubgraphRAGConfig

# $KGDB_DATA, wherever the benchmark is started from.
DATA = Path(os.environ.get("KGDB_DATA", "data"))


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def synthetic(tables: TensorTables, triples: int, nodes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n_ent, n_rel = tables.entity.shape[0], tables.relation.shape[0]
    entity_idx = np.sort(rng.choice(n_ent, size=min(nodes, n_ent), replace=False))
    q = rng.normal(size=tables.dim).astype(np.float32)
    return build_tensors(
        tables,
        head=rng.integers(0, len(entity_idx), triples),
        relation=rng.integers(0, n_rel, triples),
        tail=rng.integers(0, len(entity_idx), triples),
        entity_idx=entity_idx,
        topic=np.array([0]),
        is_cvt=rng.random(len(entity_idx)) < 0.3,
        question_embedding=q / np.linalg.norm(q),
    )


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_it(fn, device: str, repeat: int, cpu: list[float] | None = None) -> list[float]:
    """Wall milliseconds per call; `cpu` collects process CPU milliseconds per call, which on a
    shared machine shows what the call costs without waiting for a core."""
    for _ in range(3):
        fn()
    out = []
    for _ in range(repeat):
        sync(device)
        t, c = time.perf_counter(), time.process_time()
        fn()
        sync(device)
        out.append((time.perf_counter() - t) * 1000)
        if cpu is not None:
            cpu.append((time.process_time() - c) * 1000)
    return out


def scoring_benchmark(
    device: str, triples: int, nodes: int, repeat: int, tables: TensorTables | None, model: SubgraphRAG | None
) -> None:
    if tables is None:  # stand-in tables the size of the WebQSP graph (19,633 entities, 1,191 relations)
        g = torch.Generator().manual_seed(0)
        tables = TensorTables(
            torch.nn.functional.normalize(torch.randn(19633, 384, generator=g), dim=1).to(device),
            torch.nn.functional.normalize(torch.randn(1191, 384, generator=g), dim=1).to(device),
            "synthetic",
        )
    if model is None:
        torch.manual_seed(0)
        model = SubgraphRAG(SubgraphRAGConfig(), tables.dim).to(device).eval()
    t = time.perf_counter()
    model.prepare(tables)
    sync(device)
    prep_ms = (time.perf_counter() - t) * 1000
    x = synthetic(tables, triples, nodes)
    with torch.no_grad():
        cpu: list[float] = []
        fast = time_it(lambda: model.score(x), device, repeat, cpu)
        naive = time_it(lambda: model.forward_naive(x), device, max(3, repeat // 5))
        diff = float((model.score(x) - model.forward_naive(x)).abs().max())
    p50 = statistics.median(fast)
    print(f"scoring {triples} triples / {x.num_nodes} entities on {device} ({torch.get_num_threads()} CPU threads):")
    print(
        f"  factored+prepared (DDE + MLP): p50 {p50:.2f} ms, p95 {pct(fast, 95):.2f} ms, min {min(fast):.2f} ms, "
        f"{triples / p50 * 1000:,.0f} triples/s; CPU time p50 {statistics.median(cpu):.2f} ms"
    )
    print(f"  naive per-triple MLP:          p50 {statistics.median(naive):.2f} ms  (max |diff| {diff:.2e})")
    print(f"  one-off table projection (prepare): {prep_ms:.1f} ms for {tables.entity.shape[0]} entities")


def pipeline_benchmark(args) -> None:
    from kgdb.cypher import Graph
    from kgdb.cypher.linking import existing_entities
    from kgdb.data.questions import read_questions
    from kgdb.pipeline import RetrievePipeline

    settings = load_settings()
    graph = Graph.connect(settings)
    pipe = RetrievePipeline(
        graph,
        settings,
        args.retriever,
        args.checkpoint,
        k=args.k,
        hops=args.hops,
        cap=args.cap,
        write=not args.no_write,
        threads=args.threads,
    )
    records = read_questions(args.questions).split(args.split)[: args.limit]
    embs = pipe.embed([q.text for q in records])
    stages: dict[str, list[float]] = {s: [] for s in ("link", "fetch", "featurise", "score", "write")}
    total, sizes, runs = [], [], []
    for q, emb in zip(records, embs):
        topics = existing_entities(graph, q.topics)
        if not topics:
            continue
        res = pipe.retrieve(q.text, topics, qid=q.id, q_emb=emb)
        for s in stages:
            stages[s].append(res.timings.get(s, 0.0))
        total.append(sum(res.timings[s] for s in ("fetch", "featurise", "score", "write")))
        sizes.append(res.subgraph.num_triples)
        if res.run:
            runs.append(res.run)
    print(
        f"{len(total)} questions from {args.questions} ({args.split}), retriever {pipe.retriever}"
        f"{' (' + pipe.checkpoint.name + ')' if pipe.checkpoint else ''}, k={args.k}, hops={args.hops}, cap={args.cap}"
    )
    print(f"candidate triples per question: median {statistics.median(sizes):.0f}, max {max(sizes)}")
    for s, v in stages.items():
        print(f"  {s:10s} p50 {pct(v, 50):7.2f} ms   p95 {pct(v, 95):7.2f} ms")
    print(
        f"  {'total':10s} p50 {pct(total, 50):7.2f} ms   p95 {pct(total, 95):7.2f} ms   (fetch + featurise + score + write)"
    )
    if runs and args.prune:
        from kgdb.cypher.writeback import prune_runs

        n_runs, n_edges = prune_runs(graph, runs=runs)
        print(f"pruned the {n_runs} benchmark runs ({n_edges} SCORED edges)")
    graph.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--questions",
        type=Path,
        default=DATA / "webqsp" / "questions.jsonl",
        help="Question file (default: $KGDB_DATA, wherever this runs from).",
    )
    p.add_argument("--split", default="test")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--retriever", default="subgraphrag")
    p.add_argument("--checkpoint", default=None)
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--hops", type=int, default=2)
    p.add_argument("--cap", type=int, default=None)
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--prune", action="store_true", help="Delete the runs this benchmark wrote.")
    p.add_argument("--scoring-only", action="store_true", help="Only the synthetic scoring benchmark (no database).")
    p.add_argument("--triples", type=int, default=5000)
    p.add_argument("--nodes", type=int, default=2500)
    p.add_argument("--repeat", type=int, default=50)
    p.add_argument("--device", default=None)
    p.add_argument(
        "--benchmark-scoring",
        action="store_true",
        help="Also run the synthetic scoring benchmark after the pipeline one.",
    )
    p.add_argument("--threads", type=int, default=1, help="CPU threads for torch (default 1: latency-bound)")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = args.device or resolve_device(load_settings().device)
    if not args.scoring_only:
        if not args.questions.is_file():
            print(
                f"error: {args.questions}: question file not found (expected $KGDB_DATA beside the "
                "repository; pass --questions, or --scoring-only for the benchmark without data)",
                file=sys.stderr,
            )
            raise SystemExit(2)
        pipeline_benchmark(args)
        if not args.benchmark_scoring:
            return
    scoring_benchmark(device, args.triples, args.nodes, args.repeat, None, None)


if __name__ == "__main__":
    from kgdb.errors import KgdbError

    try:
        main()
    except KgdbError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
