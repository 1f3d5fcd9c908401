"""Relation-path labels for the RRP planner (the RRP paper, Eqs. 1-2): the shortest relation paths
from a question's topic entities to its answers, computed with numpy on triple arrays.

A relation path is a sequence of steps (relation, direction), direction +1 following a
relationship head -> tail and -1 against it. The graph is a multigraph: parallel relationships
between the same two entities are separate steps, so both relations label a path.

Reach is set-based, as grounding a relation path is (`kgdb/cypher/ground_step.cypher`): the entities
a relation path reaches from a topic are the ends of every walk that follows its steps. The topic
entities themselves never count as answers (a 2-hop "same director as X" walk returns to X).
No database here: the arrays come from a cached subgraph (`CachedQuestion`) or from the whole
graph (`kgdb.cypher.paths.graph_triples`); the seam passes the relation vocabulary in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

Step = tuple[str, int]  # (relation name, +1 along head -> tail | -1 against)
RelationPath = tuple[Step, ...]


@dataclass
class TripleArrays:
    """A multigraph as arrays, with both edge directions indexed by source node (CSR)."""

    ids: list[str]  # node index -> entity id
    relations: list[str]  # relation index -> name
    head: np.ndarray  # int64 [m]
    relation: np.ndarray  # int64 [m]
    tail: np.ndarray  # int64 [m]

    def __post_init__(self) -> None:
        self.index = {e: i for i, e in enumerate(self.ids)}
        src = np.concatenate([self.head, self.tail])
        dst = np.concatenate([self.tail, self.head])
        # step code: 2*relation for a forward step, 2*relation + 1 for a backward one
        code = np.concatenate([2 * self.relation, 2 * self.relation + 1])
        order = np.argsort(src, kind="stable")
        self._dst, self._code = dst[order], code[order]
        self._indptr = np.zeros(len(self.ids) + 1, dtype=np.int64)
        np.add.at(self._indptr, src + 1, 1)
        self._indptr = np.cumsum(self._indptr)

    @classmethod
    def from_triples(
        cls, triples: Sequence[tuple[str, str, str]], relations: Sequence[str] | None = None
    ) -> "TripleArrays":
        """From (head id, relation name, tail id) rows; `relations` fixes the vocabulary order."""
        ids: dict[str, int] = {}
        rels: dict[str, int] = {r: i for i, r in enumerate(relations or [])}
        h, r, t = [], [], []
        for head, rel, tail in triples:
            h.append(ids.setdefault(head, len(ids)))
            if rel not in rels:
                rels[rel] = len(rels)
            r.append(rels[rel])
            t.append(ids.setdefault(tail, len(ids)))
        return cls(list(ids), list(rels), np.asarray(h, np.int64), np.asarray(r, np.int64), np.asarray(t, np.int64))

    def step(self, nodes: np.ndarray) -> dict[int, np.ndarray]:
        """Step code -> sorted distinct nodes one relationship away from `nodes`."""
        starts, stops = self._indptr[nodes], self._indptr[nodes + 1]
        counts = stops - starts
        total = int(counts.sum())
        if total == 0:
            return {}
        offsets = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(total)
        code, dst = self._code[offsets], self._dst[offsets]
        pairs = np.unique(code * len(self.ids) + dst)
        code, dst = pairs // len(self.ids), pairs % len(self.ids)
        cut = np.flatnonzero(np.diff(code)) + 1
        return {int(c[0]): d for c, d in zip(np.split(code, cut), np.split(dst, cut))}

    def decode(self, codes: tuple[int, ...]) -> RelationPath:
        return tuple((self.relations[c // 2], 1 if c % 2 == 0 else -1) for c in codes)


def reach(
    graph: TripleArrays, topic: int, hops: int, *, max_paths: int = 20_000, frontier_cap: int = 20_000
) -> list[dict[tuple[int, ...], np.ndarray]]:
    """Per length 1..hops: relation path (step codes) -> entities it reaches from `topic`.

    At most `max_paths` relation paths per length and `frontier_cap` entities per path are kept
    (in code / node order), so a hub cannot blow the enumeration up."""
    levels: list[dict[tuple[int, ...], np.ndarray]] = []
    frontier: dict[tuple[int, ...], np.ndarray] = {(): np.asarray([topic], np.int64)}
    for _ in range(hops):
        nxt: dict[tuple[int, ...], np.ndarray] = {}
        for codes, nodes in frontier.items():
            for c, ends in graph.step(nodes).items():
                if len(nxt) >= max_paths:
                    break
                nxt[codes + (c,)] = ends[:frontier_cap]
        levels.append(nxt)
        frontier = nxt
    return levels


def shortest_relation_paths(
    graph: TripleArrays,
    topics: Sequence[str],
    answers: Sequence[str],
    *,
    max_hops: int = 3,
    exact_hops: int | None = None,
    max_paths: int = 20_000,
    best_f1: bool = False,
) -> list[RelationPath]:
    """The shortest relation paths from any topic to any answer (Eq. 2's Γ*), sorted.

    With `exact_hops` (MetaQA states each question's hop count) only paths of that length count.
    With `best_f1`, only those of the shortest paths whose reached entities (over all topics) match
    the answer set best (F1, ties kept): a path that reaches one answer by accident (the writer of a
    film who also directed it, for "directed by") is then no label. Eq. 1 itself is silent on this.
    Topics or answers missing from the arrays are ignored; no path gives []."""
    t_idx = [graph.index[t] for t in dict.fromkeys(topics) if t in graph.index]
    targets = np.asarray(sorted({graph.index[a] for a in answers if a in graph.index} - set(t_idx)), np.int64)
    if not t_idx or not len(targets):
        return []
    hops = exact_hops or max_hops
    levels = [reach(graph, t, hops, max_paths=max_paths) for t in t_idx]
    for length in [exact_hops] if exact_hops else range(1, hops + 1):
        found = _reaching(levels, length, targets)
        if found and best_f1:
            found = _best_f1(levels, length, found, targets, t_idx)
        if found:
            return sorted(graph.decode(c) for c in found)
    return []


def _reaching(levels: list, length: int, targets: np.ndarray) -> set[tuple]:
    """The relation paths (codes) of `length` steps that reach an answer from some topic."""
    return {
        codes
        for per_topic in levels
        for codes, ends in per_topic[length - 1].items()
        if np.isin(ends, targets, assume_unique=True).any()
    }


def _best_f1(levels: list, length: int, found: set[tuple], targets: np.ndarray, topics: list[int]) -> set[tuple]:
    """Those of `found` whose reached entities over all topics match the answers best (F1, ties kept)."""
    f1 = {
        c: _f1(
            np.unique(np.concatenate([lv[length - 1].get(c, np.zeros(0, np.int64)) for lv in levels])), targets, topics
        )
        for c in found
    }
    top = max(f1.values())
    return {c for c, v in f1.items() if v >= top - 1e-9}


def _f1(ends: np.ndarray, targets: np.ndarray, topics: list[int]) -> float:
    ends = ends[~np.isin(ends, topics)]
    hit = int(np.isin(ends, targets, assume_unique=True).sum())
    return 2 * hit / (len(ends) + len(targets)) if hit else 0.0


def cached_question_arrays(
    head: np.ndarray, relation: np.ndarray, tail: np.ndarray, n: int, relation_names: Sequence[str]
) -> TripleArrays:
    """The arrays of a cached subgraph (`kgdb.data.cache.CachedQuestion`: local node indices,
    relation = Relation.idx) with nodes named by their local index ('0', '1', ...)."""
    return TripleArrays(
        [str(i) for i in range(n)],
        list(relation_names),
        head.astype(np.int64),
        relation.astype(np.int64),
        tail.astype(np.int64),
    )
