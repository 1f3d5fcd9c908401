"""Subgraph extraction: latency, size and answer coverage on WebQSP; hub extraction on FB15k-237.

    # WebQSP subset (gold topic entities, default hops/cap):
    KGDB_NEO4J_URI=$WEBQSP_URI .venv/bin/python benchmarks/subgraph.py webqsp
    # FB15k-237: 2-hop extraction around the highest-degree entity, with and without the cap:
    KGDB_NEO4J_URI=$DEFAULT_URI .venv/bin/python benchmarks/subgraph.py hub

Latency is per `fetch_subgraph` call (one Cypher query + numpy conversion), measured after 20
warm-up questions; question embedding is done beforehand and not counted. Coverage: a question
counts when any gold answer name (`answer` ∪ `a_entity`) is an entity of its subgraph; the data
README gives 94.7% of the 977 questions within 2 undirected hops.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np
import typer

from kgdb.config import load_settings, mask_uri
from kgdb.cypher import Graph
from kgdb.cypher.retrieval import DEFAULT_CAP, fetch_subgraph
from kgdb.data.labels import label_subgraph
from kgdb.embeddings import get_embedder

# $KGDB_DATA, wherever the benchmark is started from.
DATA = Path(os.environ.get("KGDB_DATA", "data"))


def require_file(path: Path, what: str) -> None:
    """One line and exit 2 instead of a traceback when the data is not where it is expected."""
    if not path.is_file():
        print(
            f"error: {path}: {what} not found (expected $KGDB_DATA; pass the file's path as an option)", file=sys.stderr
        )
        raise SystemExit(2)


app = typer.Typer(add_completion=False)
logging.getLogger("neo4j").setLevel(logging.ERROR)


def _pct(values, q) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else float("nan")


@app.command()
def webqsp(
    questions: Path = typer.Option(DATA / "webqsp" / "questions.jsonl", help="questions.jsonl"),
    hops: int = 2,
    cap: int = DEFAULT_CAP,
    limit: int = typer.Option(0, help="only the first N questions (0: all)"),
    warmup: int = 20,
) -> None:
    require_file(questions, "WebQSP questions")
    settings = load_settings()
    rows = [json.loads(line) for line in questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if r["q_entity"]][: limit or None]
    embedder = get_embedder(settings.embedding_model, settings.device, settings.embedding_batch_size)
    t0 = time.perf_counter()
    vectors = embedder.encode([r["question"] for r in rows])
    embed_s = time.perf_counter() - t0
    with Graph.connect(settings) as graph:
        known = {r["id"] for r in graph.run("entities_known", ids=sorted({t for r in rows for t in r["q_entity"]}))}
        for r, v in zip(rows[:warmup], vectors):
            topics = [t for t in r["q_entity"] if t in known]
            if topics:
                fetch_subgraph(graph, topics, v, hops=hops, cap=cap)
        latency, triples, nodes, covered, labelled, reachable = [], [], [], 0, 0, 0
        for r, v in zip(rows, vectors):
            topics = [t for t in r["q_entity"] if t in known]
            if not topics:
                continue
            start = time.perf_counter()
            sg = fetch_subgraph(graph, topics, v, hops=hops, cap=cap, question=r["question"], qid=r["id"])
            latency.append(time.perf_counter() - start)
            triples.append(sg.num_triples)
            nodes.append(sg.num_nodes)
            answers = set(r["answer"]) | set(r["a_entity"])
            present = answers & set(sg.entity_ids)
            if present:
                covered += 1
                reachable += 1
                labelled += bool(label_subgraph(sg, sorted(present)).any())
    n = len(rows)
    ms = [x * 1000 for x in latency]
    print(f"questions: {n} with gold topic entities ({n - len(latency)} with no topic entity in the graph)")
    print(f"settings: hops={hops} cap={cap} uri={mask_uri(settings.neo4j_uri)}")
    print(f"question embedding (batch, not counted): {embed_s:.2f} s total")
    print(f"latency ms: p50 {_pct(ms, 50):.1f}  p95 {_pct(ms, 95):.1f}  max {max(ms):.1f}  mean {np.mean(ms):.1f}")
    print(
        f"triples per subgraph: mean {np.mean(triples):.0f}  p50 {_pct(triples, 50):.0f}  "
        f"p95 {_pct(triples, 95):.0f}  max {max(triples)}"
    )
    print(f"nodes per subgraph: mean {np.mean(nodes):.0f}  p50 {_pct(nodes, 50):.0f}  max {max(nodes)}")
    print(f"answer coverage: {covered}/{n} = {100 * covered / n:.1f}%  (data README 2-hop reachability: 94.7%)")
    print(
        f"shortest-path labels: {labelled}/{reachable} questions with an answer in the subgraph have "
        "at least one labelled triple"
    )


@app.command()
def hub(
    caps: str = typer.Option("1000000,2000,1000,500,100", help="caps to compare (comma-separated)"), hops: int = 2
) -> None:
    settings = load_settings()
    embedder = get_embedder(settings.embedding_model, settings.device, settings.embedding_batch_size)
    with Graph.connect(settings) as graph:
        top = graph.run("top_degree_entities", limit=1)[0]
        question = f"what is {top['name']} known for?"
        vector = embedder.encode_one(question)
        print(f"hub: {top['name']} ({top['id']}), degree {top['degree']}; question: {question!r}")
        for cap in [int(c) for c in caps.split(",")]:
            fetch_subgraph(graph, [top["id"]], vector, hops=hops, cap=cap)  # warm-up
            times = []
            for _ in range(3):
                start = time.perf_counter()
                sg = fetch_subgraph(graph, [top["id"]], vector, hops=hops, cap=cap)
                times.append(time.perf_counter() - start)
            print(
                f"cap {cap:>8}: {sg.num_triples:>8} triples, {sg.num_nodes:>6} nodes, "
                f"best of 3 {min(times):.3f} s, median {np.median(times):.3f} s"
            )


if __name__ == "__main__":
    from kgdb.errors import KgdbError

    try:
        app()
    except KgdbError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
