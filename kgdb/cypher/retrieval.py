"""Topic-centred subgraph extraction: `subgraph.cypher` once per hop -> a `Subgraph`.

Each level query returns parallel lists (graph-wide idx of heads and tails, relation types,
elementIds, reached nodes); numpy merges the levels, de-duplicates and sorts them without a Python
loop over rows.
"""

from __future__ import annotations

import time
import weakref

import numpy as np

from kgdb.cypher import Graph
from kgdb.errors import KgdbError, TransactionMemoryError
from kgdb.limits import DEFAULT_CAP, FETCH_CHUNK, FETCH_HUB_SCAN, FETCH_MAX_TRIPLES, MAX_HOPS
from kgdb.subgraph import Subgraph

_NODE_COLUMNS = ("id", "idx", "name", "cvt")
_EDGE_COLUMNS = ("head_idx", "rel_type", "tail_idx", "edge_ids")
_relation_index: "weakref.WeakKeyDictionary[Graph, dict[str, int]]" = weakref.WeakKeyDictionary()
_relation_vectors: "weakref.WeakKeyDictionary[Graph, tuple[list[str], np.ndarray]]" = weakref.WeakKeyDictionary()


def relation_index(graph: Graph, refresh: bool = False) -> dict[str, int]:
    """Relation type -> Relation.idx, read once per Graph object."""
    if refresh or graph not in _relation_index:
        _relation_index[graph] = {r["name"]: r["idx"] for r in graph.run("relation_index")}
    return _relation_index[graph]


def relation_similarities(graph: Graph, question_embedding: np.ndarray) -> dict[str, float]:
    """Relation type -> Neo4j's vector.similarity.cosine(Relation.embedding, question), i.e. (1 + cos) / 2,
    for every relation with a vector, from the relation vectors read once per Graph object. In
    numpy: the same figures computed by the server took 60-80 ms per question for 1,353 relations,
    and inside a hub's scan they were a Relation lookup per relationship type."""
    if graph not in _relation_vectors:
        rows = [r for r in graph.run("tables_relations") if r["embedding"] is not None]
        vectors = np.asarray([r["embedding"] for r in rows], dtype=np.float64)
        _relation_vectors[graph] = ([r["name"] for r in rows], vectors)
    names, vectors = _relation_vectors[graph]
    if not names:  # no relation has a vector yet (e.g. a load stopped before embedding relations)
        return {}
    q = np.asarray(question_embedding, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(q)
    cos = np.divide(vectors @ q, norms, out=np.zeros(len(names)), where=norms > 0)
    return dict(zip(names, ((1.0 + cos) / 2.0).tolist()))


def fetch_subgraph(
    graph: Graph,
    topic_ids: list[str],
    question_embedding: np.ndarray | None,
    hops: int = 2,
    cap: int = DEFAULT_CAP,
    question: str = "",
    qid: str | None = None,
    chunk: int = FETCH_CHUNK,
    max_triples: int = FETCH_MAX_TRIPLES,
    hub_scan: int = FETCH_HUB_SCAN,
) -> Subgraph:
    """All triples within `hops` (1..4) of the topic entities, both directions, capped per node.

    Level k expands the nodes first reached at level k-1 (BFS), so a triple is kept when it lies on
    a walk of at most `hops` steps from a topic entity. A node with more than `cap` relationships
    contributes only the `cap` triples whose relation embedding is most cosine-similar to
    `question_embedding` (ties, or no embedding: relation name, then neighbour idx). Local nodes are
    numbered in `Entity.idx` order and triples sorted by (head idx, relation type, tail idx), so the
    result is deterministic. `meta`: `seconds`, `hops`, `cap`, `levels` (triples added per level),
    `truncated`.

    Bounded per question: levels 2+ are expanded `chunk` frontier entities per transaction (so the
    server holds at most about chunk x cap triples at once), the entities reached through the
    relations most similar to the question first; once the subgraph holds `max_triples` triples the
    rest of the frontier is not expanded (`meta["truncated"]`). The budget is kept per entity, not
    per chunk: each level also returns the degrees of the nodes it reached, an entity costs
    min(degree, cap) triples, and only the frontier prefix that starts below the budget is sent
    (before, one chunk of hub neighbours could add chunk x cap triples past it: 177k instead of
    100k on the 10M-triple synthetic graph, seconds of server time). Hubs (degree above `cap`) cost
    the server a scan of all their relationships to keep `cap`, so levels 2+ expand hubs, the most
    question-like first, only while their degrees sum to at most `hub_scan`; the others are left out
    (`meta["hubs_skipped"]`, and `truncated`; `meta["budget_reached"]` says whether the triple budget
    also cut the frontier). Topic entities are always expanded. Raises KgdbError for an unknown topic
    id or bad settings, and a clear KgdbError naming the settings when a transaction still exceeds
    the server's memory limit.
    """
    if not 1 <= hops <= MAX_HOPS:
        raise KgdbError(f"--hops must be between 1 and {MAX_HOPS}, got {hops}")
    if cap < 1:
        raise KgdbError(f"--cap must be positive, got {cap}")
    if chunk < 1 or max_triples < 1:
        raise KgdbError(f"KGDB_FETCH_CHUNK and KGDB_FETCH_MAX_TRIPLES must be positive, got {chunk} and {max_triples}")
    if hub_scan < 0:
        raise KgdbError(f"KGDB_FETCH_HUB_SCAN must be 0 or more, got {hub_scan}")
    topics = list(dict.fromkeys(topic_ids))
    if not topics:
        raise KgdbError("no topic entities given")
    emb = None if question_embedding is None else np.asarray(question_embedding, dtype=np.float32)
    sims = {} if emb is None else relation_similarities(graph, emb)
    params = {"cap": cap, "relation_sims": sims}
    degree = _Degrees()
    start = time.perf_counter()

    try:
        first = graph.columns("subgraph", ids=topics, idx=[], degrees=hops > 1, **params)
        missing = sorted(set(topics) - set(first["expanded_id"]))
        if missing:
            raise KgdbError(f"topic entity {missing[0]!r} is not in the graph (use `kgdb link` to find its id)")
        nodes = {c: [first[f"expanded_{c}"], first[f"node_{c}"]] for c in _NODE_COLUMNS}
        edges = {c: [first[c]] for c in _EDGE_COLUMNS}
        levels = [len(first["edge_ids"])]
        total, truncated, hubs_skipped, budget_hit = levels[0], False, 0, False
        seen = np.union1d(np.asarray(first["expanded_idx"], np.int64), np.asarray(first["node_idx"], np.int64))
        frontier = np.setdiff1d(np.asarray(first["node_idx"], np.int64), first["expanded_idx"])
        last = first
        degree.add(first)
        for level in range(2, hops + 1):
            if frontier.size == 0 or truncated:
                break
            frontier = _most_relevant_first(frontier, last, sims if emb is not None else None)
            deg = degree.of(frontier)
            hub = deg > cap
            keep = ~hub | (np.cumsum(np.where(hub, deg, 0)) <= hub_scan)  # hubs in relevance order, within the scan
            hubs_skipped += int(np.count_nonzero(~keep))
            frontier, deg = frontier[keep], deg[keep]
            # The entities whose expansion starts below the budget (the last one may pass it by < cap).
            cost = np.minimum(deg, cap)
            fits = int(np.count_nonzero(total + np.cumsum(cost) - cost < max_triples))
            budget_hit = budget_hit or fits < frontier.size
            truncated = budget_hit or not keep.all()
            frontier = frontier[:fits]
            degree = _Degrees()
            added, reached_parts, parts = 0, [], {c: [] for c in _EDGE_COLUMNS}
            for start_at in range(0, frontier.size, chunk):
                row = graph.columns(
                    "subgraph",
                    ids=[],
                    idx=frontier[start_at : start_at + chunk].tolist(),
                    degrees=level < hops,
                    **params,
                )
                degree.add(row)
                for c in _NODE_COLUMNS:
                    nodes[c].append(row[f"node_{c}"])
                for c in _EDGE_COLUMNS:
                    edges[c].append(row[c])
                    parts[c].extend(row[c])
                added += len(row["edge_ids"])
                reached_parts.append(np.asarray(row["node_idx"], np.int64))
            levels.append(added)
            total += added
            reached = np.unique(np.concatenate(reached_parts)) if reached_parts else np.zeros(0, np.int64)
            frontier = np.setdiff1d(reached, seen)
            seen = np.union1d(seen, reached)
            last = parts
    except TransactionMemoryError as exc:
        raise FetchMemoryError(
            f"{exc}. One fetch transaction holds up to chunk x cap triples: lower --cap (now {cap}) or "
            f"KGDB_FETCH_CHUNK (now {chunk}), or raise the server's db.memory.transaction.max"
        ) from exc

    sg = _assemble(graph, first["expanded_idx"], nodes, edges)
    sg.question, sg.qid, sg.question_embedding = question, qid, emb
    sg.meta.update(
        seconds=time.perf_counter() - start,
        hops=hops,
        cap=cap,
        levels=levels,
        truncated=truncated,
        hubs_skipped=hubs_skipped,
        budget_reached=budget_hit,
    )
    return sg


class _Degrees:
    """Degrees of the nodes one level reached (`node_degree`), looked up by idx for the next level."""

    def __init__(self) -> None:
        self.idx: list[np.ndarray] = []
        self.degree: list[np.ndarray] = []

    def add(self, row: dict) -> None:
        if row.get("node_degree"):
            self.idx.append(np.asarray(row["node_idx"], np.int64))
            self.degree.append(np.asarray(row["node_degree"], np.int64))

    def of(self, idx: np.ndarray) -> np.ndarray:
        """The degree of each of `idx` (every one was reached by the level these rows came from)."""
        if not self.idx:
            raise KgdbError("internal: a fetch level did not return the degrees of the nodes it reached")
        known, first = np.unique(np.concatenate(self.idx), return_index=True)
        pos = np.searchsorted(known, idx)
        if np.any(pos >= known.size) or np.any(known[np.minimum(pos, known.size - 1)] != idx):
            raise KgdbError("internal: a frontier entity has no degree from the level that reached it")
        return np.concatenate(self.degree)[first][pos]


class FetchMemoryError(TransactionMemoryError):
    """A subgraph fetch exceeded the server's transaction memory even in chunks; names the settings."""


def _most_relevant_first(frontier: np.ndarray, last: dict, sims: dict[str, float] | None) -> np.ndarray:
    """The frontier ordered by the best question similarity of a relation that reached each entity
    (ties and no question: by idx), so a truncated fetch keeps the most question-like part."""
    if sims is None or frontier.size <= 1:
        return frontier
    types = np.asarray(last["rel_type"], dtype=object)
    if types.size == 0:
        return frontier
    edge_sim = np.asarray([sims.get(t, 0.0) for t in types.tolist()], dtype=np.float64)
    score = np.full(frontier.size, -2.0)
    for ends in (np.asarray(last["head_idx"], np.int64), np.asarray(last["tail_idx"], np.int64)):
        pos = np.searchsorted(frontier, ends)
        hit = (pos < frontier.size) & (frontier[np.minimum(pos, frontier.size - 1)] == ends)
        np.maximum.at(score, pos[hit], edge_sim[hit])
    return frontier[np.lexsort((frontier, -score))]


def _concat(parts: list[list], dtype=object) -> np.ndarray:
    return np.concatenate([np.asarray(p, dtype=dtype) for p in parts]) if parts else np.zeros(0, dtype)


def _flat(parts: list[list]) -> list:
    return [x for p in parts for x in p]


def _assemble(graph: Graph, topic_idx: list[int], nodes: dict, edges: dict) -> Subgraph:
    # Strings (elementIds, relationship types) are de-duplicated and ranked with dicts, never sorted
    # as numpy object arrays: on the distractor graph's 2-hop val subgraphs (median 4k, p95 33k
    # triples) that sorting made assembly take 13.3 ms a question on average instead of 5.9.
    node_idx = _concat(nodes["idx"], np.int64) if all(len(p) == 0 or None not in p for p in nodes["idx"]) else None
    if node_idx is None:
        raise KgdbError("entities without a dense idx: finish the load (run `kgdb load` again)")
    uniq, first = np.unique(node_idx, return_index=True)
    ids = _concat(nodes["id"])[first].tolist()
    names = _concat(nodes["name"])[first].tolist()
    cvt = _concat(nodes["cvt"], bool)[first]

    eids = _flat(edges["edge_ids"])
    types = _flat(edges["rel_type"])
    type_names = sorted(set(types))
    rel_index = relation_index(graph)
    if any(t not in rel_index for t in type_names):
        rel_index = relation_index(graph, refresh=True)
    missing = [t for t in type_names if t not in rel_index]
    if missing:
        raise KgdbError(
            f"relationship type {missing[0]!r} has no Relation node: finish the load (run `kgdb load` again)"
        )
    rank = {t: i for i, t in enumerate(type_names)}
    type_pos = np.fromiter((rank[t] for t in types), np.int64, len(types))
    head = _concat(edges["head_idx"], np.int64)
    tail = _concat(edges["tail_idx"], np.int64)
    keep = np.fromiter(
        {e: i for i, e in enumerate(eids)}.values(), np.int64
    )  # an edge between two frontier nodes comes twice
    pos = keep[np.lexsort((tail[keep], type_pos[keep], head[keep]))]
    type_idx = np.asarray([rel_index[t] for t in type_names], dtype=np.int64)
    return Subgraph(
        entity_ids=ids,
        entity_names=names,
        entity_idx=uniq,
        is_cvt=cvt,
        head=np.searchsorted(uniq, head[pos]),
        relation=type_idx[type_pos[pos]] if types else np.zeros(0, np.int64),
        tail=np.searchsorted(uniq, tail[pos]),
        relation_names=[types[i] for i in pos.tolist()],
        edge_ids=[eids[i] for i in pos.tolist()],
        topic=np.searchsorted(uniq, np.asarray(sorted(topic_idx), dtype=np.int64)),
    )
