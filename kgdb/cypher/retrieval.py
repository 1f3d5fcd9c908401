"""Topic-centred subgraph extraction: one Cypher query (`subgraph.cypher`) -> a `Subgraph`.

The query returns parallel lists (graph-wide idx of heads and tails, relation types, elementIds,
and the nodes sorted by idx); numpy turns them into local arrays without a Python loop over rows.
"""

from __future__ import annotations

import time

import numpy as np

from kgdb.cypher import Graph
from kgdb.errors import KgdbError
from kgdb.subgraph import Subgraph

MAX_HOPS = 4
# Most triples expanded from one node; beyond it the triples whose relation is most similar to the
# question are kept. 2,000 leaves every WebQSP topic whole and keeps FB15k-237 hubs under a second.
DEFAULT_CAP = 2000


def fetch_subgraph(
    graph: Graph,
    topic_ids: list[str],
    question_embedding: np.ndarray | None,
    hops: int = 2,
    cap: int = DEFAULT_CAP,
    question: str = "",
    qid: str | None = None,
) -> Subgraph:
    """All triples within `hops` (1..4) of the topic entities, both directions, capped per node.

    Triples are on walks of at most `hops` steps from a topic entity (the nodes first reached at
    level k are expanded at level k+1). A node with more than `cap` relationships contributes only
    the `cap` triples whose relation embedding is most cosine-similar to `question_embedding`
    (ties, or no embedding: relation name, then neighbour idx). Local nodes are numbered in
    `Entity.idx` order and triples sorted by (head idx, relation type, tail idx), so the result is
    deterministic. `meta` holds `seconds` (query + conversion), `hops`, `cap`.
    Raises KgdbError for an unknown topic id or bad hops/cap.
    """
    if not 1 <= hops <= MAX_HOPS:
        raise KgdbError(f"--hops must be between 1 and {MAX_HOPS}, got {hops}")
    if cap < 1:
        raise KgdbError(f"--cap must be positive, got {cap}")
    topics = list(dict.fromkeys(topic_ids))
    if not topics:
        raise KgdbError("no topic entities given")
    emb = None if question_embedding is None else np.asarray(question_embedding, dtype=np.float32)
    start = time.perf_counter()
    row = graph.single(
        "subgraph",
        topics=topics,
        hops=hops,
        cap=cap,
        question_embedding=None if emb is None else emb.tolist(),
    )
    missing = sorted(set(topics) - set(row["topic_id"]))
    if missing:
        raise KgdbError(f"topic entity {missing[0]!r} is not in the graph (use `kgdb link` to find its id)")
    sg = subgraph_from_columns(row)
    sg.question, sg.qid, sg.question_embedding = question, qid, emb
    sg.meta.update(seconds=time.perf_counter() - start, hops=hops, cap=cap)
    return sg


def subgraph_from_columns(row: dict) -> Subgraph:
    """Build a `Subgraph` from the parallel lists of `subgraph.cypher` (vectorised)."""
    node_idx = np.asarray(row["node_idx"], dtype=np.int64)
    if node_idx.size and np.any(np.diff(node_idx) <= 0):
        raise KgdbError("entities without a dense idx: finish the load (run `kgdb load` again)")
    type_idx = np.asarray(row["type_idx"], dtype=np.int64)
    if np.any(type_idx < 0):
        raise KgdbError("relationship types without a Relation node: finish the load (run `kgdb load` again)")
    rel_type = row["rel_type"]
    # Map each triple's type to Relation.idx through the (few) distinct types.
    order = np.argsort(np.asarray(row["type_name"], dtype=object))
    names_sorted = np.asarray(row["type_name"], dtype=object)[order]
    types = np.asarray(rel_type, dtype=object)
    relation = type_idx[order][np.searchsorted(names_sorted, types)] if types.size else np.zeros(0, np.int64)
    topic_pos = np.searchsorted(node_idx, np.asarray(row["topic_idx"], dtype=np.int64))
    return Subgraph(
        entity_ids=row["node_id"],
        entity_names=row["node_name"],
        entity_idx=node_idx,
        is_cvt=np.asarray(row["node_cvt"], dtype=bool),
        head=np.searchsorted(node_idx, np.asarray(row["head_idx"], dtype=np.int64)),
        relation=relation.astype(np.int64),
        tail=np.searchsorted(node_idx, np.asarray(row["tail_idx"], dtype=np.int64)),
        relation_names=list(rel_type),
        edge_ids=row["edge_ids"],
        topic=np.sort(topic_pos.astype(np.int64)),
    )

