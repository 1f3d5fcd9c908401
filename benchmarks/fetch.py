"""Bounded multi-hop fetches: subgraph size, time, truncation and the server's peak transaction
memory per question (Neo4j's own PROFILE estimate, GlobalMemory, the largest over the question's
level queries), plus answer coverage, for each cap.

    KGDB_NEO4J_URI=$METAQA_URI .venv/bin/python benchmarks/fetch.py \\
        --questions $KGDB_DATA/metaqa/3-hop/qa.txt --hops 3 --cap 100 --cap 500 --n 200

Questions are the first N of the validation split (the test split is for reported QA figures).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--hops", type=int, default=3)
    ap.add_argument("--cap", type=int, action="append", help="repeatable (default 100 and 500)")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--split", default="val")
    args = ap.parse_args()

    from kgdb.config import load_settings
    from kgdb.cypher import Graph
    from kgdb.data.questions import read_questions
    from kgdb.embeddings import get_embedder

    settings = load_settings()
    graph = Graph.connect(settings)
    embedder = get_embedder(settings.embedding_model, settings.device, settings.embedding_batch_size)
    questions = read_questions(args.questions).split(args.split)[: args.n]
    vectors = embedder.encode([q.text for q in questions])
    print(
        f"{len(questions)} {args.split} questions of {args.questions}, hops {args.hops}, chunk {settings.fetch_chunk}, "
        f"max triples {settings.fetch_max_triples}, hub scan {settings.fetch_hub_scan}; server {settings.neo4j_uri}"
    )
    print(
        f"{'cap':>5} {'errors':>6} {'trunc':>5} {'triples p50':>11} {'p95':>7} {'max':>7} {'ms p50':>7} {'ms p95':>7} "
        f"{'peak MiB p50':>12} {'p95':>6} {'max':>6} {'answer in subgraph':>18}"
    )
    for cap in args.cap or [100, 500]:
        m = measure_fetch(graph, settings, questions, vectors, hops=args.hops, cap=cap)
        sizes, ms, peaks = m["triples"], m["ms"], m["peak_mib"]
        print(
            f"{cap:>5} {m['errors']:>6} {m['truncated']:>5} {statistics.median(sizes) if sizes else 0:>11.0f} {pct(sizes, 0.95):>7.0f} "
            f"{max(sizes, default=0):>7} {statistics.median(ms) if ms else 0:>7.1f} {pct(ms, 0.95):>7.1f} "
            f"{statistics.median(peaks) if peaks else 0:>12.1f} {pct(peaks, 0.95):>6.1f} {max(peaks, default=0):>6.1f} "
            f"{m['covered'] / max(1, len(sizes)):>18.3f}"
        )
    graph.close()


def measure_fetch(graph, settings, questions, vectors, *, hops: int, cap: int) -> dict:
    """Fetch each question's subgraph (`kgdb.cypher.fetching.fetch`, the bounded multi-hop fetch)
    under PROFILE: per question its triples, ms and peak transaction memory (MiB, the largest
    GlobalMemory of its level queries); memory errors (after the cap fallback) are counted."""
    from kgdb.cypher.fetching import fetch
    from kgdb.cypher.linking import existing_entities
    from kgdb.errors import KgdbError, TransactionMemoryError

    out = {
        "triples": [],
        "ms": [],
        "peak_mib": [],
        "covered": 0,
        "errors": 0,
        "memory_errors": 0,
        "truncated": 0,
        "fell_back": 0,
    }
    for q, vec in zip(questions, vectors):
        topics = existing_entities(graph, q.topics)
        graph.memory_log = []
        start = time.perf_counter()
        try:
            sg = fetch(graph, topics, vec, hops=hops, cap=cap, question=q.text, qid=q.id, **settings.fetch_bounds)
        except KgdbError as exc:
            out["errors"] += 1
            out["memory_errors"] += isinstance(exc, TransactionMemoryError)
            print(f"  {q.id}: {exc}")
            continue
        finally:
            log, graph.memory_log = graph.memory_log, None
        out["ms"].append((time.perf_counter() - start) * 1000)
        out["triples"].append(sg.num_triples)
        out["peak_mib"].append(max((b for name, b in log if name == "subgraph"), default=0) / 2**20)
        out["truncated"] += bool(sg.meta.get("truncated"))
        out["fell_back"] += int(sg.meta.get("cap") or cap) < cap
        names = {n.lower() for n in sg.entity_names}
        out["covered"] += any(a.lower() in names for a in q.answers)
    return out


if __name__ == "__main__":
    main()
