"""Pure-numpy labelling on a fetched `Subgraph` (no database, no torch).

- `label_subgraph`: SubgraphRAG's weak labels, the triples on shortest topic–answer paths inside the
  subgraph, by the rule of `kgdb.cypher.paths.shortest_path_triples`: for each (topic, answer)
  pair, all shortest directed paths topic → answer and answer → topic, keeping only the overall
  shortest direction(s); a pair with no directed path falls back to shortest undirected paths.
- `candidate_paths`: RAPL's stage-1 candidates, simple directed paths of length
  shortest .. shortest+slack per pair, shortest first, at most `cap` per pair.
- `answer_hops`: undirected distance from the topics to the nearest answer (the hop bucket).

Every function treats the graph as a multigraph: parallel relations are labelled independently.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Iterator

import numpy as np

from kgdb.subgraph import Subgraph

INF = np.iinfo(np.int64).max // 4


def answer_hops(
    n: int, head: np.ndarray, tail: np.ndarray, topic: np.ndarray, answers: np.ndarray, max_hops: int = 6
) -> int:
    """Undirected BFS distance from the topic set to the nearest answer (0 when none is reached)."""
    if len(answers) == 0 or len(topic) == 0:
        return 0
    if np.isin(answers, topic).any():
        return 0
    seen = np.zeros(n, dtype=bool)
    seen[topic] = True
    frontier = seen.copy()
    targets = np.zeros(n, dtype=bool)
    targets[answers] = True
    for hop in range(1, max_hops + 1):
        nxt = np.zeros(n, dtype=bool)
        nxt[tail[frontier[head]]] = True
        nxt[head[frontier[tail]]] = True
        nxt &= ~seen
        if (nxt & targets).any():
            return hop
        if not nxt.any():
            return 0
        seen |= nxt
        frontier = nxt
    return 0


def _bfs(n: int, src: np.ndarray, dst: np.ndarray, start: int) -> np.ndarray:
    """Hop distance from `start` along src → dst edges (INF where unreachable)."""
    dist = np.full(n, INF, dtype=np.int64)
    dist[start] = 0
    frontier = np.zeros(n, dtype=bool)
    frontier[start] = True
    d = 0
    while frontier.any():
        d += 1
        nxt = np.zeros(n, dtype=bool)
        nxt[dst[frontier[src]]] = True
        nxt &= dist == INF
        dist[nxt] = d
        frontier = nxt
    return dist


class _Distances:
    """Cached BFS distances on one subgraph: out (along edges), into (against edges), undirected."""

    def __init__(self, sg: Subgraph):
        self.n = sg.num_nodes
        self.h, self.t = sg.head, sg.tail
        self.both_src = np.concatenate([sg.head, sg.tail])
        self.both_dst = np.concatenate([sg.tail, sg.head])
        self._cache: dict[tuple[str, int], np.ndarray] = {}

    def get(self, kind: str, node: int) -> np.ndarray:
        key = (kind, node)
        if key not in self._cache:
            if kind == "out":
                self._cache[key] = _bfs(self.n, self.h, self.t, node)
            elif kind == "into":
                self._cache[key] = _bfs(self.n, self.t, self.h, node)
            else:
                self._cache[key] = _bfs(self.n, self.both_src, self.both_dst, node)
        return self._cache[key]


def _local(sg: Subgraph, ids: list[str]) -> list[int]:
    position = {entity_id: i for i, entity_id in enumerate(sg.entity_ids)}
    return sorted({position[i] for i in ids if i in position})


def label_subgraph(sg: Subgraph, answer_ids: list[str], undirected: bool = True) -> np.ndarray:
    """Boolean label per triple of `sg`: on a shortest topic–answer path inside the subgraph.

    Computed on the fetched subgraph (numpy BFS), by the
    rule of `shortest_path_triples`: triple (h, t) lies on a shortest s → a path of length L iff
    d(s, h) + 1 + d(t, a) = L. Parallel edges are labelled independently, so all are kept.
    """
    labels = np.zeros(sg.num_triples, dtype=bool)
    dist = _Distances(sg)
    for q in sg.topic.tolist():
        for a in _local(sg, answer_ids):
            if a == q:
                continue
            labels |= _pair_labels(dist, q, a, undirected)
    return labels


def _pair_labels(dist: _Distances, q: int, a: int, undirected: bool) -> np.ndarray:
    h, t = dist.h, dist.t
    forward = dist.get("out", q)[a]
    backward = dist.get("out", a)[q]
    best = min(forward, backward)
    mask = np.zeros(h.shape[0], dtype=bool)
    if best < INF:
        if forward == best:
            mask |= dist.get("out", q)[h] + 1 + dist.get("into", a)[t] == best
        if backward == best:
            mask |= dist.get("out", a)[h] + 1 + dist.get("into", q)[t] == best
    elif undirected:
        du_q, du_a = dist.get("both", q), dist.get("both", a)
        length = du_q[a]
        if length < INF:
            mask |= (du_q[h] + 1 + du_a[t] == length) | (du_q[t] + 1 + du_a[h] == length)
    return mask


@dataclass(frozen=True)
class TopicAnswerPath:
    """A path of triples inside a fetched subgraph between a topic and an answer (RAPL's stage-1 candidate)."""

    topic: int  # local node index
    answer: int
    direction: str  # "forward" or "backward"
    triples: tuple[int, ...]  # triple indices into the subgraph, in path order


def candidate_paths(sg: Subgraph, answer_ids: list[str], slack: int = 2, cap: int = 50) -> list[TopicAnswerPath]:
    """RAPL stage-1 candidates: simple directed paths of length d_min..d_min+slack per (topic, answer).

    d_min is the shortest length over both directions; paths are enumerated shortest first, then in
    triple order (deterministic), and at most `cap` are kept per pair.
    """
    dist = _Distances(sg)
    order = np.lexsort((sg.tail, sg.relation, sg.head))
    starts = np.searchsorted(sg.head[order], np.arange(sg.num_nodes + 1))
    out: list[TopicAnswerPath] = []
    for q in sg.topic.tolist():
        for a in _local(sg, answer_ids):
            best = min(dist.get("out", q)[a], dist.get("out", a)[q]) if a != q else INF
            if best < INF:
                out += islice(_pair_paths(sg, dist, order, starts, q, a, int(best), slack), max(cap, 1))
    return out


def _pair_paths(
    sg: Subgraph, dist: "_Distances", order, starts, q: int, a: int, best: int, slack: int
) -> Iterator[TopicAnswerPath]:
    """The simple directed paths between topic `q` and answer `a` of length best..best+slack, shortest
    first, forward before backward at each length."""
    for length in range(best, best + slack + 1):
        for direction, s, e in (("forward", q, a), ("backward", a, q)):
            for path in _walks(sg, order, starts, dist.get("into", e), s, e, length):
                yield TopicAnswerPath(q, a, direction, path)


def _walks(sg: Subgraph, order, starts, to_end, s: int, e: int, length: int):
    """Simple paths s → e of exactly `length` triples (DFS pruned by the distance to e)."""
    stack: list[tuple[int, tuple[int, ...], tuple[int, ...]]] = [(s, (), (s,))]
    while stack:
        node, edges, nodes = stack.pop()
        if len(edges) == length:
            if node == e:
                yield edges
            continue
        if node == e and edges:
            continue
        nxt: list[tuple[int, tuple[int, ...], tuple[int, ...]]] = []
        for i in order[starts[node] : starts[node + 1]].tolist():
            t = int(sg.tail[i])
            if t in nodes or len(edges) + 1 + to_end[t] > length:
                continue
            nxt.append((t, edges + (i,), nodes + (t,)))
        stack.extend(reversed(nxt))  # pop in triple order
