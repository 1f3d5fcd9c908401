"""Topic-centred subgraph extraction: `subgraph.cypher` once per hop -> a `Subgraph`.

Each level query returns parallel lists (graph-wide idx of heads and tails, relation types,
elementIds, reached nodes); numpy merges the levels, de-duplicates and sorts them without a Python
loop over rows.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any, Iterable, cast

import numpy as np

from kgdb.cypher import Graph
from kgdb.errors import DatabaseError, KgdbError, TransactionMemoryError
from kgdb.limits import DEFAULT_CAP, FETCH_CHUNK, FETCH_HUB_SCAN, FETCH_MAX_TRIPLES, MAX_HOPS
from kgdb.subgraph import Subgraph

_NODE_COLUMNS = ("id", "idx", "name", "cvt")
_EDGE_COLUMNS = ("head_idx", "rel_type", "tail_idx", "edge_ids")


class _RelationRows:
    """What one connection has read of the Relation table: the idx and the embedding (float64, None
    when not embedded yet) of each type a fetch needed. A first question reads only its own types'
    rows, not the whole table (1.2k vectors of 384 floats on WebQSP: over a second of a cold ask)."""

    def __init__(self) -> None:
        self.idx: dict[str, int] = {}
        self.vectors: dict[str, np.ndarray | None] = {}
        self.lock = threading.Lock()  # threads share a connection (`eval qa --concurrency`)


_relation_rows: "weakref.WeakKeyDictionary[Graph, _RelationRows]" = weakref.WeakKeyDictionary()
_rows_lock = threading.Lock()


def _rows(graph: Graph) -> _RelationRows:
    with _rows_lock:
        rows = _relation_rows.get(graph)
        if rows is None:
            rows = _relation_rows[graph] = _RelationRows()
        return rows


def relation_index(graph: Graph, names: Iterable[str]) -> dict[str, int]:
    """Relation type -> Relation.idx for those of `names` that have a Relation node, each read once
    per Graph object (a type not found is asked again next time: a load may add it)."""
    rows = _rows(graph)
    wanted = list(dict.fromkeys(names))
    with rows.lock:
        if missing := [n for n in wanted if n not in rows.idx]:
            rows.idx.update((r["name"], r["idx"]) for r in graph.run("relation_index", _raw=True, names=missing))
        return {n: rows.idx[n] for n in wanted if n in rows.idx}


def relation_similarities(graph: Graph, question_embedding: np.ndarray, names: Iterable[str]) -> dict[str, float]:
    """Relation type -> Neo4j's vector.similarity.cosine(Relation.embedding, question), i.e. (1 + cos) / 2,
    for those of `names` that have a vector, from vectors read once per Graph object. In numpy: the
    same figures computed by the server took 60-80 ms per question for 1,353 relations, and inside a
    hub's scan they were a Relation lookup per relationship type."""
    rows = _rows(graph)
    wanted = list(dict.fromkeys(names))
    with rows.lock:
        if missing := [n for n in wanted if n not in rows.vectors]:
            found = {r["name"]: r["embedding"] for r in graph.run("relation_vectors", _raw=True, names=missing)}
            for n in missing:
                v = found.get(n)
                rows.vectors[n] = None if v is None else np.asarray(v, dtype=np.float64)
        known = [n for n in wanted if rows.vectors[n] is not None]
        if not known:  # no vector yet (e.g. a load stopped before embedding relations)
            return {}
        vectors = np.stack([cast(np.ndarray, rows.vectors[n]) for n in known])  # known: those with a vector
    q = np.asarray(question_embedding, dtype=np.float64)
    # Row by row, not a BLAS gemv: gemv's result for one row depends on the rows around it, and a
    # type's similarity must not depend on which other types this question needed.
    dots = (vectors * q).sum(axis=1)
    norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(q)
    cos = np.divide(dots, norms, out=np.zeros(len(known)), where=norms > 0)
    return dict(zip(known, ((1.0 + cos) / 2.0).tolist()))


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

    Question similarities are computed only for the relation types they order: those met at the
    hubs a level expands (`hub_relation_types.cypher`, before the level) and those that reached the
    next frontier.
    """
    _check_settings(hops, cap, chunk, max_triples, hub_scan)
    topics = list(dict.fromkeys(topic_ids))
    if not topics:
        raise KgdbError("no topic entities given")
    emb = None if question_embedding is None else np.asarray(question_embedding, dtype=np.float32)
    start = time.perf_counter()
    fetch = _Fetch(graph, emb, cap, max_triples, hub_scan)
    try:
        fetch.first_level(topics, more=hops > 1)
        for level in range(2, hops + 1):
            if fetch.frontier.size == 0 or fetch.truncated:
                break
            fetch.expand(fetch.select_frontier(), chunk, more=level < hops)
    except TransactionMemoryError as exc:
        raise FetchMemoryError(
            f"{exc}. One fetch transaction holds up to chunk x cap triples: lower --cap (now {cap}) or "
            f"KGDB_FETCH_CHUNK (now {chunk}), or raise the server's db.memory.transaction.max"
        ) from exc

    sg = _assemble(graph, fetch.topic_idx, fetch.nodes, fetch.edges)
    sg.question, sg.qid, sg.question_embedding = question, qid, emb
    sg.meta.update(
        seconds=time.perf_counter() - start,
        hops=hops,
        cap=cap,
        levels=fetch.levels,
        truncated=fetch.truncated,
        hubs_skipped=fetch.hubs_skipped,
        budget_reached=fetch.budget_hit,
    )
    return sg


def _columns(graph: Graph, name: str, **params: Any) -> dict[str, Any]:
    """`Graph.columns` of a query that always returns its one row (it aggregates)."""
    row = graph.columns(name, **params)
    if row is None:
        raise DatabaseError(f"query {name!r} returned no row")
    return row


def _check_settings(hops: int, cap: int, chunk: int, max_triples: int, hub_scan: int) -> None:
    if not 1 <= hops <= MAX_HOPS:
        raise KgdbError(f"--hops must be between 1 and {MAX_HOPS}, got {hops}")
    if cap < 1:
        raise KgdbError(f"--cap must be positive, got {cap}")
    if chunk < 1 or max_triples < 1:
        raise KgdbError(f"KGDB_FETCH_CHUNK and KGDB_FETCH_MAX_TRIPLES must be positive, got {chunk} and {max_triples}")
    if hub_scan < 0:
        raise KgdbError(f"KGDB_FETCH_HUB_SCAN must be 0 or more, got {hub_scan}")


class _Fetch:
    """One fetch's levels so far: the rows each returned, the frontier and the budget's bookkeeping."""

    def __init__(self, graph: Graph, emb: np.ndarray | None, cap: int, max_triples: int, hub_scan: int) -> None:
        self.graph, self.emb, self.cap, self.max_triples, self.hub_scan = graph, emb, cap, max_triples, hub_scan
        self.nodes: dict[str, list] = {c: [] for c in _NODE_COLUMNS}
        self.edges: dict[str, list] = {c: [] for c in _EDGE_COLUMNS}
        self.levels: list[int] = []
        self.total, self.truncated, self.hubs_skipped, self.budget_hit = 0, False, 0, False
        self.degree = _Degrees()
        self.topic_idx: list[int] = []
        self.seen = self.frontier = np.zeros(0, np.int64)
        self.last: dict = {}

    def _hub_sims(self, ids: list[str], idx: list[int]) -> dict[str, float]:
        """The question similarities of the relation types at the hubs among these entities."""
        if self.emb is None:
            return {}
        types = _columns(self.graph, "hub_relation_types", ids=ids, idx=idx, cap=self.cap)["types"]
        return relation_similarities(self.graph, self.emb, types) if types else {}

    def first_level(self, topics: list[str], more: bool) -> None:
        sims = self._hub_sims(topics, [])
        first = _columns(self.graph, "subgraph", ids=topics, idx=[], degrees=more, cap=self.cap, relation_sims=sims)
        missing = sorted(set(topics) - set(first["expanded_id"]))
        if missing:
            raise KgdbError(f"topic entity {missing[0]!r} is not in the graph (use `kgdb link` to find its id)")
        self.topic_idx = first["expanded_idx"]
        for c in _NODE_COLUMNS:
            self.nodes[c] += [first[f"expanded_{c}"], first[f"node_{c}"]]
        for c in _EDGE_COLUMNS:
            self.edges[c].append(first[c])
        self.levels.append(len(first["edge_ids"]))
        self.total = self.levels[0]
        reached = np.asarray(first["node_idx"], np.int64)
        self.seen = np.union1d(np.asarray(first["expanded_idx"], np.int64), reached)
        self.frontier = np.setdiff1d(reached, first["expanded_idx"])
        self.last = first
        self.degree.add(first)

    def select_frontier(self) -> tuple[np.ndarray, np.ndarray]:
        """The frontier entities the next level expands, most question-like first, and their degrees:
        hubs only within the scan, and only the prefix that starts below the triple budget."""
        sims = None
        if self.emb is not None and self.frontier.size > 1:  # one entity needs no order
            sims = relation_similarities(self.graph, self.emb, self.last["rel_type"])
        frontier = _most_relevant_first(self.frontier, self.last, sims)
        deg = self.degree.of(frontier)
        hub = deg > self.cap
        keep = ~hub | (np.cumsum(np.where(hub, deg, 0)) <= self.hub_scan)  # hubs in relevance order, within the scan
        self.hubs_skipped += int(np.count_nonzero(~keep))
        frontier, deg = frontier[keep], deg[keep]
        # The entities whose expansion starts below the budget (the last one may pass it by < cap).
        cost = np.minimum(deg, self.cap)
        fits = int(np.count_nonzero(self.total + np.cumsum(cost) - cost < self.max_triples))
        self.budget_hit = self.budget_hit or fits < frontier.size
        self.truncated = self.budget_hit or not keep.all()
        return frontier[:fits], deg[:fits]

    def expand(self, selected: tuple[np.ndarray, np.ndarray], chunk: int, more: bool) -> None:
        """One level: the selected frontier, `chunk` entities per transaction."""
        frontier, deg = selected
        hubs = frontier[deg > self.cap]
        sims = self._hub_sims([], hubs.tolist()) if hubs.size else {}
        self.degree = _Degrees()
        added = 0
        reached_parts: list[np.ndarray] = []
        parts: dict[str, list] = {c: [] for c in _EDGE_COLUMNS}
        for start_at in range(0, frontier.size, chunk):
            row = _columns(
                self.graph,
                "subgraph",
                ids=[],
                idx=frontier[start_at : start_at + chunk].tolist(),
                degrees=more,
                cap=self.cap,
                relation_sims=sims,
            )
            self.degree.add(row)
            for c in _NODE_COLUMNS:
                self.nodes[c].append(row[f"node_{c}"])
            for c in _EDGE_COLUMNS:
                self.edges[c].append(row[c])
                parts[c].extend(row[c])
            added += len(row["edge_ids"])
            reached_parts.append(np.asarray(row["node_idx"], np.int64))
        self.levels.append(added)
        self.total += added
        reached = np.unique(np.concatenate(reached_parts)) if reached_parts else np.zeros(0, np.int64)
        self.frontier = np.setdiff1d(reached, self.seen)
        self.seen = np.union1d(self.seen, reached)
        self.last = parts


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
    rel_index = relation_index(graph, type_names)
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
