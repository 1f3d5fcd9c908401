"""The few database calls the trainer, evaluator and pipeline make, in one place.

Everything here delegates to `kgdb.cypher` (named queries, no torch there); this module only
adds tolerance where a question set may name entities the graph lacks.
"""

from __future__ import annotations

import numpy as np

from kgdb.cypher import Graph
from kgdb.cypher.linking import LinkedEntity, link_entities, resolve_topics
from kgdb.cypher.retrieval import DEFAULT_CAP, fetch_subgraph
from kgdb.cypher.tables import EmbeddingTables, graph_fingerprint, load_tables
from kgdb.cypher.writeback import top_k, write_scores
from neo4j.exceptions import TransientError

from kgdb.errors import DatabaseError, KgdbError
from kgdb.subgraph import Subgraph

__all__ = [
    "DEFAULT_CAP",
    "EmbeddingTables",
    "LinkedEntity",
    "existing_entities",
    "fetch",
    "graph_fingerprint",
    "label",
    "link_entities",
    "load_tables",
    "resolve_topics",
    "top_k",
    "write_scores",
]


def existing_entities(graph: Graph, keys: list[str]) -> list[str]:
    """Entity ids of those `keys` (ids or names) that exist in the graph; the rest are dropped."""
    keys = [k for k in dict.fromkeys(keys) if k and k.strip()]
    if not keys:
        return []
    try:
        return resolve_topics(graph, keys)
    except KgdbError:
        pass  # at least one key is missing: resolve one by one to keep the others
    found = []
    for key in keys:
        try:
            found.extend(resolve_topics(graph, [key]))
        except KgdbError:
            continue
    return list(dict.fromkeys(found))


MIN_CAP = 10


def fetch(graph: Graph, topics: list[str], q_emb: np.ndarray, *, hops: int, cap: int | None, question: str, qid: str | None) -> Subgraph:
    """`fetch_subgraph`, retried with a 4x smaller cap when the server runs out of transaction
    memory (2-hop neighbourhoods of hubs such as `United States of America`); `meta["cap"]` says
    which cap produced the subgraph."""
    cap = cap or DEFAULT_CAP
    while True:
        try:
            return fetch_subgraph(graph, topics, q_emb, hops=hops, cap=cap, question=question, qid=qid)
        except (TransientError, DatabaseError):
            if cap <= MIN_CAP:
                raise
            cap = max(MIN_CAP, cap // 4)


def label(graph: Graph, sg: Subgraph, answer_ids: list[str]) -> np.ndarray:
    """Shortest-path triple labels (topic <-> answer, both directions), from the Cypher layer."""
    try:
        from kgdb.cypher.paths import label_subgraph
    except ImportError as exc:  # pragma: no cover - only while the Cypher layer is incomplete
        raise KgdbError("kgdb.cypher.paths.label_subgraph is not available yet") from exc
    return np.asarray(label_subgraph(graph, sg, answer_ids), dtype=bool)
