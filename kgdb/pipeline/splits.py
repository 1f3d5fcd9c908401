"""The labelled subgraphs of a question split: fetched from Neo4j once, then read from the disk cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np

from kgdb.cypher import Graph
from kgdb.cypher import fetching
from kgdb.data.cache import CachedSplit, cache_key, file_digest, load_cache, save_cache
from kgdb.data.questions import QuestionRecord


def prepare_split(
    graph: Graph,
    *,
    cache_dir: Path,
    dataset: str,
    split: str,
    source: Path,
    questions: list[QuestionRecord],
    embed: Callable[[list[str]], np.ndarray],
    graph_fingerprint: str,
    embedding_model: str,
    hops: int,
    cap: int | None,
    on_start: Callable[[int], None] = lambda total: None,
    on_progress: Callable[[int], None] = lambda _: None,
    chunk: int | None = None,
    max_triples: int | None = None,
) -> CachedSplit:
    """Load the split's labelled subgraphs from disk, or fetch them once and store them."""
    from kgdb.limits import FETCH_CHUNK, FETCH_MAX_TRIPLES

    chunk, max_triples = chunk or FETCH_CHUNK, max_triples or FETCH_MAX_TRIPLES
    # The triple budget changes a subgraph only when it truncates one; keys made before it existed stay valid.
    budget = {} if max_triples == FETCH_MAX_TRIPLES else {"max_triples": max_triples}
    key = cache_key(
        **budget,
        graph=graph_fingerprint,
        model=embedding_model,
        hops=hops,
        cap=cap,
        source=file_digest(source),
        dataset=dataset,
        split=split,
        qids=[q.id for q in questions],
    )
    path = Path(cache_dir) / "subgraphs" / f"{dataset}-{split}-{key[:16]}.npz"
    items = load_cache(path)
    if items is not None:
        meta = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        return CachedSplit(items, path, True, meta.get("counts", {}))
    on_start(len(questions))
    embeddings = embed([q.text for q in questions])
    items, counts, errors = fetching.fetch_labelled(
        graph, questions, embeddings, hops=hops, cap=cap, on_progress=on_progress, chunk=chunk, max_triples=max_triples
    )
    counts["no_sp_triples"] = sum(1 for it in items if not it.labels.any())
    if not errors:  # a transient server failure must not be frozen into the cache
        save_cache(path, items, {"key": key, "dataset": dataset, "split": split, "hops": hops, "cap": cap, "counts": counts})
    return CachedSplit(items, path, False, counts, errors)
