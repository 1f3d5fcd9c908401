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
from kgdb.errors import KgdbError
from kgdb.errors import TransactionMemoryError
from kgdb.limits import DEFAULT_CAP, FETCH_CHUNK, FETCH_MAX_TRIPLES, MAX_HOPS
from kgdb.subgraph import Subgraph

_NODE_COLUMNS = ("id", "idx", "name", "cvt")
_EDGE_COLUMNS = ("head_idx", "rel_type", "tail_idx", "edge_ids")
_relation_index: "weakref.WeakKeyDictionary[Graph, dict[str, int]]" = weakref.WeakKeyDictionary()


def relation_index(graph: Graph, refresh: bool = False) -> dict[str, int]:
    """Relation type -> Relation.idx, read once per Graph object."""
    if refresh or graph not in _relation_index:
        _relation_index[graph] = {r["name"]: r["idx"] for r in graph.run("relation_index")}
    return _relation_index[graph]


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
    rest of the frontier is not expanded (`meta["truncated"]`). Raises KgdbError for an unknown topic
    id or bad settings, and a clear KgdbError naming the settings when a transaction still exceeds
    the server's memory limit.
    """
    if not 1 <= hops <= MAX_HOPS:
        raise KgdbError(f"--hops must be between 1 and {MAX_HOPS}, got {hops}")
    if cap < 1:
        raise KgdbError(f"--cap must be positive, got {cap}")
    if chunk < 1 or max_triples < 1:
        raise KgdbError(f"KGDB_FETCH_CHUNK and KGDB_FETCH_MAX_TRIPLES must be positive, got {chunk} and {max_triples}")
    topics = list(dict.fromkeys(topic_ids))
    if not topics:
        raise KgdbError("no topic entities given")
    emb = None if question_embedding is None else np.asarray(question_embedding, dtype=np.float32)
    params = {"cap": cap, "question_embedding": None if emb is None else emb.tolist()}
    start = time.perf_counter()

    try:
        first = graph.columns("subgraph", ids=topics, idx=[], **params)
        missing = sorted(set(topics) - set(first["expanded_id"]))
        if missing:
            raise KgdbError(f"topic entity {missing[0]!r} is not in the graph (use `kgdb link` to find its id)")
        nodes = {c: [first[f"expanded_{c}"], first[f"node_{c}"]] for c in _NODE_COLUMNS}
        edges = {c: [first[c]] for c in _EDGE_COLUMNS}
        levels = [len(first["edge_ids"])]
        total, truncated = levels[0], False
        seen = np.union1d(np.asarray(first["expanded_idx"], np.int64), np.asarray(first["node_idx"], np.int64))
        frontier = np.setdiff1d(np.asarray(first["node_idx"], np.int64), first["expanded_idx"])
        last = first
        for level in range(2, hops + 1):
            if frontier.size == 0 or truncated:
                break
            frontier = _most_relevant_first(graph, frontier, last, emb)
            added, reached_parts, parts = 0, [], {c: [] for c in _EDGE_COLUMNS}
            for start_at in range(0, frontier.size, chunk):
                if total + added >= max_triples:
                    truncated = True
                    break
                row = graph.columns("subgraph", ids=[], idx=frontier[start_at : start_at + chunk].tolist(), **params)
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
    sg.meta.update(seconds=time.perf_counter() - start, hops=hops, cap=cap, levels=levels, truncated=truncated)
    return sg


class FetchMemoryError(TransactionMemoryError):
    """A subgraph fetch exceeded the server's transaction memory even in chunks; names the settings."""


def _most_relevant_first(graph: Graph, frontier: np.ndarray, last: dict, emb: np.ndarray | None) -> np.ndarray:
    """The frontier ordered by the best question similarity of a relation that reached each entity
    (ties and no question: by idx), so a truncated fetch keeps the most question-like part."""
    if emb is None or frontier.size <= 1:
        return frontier
    types = np.asarray(last["rel_type"], dtype=object)
    if types.size == 0:
        return frontier
    names = sorted(set(types.tolist()))
    sims = {r["relation"]: float(r["sim"]) for r in graph.run("relation_similarity", types=names, question_embedding=emb.tolist())}
    edge_sim = np.asarray([sims.get(t, 0.0) for t in types.tolist()], dtype=np.float64)
    score = np.full(frontier.size, -2.0)
    for ends in (np.asarray(last["head_idx"], np.int64), np.asarray(last["tail_idx"], np.int64)):
        pos = np.searchsorted(frontier, ends)
        hit = (pos < frontier.size) & (frontier[np.minimum(pos, frontier.size - 1)] == ends)
        np.maximum.at(score, pos[hit], edge_sim[hit])
    return frontier[np.lexsort((frontier, -score))]


def _concat(parts: list[list], dtype=object) -> np.ndarray:
    return np.concatenate([np.asarray(p, dtype=dtype) for p in parts]) if parts else np.zeros(0, dtype)


def _assemble(graph: Graph, topic_idx: list[int], nodes: dict, edges: dict) -> Subgraph:
    node_idx = _concat(nodes["idx"], np.int64) if all(len(p) == 0 or None not in p for p in nodes["idx"]) else None
    if node_idx is None:
        raise KgdbError("entities without a dense idx: finish the load (run `kgdb load` again)")
    uniq, first = np.unique(node_idx, return_index=True)
    ids = _concat(nodes["id"])[first].tolist()
    names = _concat(nodes["name"])[first].tolist()
    cvt = _concat(nodes["cvt"], bool)[first]

    eids = _concat(edges["edge_ids"])
    _, keep = np.unique(eids, return_index=True)  # an edge between two frontier nodes comes twice
    head = _concat(edges["head_idx"], np.int64)[keep]
    tail = _concat(edges["tail_idx"], np.int64)[keep]
    types = _concat(edges["rel_type"])[keep]
    eids = eids[keep]
    type_names, type_pos = np.unique(types.astype(str), return_inverse=True) if types.size else (np.zeros(0, str), np.zeros(0, np.int64))
    order = np.lexsort((tail, type_pos, head))
    rel_index = relation_index(graph)
    if any(t not in rel_index for t in type_names):
        rel_index = relation_index(graph, refresh=True)
    missing = [t for t in type_names if t not in rel_index]
    if missing:
        raise KgdbError(f"relationship type {missing[0]!r} has no Relation node: finish the load (run `kgdb load` again)")
    type_idx = np.asarray([rel_index[t] for t in type_names], dtype=np.int64)  # loop over distinct types only
    return Subgraph(
        entity_ids=ids,
        entity_names=names,
        entity_idx=uniq,
        is_cvt=cvt,
        head=np.searchsorted(uniq, head[order]),
        relation=type_idx[type_pos[order]] if types.size else np.zeros(0, np.int64),
        tail=np.searchsorted(uniq, tail[order]),
        relation_names=types[order].tolist(),
        edge_ids=eids[order].tolist(),
        topic=np.searchsorted(uniq, np.asarray(sorted(topic_idx), dtype=np.int64)),
    )
