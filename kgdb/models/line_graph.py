"""Directed line graphs of a (multi)graph of triples, for RAPL (the RAPL paper's Definition 1).

A line-graph node is a triple; there is an edge a -> b when tail(a) == head(b). Parallel triples
(same head and tail, another relation) are distinct nodes, so this is not
`torch_geometric.transforms.LineGraph`, which coalesces parallel edges first (they agree on
graphs without parallel edges; the tests check both).

RAPL walks paths in either direction of a relation, so it works on the *augmented* triples: the m
triples forward, then their m inverses (tail, relation, head). `line_graph` builds the explicit
edge list (tests, small graphs); the encoders never materialise it: one GCN layer on the line
graph factorises through the entities (every triple entering v sends to every triple leaving v),
so `gcn_aggregate` costs O(m) per layer where the edge list has sum_v in(v)*out(v) edges (a hub
with 500 triples alone would give 250,000).
"""

from __future__ import annotations

import torch
from torch import Tensor


def augment(head: Tensor, tail: Tensor) -> tuple[Tensor, Tensor]:
    """(src, dst) of the 2m augmented triples: i < m is triple i, m + i its inverse."""
    return torch.cat([head, tail]), torch.cat([tail, head])


def line_graph(head: Tensor, tail: Tensor) -> Tensor:
    """[2, E'] edges a -> b of the directed line graph (tail(a) == head(b)), sorted by (a, b)."""
    m = head.shape[0]
    if m == 0:
        return torch.zeros(2, 0, dtype=torch.long, device=head.device)
    order = torch.argsort(head, stable=True)
    n = int(torch.maximum(head.max(), tail.max())) + 1
    rowptr = torch.zeros(n + 1, dtype=torch.long, device=head.device)
    rowptr[1:] = torch.cumsum(torch.bincount(head, minlength=n), 0)
    count = rowptr[tail + 1] - rowptr[tail]  # successors of each triple
    src = torch.repeat_interleave(torch.arange(m, device=head.device), count)
    first = torch.repeat_interleave(rowptr[tail], count)
    within = torch.arange(src.shape[0], device=head.device) - torch.repeat_interleave(
        torch.cumsum(count, 0) - count, count
    )
    dst = order[first + within]
    edges = torch.stack([src, dst])
    key = src * m + dst
    return edges[:, torch.argsort(key)]


def reverse(edge_index: Tensor) -> Tensor:
    """The edge-reversed copy (b -> a for every a -> b)."""
    return edge_index.flip(0)


def degrees(head: Tensor, tail: Tensor, n: int) -> tuple[Tensor, Tensor]:
    """(in-degree, out-degree) of the n entities, counting parallel triples."""
    ones = torch.ones_like(head, dtype=torch.float32)
    indeg = torch.zeros(n, device=head.device).index_add_(0, tail, ones)
    outdeg = torch.zeros(n, device=head.device).index_add_(0, head, ones)
    return indeg, outdeg


def gcn_aggregate(h: Tensor, head: Tensor, tail: Tensor, n: int, reverse: bool = False) -> Tensor:
    """Symmetric-normalised neighbour sum on the line graph, sum_j h_j / sqrt(in(i) * out(j)).

    Forward (j -> i when tail(j) == head(i)): every j entering v = head(i) has out(j) = out(v) and
    in(i) = in(v), so the sum is (sum of h over triples entering v) / sqrt(in(v) out(v)).
    Reverse (the edge-reversed line graph, j -> i when head(j) == tail(i)): the same through
    v = tail(i) with the triples leaving v.
    """
    indeg, outdeg = degrees(head, tail, n)
    scale = (indeg * outdeg).clamp(min=1.0).rsqrt()
    into, at = (head, tail) if reverse else (tail, head)
    per_node = torch.zeros(n, h.shape[1], dtype=h.dtype, device=h.device).index_add_(0, into, h)
    per_node = per_node * scale.unsqueeze(1)
    return per_node.index_select(0, at)


def successors(head: Tensor, tail: Tensor, n: int) -> tuple[Tensor, Tensor]:
    """CSR of the line graph's out-neighbours: the successors of triple a are
    `order[rowptr[tail[a]] : rowptr[tail[a] + 1]]` (the triples leaving tail(a))."""
    order = torch.argsort(head, stable=True)
    rowptr = torch.zeros(n + 1, dtype=torch.long, device=head.device)
    rowptr[1:] = torch.cumsum(torch.bincount(head, minlength=n), 0)
    return rowptr, order
