"""Directional Distance Encoding (SubgraphRAG §2.2): parameter-free mean propagation, written as a
torch-geometric `MessagePassing` layer (aggr="mean").

s^(0)_e = one-hot [e is topic, e is not topic]. Forward round: each entity takes the MEAN of
s^(l) over the heads of triples whose tail it is (in-neighbours, one message per triple, so
parallel edges count once each); reverse rounds do the same over out-neighbours, starting again
from s^(0). Entities without such neighbours get zeros (the reference code's PyG mean aggregation).
Entity encoding: [s^(0) || s^(1) .. s^(L) || s^(r,1) .. s^(r,L)]; triple encoding [s_h || s_t].
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.nn import MessagePassing


def dde_dim(rounds: int = 2, reverse_rounds: int = 2) -> int:
    """Width of one entity's encoding."""
    return 2 * (1 + rounds + reverse_rounds)


class MeanPropagation(MessagePassing):
    """x'_v = mean of x_u over edges u -> v (one message per edge, so parallel edges count once
    each; nodes without incoming edges get zeros, as PyG's mean aggregation gives)."""

    def __init__(self) -> None:
        super().__init__(aggr="mean", flow="source_to_target")

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return self.propagate(edge_index, x=x, size=(x.shape[0], x.shape[0]))

    def message(self, x_j: Tensor) -> Tensor:
        return x_j


_MEAN = MeanPropagation()  # no parameters: one instance serves every device and thread


def dde(head: Tensor, tail: Tensor, topic_mask: Tensor, rounds: int = 2, reverse_rounds: int = 2) -> Tensor:
    """Per-entity DDE, float32 [n, 2 * (1 + rounds + reverse_rounds)] on the input's device."""
    topic = topic_mask.to(torch.float32)
    s0 = torch.stack([topic, 1.0 - topic], dim=1)
    forward_edges = torch.stack([head, tail])  # heads send to tails: in-neighbour means
    reverse_edges = torch.stack([tail, head])
    feats = [s0]
    x = s0
    for _ in range(rounds):
        x = _MEAN(x, forward_edges)
        feats.append(x)
    x = s0
    for _ in range(reverse_rounds):
        x = _MEAN(x, reverse_edges)
        feats.append(x)
    return torch.cat(feats, dim=1)


def triple_encoding(entity_dde: Tensor, head: Tensor, tail: Tensor) -> Tensor:
    """z_tau = [s_h || s_t], [m, 2 * entity width]."""
    return torch.cat([entity_dde.index_select(0, head), entity_dde.index_select(0, tail)], dim=1)


_ROW_KEY_SEED = 0x5EED


def distinct_rows(s: Tensor) -> tuple[Tensor, Tensor]:
    """(distinct rows, index of each row's distinct row) of a float matrix, like
    `torch.unique(s, dim=0, return_inverse=True)` but about 10x faster (that sorts whole rows).

    DDE vectors take few distinct values (they encode distances to the topics), so the first-layer
    terms of a subgraph's nodes need computing once per distinct vector. Rows are grouped by a
    random linear key and the grouping is checked exactly: rows of one group are equal, or the exact
    (slow) unique is used. Equal rows split over two groups would only cost a duplicate row."""
    if s.shape[0] == 0:
        return s, torch.zeros(0, dtype=torch.long, device=s.device)
    g = torch.Generator().manual_seed(_ROW_KEY_SEED)
    w = torch.rand(s.shape[1], generator=g, dtype=torch.float64).to(s.device) + 0.5
    keys = (s.to(torch.float64) * w).sum(dim=1)
    _, inverse = torch.unique(keys, return_inverse=True)
    rows = torch.arange(s.shape[0], device=s.device)
    first = torch.full((int(inverse.max()) + 1,), s.shape[0], dtype=torch.long, device=s.device)
    first.scatter_reduce_(0, inverse, rows, reduce="amin")
    distinct = s.index_select(0, first)
    if torch.equal(distinct.index_select(0, inverse), s):
        return distinct, inverse
    return torch.unique(s, dim=0, return_inverse=True)
