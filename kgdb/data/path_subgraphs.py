"""Training subgraphs for RRP's structural reasoner, built with numpy from the graph's triple arrays.

At question time the structural reasoner runs over the triples of the planner's relation paths
grounded in Cypher (`kgdb.rrp.retriever`): a union of a few relation paths walked from the
topic entities with a bounded frontier per hop. Training subgraphs are made the same way, offline:
the labelled relation paths (Eq. 2's Γ*) plus a few near misses of them that leave the topics
(the wrong paths a planner's beam holds: the same length, one step different), each grounded as complete walks with the frontier
capped per hop. Only the complete walks are kept (edges of dead ends are pruned), as Cypher
grounding returns whole paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from kgdb.data.relation_paths import TripleArrays


@dataclass
class LocalSubgraph:
    nodes: np.ndarray  # int64 [n] node indices of the TripleArrays
    head: np.ndarray  # int64 [m] local
    relation: np.ndarray  # int64 [m] relation index
    tail: np.ndarray  # int64 [m] local
    topic: np.ndarray  # bool [n]
    answer: np.ndarray  # bool [n]


class EdgesByStep:
    """Per step code (2*relation + 0 forward / 1 backward): the edges and their source / target node."""

    def __init__(self, arrays: TripleArrays):
        m = len(arrays.head)
        codes = np.concatenate([2 * arrays.relation, 2 * arrays.relation + 1])
        src = np.concatenate([arrays.head, arrays.tail])
        dst = np.concatenate([arrays.tail, arrays.head])
        edge = np.concatenate([np.arange(m), np.arange(m)])
        order = np.lexsort((src, codes))
        self.code, self.src, self.dst, self.edge = codes[order], src[order], dst[order], edge[order]
        self.bounds = np.searchsorted(self.code, np.arange(2 * len(arrays.relations) + 1))

    def step(self, code: int, frontier: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(edge ids, sources, targets) of the code's edges that leave `frontier` (sorted node ids)."""
        lo, hi = self.bounds[code], self.bounds[code + 1]
        src = self.src[lo:hi]
        keep = np.isin(src, frontier, assume_unique=False)
        return self.edge[lo:hi][keep], src[keep], self.dst[lo:hi][keep]


def ground_walks(index: EdgesByStep, starts: np.ndarray, codes: Sequence[int], cap: int) -> np.ndarray:
    """Edge ids on the complete walks of a relation path from `starts`, at most `cap` frontier
    entities per hop (the lowest node ids, as a fixed rule)."""
    frontier = np.unique(starts)
    levels = []
    for code in codes:
        edges, src, dst = index.step(int(code), frontier)
        levels.append((edges, src, dst))
        frontier = np.unique(dst)[:cap]
        if not len(frontier):
            return np.zeros(0, np.int64)
    alive = frontier
    kept = []
    for edges, src, dst in reversed(levels):  # prune the dead ends
        ok = np.isin(dst, alive)
        kept.append(edges[ok])
        alive = np.unique(src[ok])
    return np.unique(np.concatenate(kept)) if kept else np.zeros(0, np.int64)


def random_paths(
    arrays: TripleArrays,
    starts: np.ndarray,
    count: int,
    max_hops: int,
    rng: np.random.Generator,
    near: Sequence[Sequence[int]] = (),
) -> list[tuple[int, ...]]:
    """`count` random relation paths (step codes) that exist from `starts`. With `near` (the
    labelled paths), each is a near miss of one of them, as a planner's beam holds: its prefix up to
    a random step, then a different step there, then random steps to the same length; else a
    random path of 1..max_hops steps."""
    out = []
    for _ in range(count):
        if near:
            gold = tuple(near[int(rng.integers(len(near)))])
            length, split = len(gold), int(rng.integers(len(gold)))
        else:
            gold, length, split = (), int(rng.integers(1, max_hops + 1)), 0
        frontier, codes = np.unique(starts), []
        for k in range(length):
            steps = arrays.step(frontier)
            if k < split and gold[k] in steps:
                code = gold[k]
            else:
                options = sorted(c for c in steps if k != split or not gold or c != gold[k])
                if not options:
                    break
                code = int(rng.choice(options))
            codes.append(code)
            frontier = steps[code][:200]
        if codes:
            out.append(tuple(codes))
    return out


def path_subgraph(
    arrays: TripleArrays,
    index: EdgesByStep,
    topics: Sequence[str],
    answers: Sequence[str],
    paths: Sequence[Sequence[int]],
    cap: int = 200,
) -> LocalSubgraph | None:
    """The union of the grounded walks of `paths` (step codes) as a local subgraph; None when it
    holds no topic or no answer."""
    starts = np.asarray([arrays.index[t] for t in topics if t in arrays.index], np.int64)
    if not len(starts):
        return None
    edges = [ground_walks(index, starts, p, cap) for p in paths]
    edge = np.unique(np.concatenate(edges)) if edges else np.zeros(0, np.int64)
    head, rel, tail = arrays.head[edge], arrays.relation[edge], arrays.tail[edge]
    nodes = np.unique(np.concatenate([starts, head, tail]))
    answer_idx = np.asarray([arrays.index[a] for a in answers if a in arrays.index], np.int64)
    topic = np.isin(nodes, starts)
    answer = np.isin(nodes, answer_idx) & ~topic
    if not answer.any():
        return None
    return LocalSubgraph(nodes, np.searchsorted(nodes, head), rel, np.searchsorted(nodes, tail), topic, answer)
