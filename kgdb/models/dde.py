"""Directional Distance Encoding (SubgraphRAG §2.2): parameter-free mean propagation, written as a
torch-geometric `MessagePassing` layer (aggr="mean").

s^(0)_e = one-hot [e is topic, e is not topic]. Forward round: each entity takes the MEAN of
s^(l) over the heads of triples whose tail it is (in-neighbours, one message per triple, so
parallel edges count once each); reverse rounds do the same over out-neighbours, starting again
from s^(0). Entities without such neighbours get zeros (the reference code's PyG mean aggregation).
Entity encoding: [s^(0) || s^(1) .. s^(L) || s^(r,1) .. s^(r,L)]; triple encoding [s_h || s_t].
"""

from __future__ import annotations

from functools import lru_cache

import torch
from torch import Tensor


def dde_dim(rounds: int = 2, reverse_rounds: int = 2) -> int:
    """Width of one entity's encoding."""
    return 2 * (1 + rounds + reverse_rounds)


@lru_cache(maxsize=1)
def mean_propagation():
    """The PyG layer x'_v = mean of x_u over edges u -> v (one message per edge, so parallel edges
    count once each; nodes without incoming edges get zeros, as PyG's mean aggregation gives).

    Built on first use: importing torch-geometric costs about 2 s, which a question answered by a
    retriever without DDE (cosine) should not pay.
    """
    from torch_geometric.nn import MessagePassing

    class MeanPropagation(MessagePassing):
        def __init__(self) -> None:
            super().__init__(aggr="mean", flow="source_to_target")

        def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
            return self.propagate(edge_index, x=x, size=(x.shape[0], x.shape[0]))

        def message(self, x_j: Tensor) -> Tensor:
            return x_j

    return MeanPropagation()


def dde(head: Tensor, tail: Tensor, topic_mask: Tensor, rounds: int = 2, reverse_rounds: int = 2) -> Tensor:
    """Per-entity DDE, float32 [n, 2 * (1 + rounds + reverse_rounds)] on the input's device."""
    topic = topic_mask.to(torch.float32)
    s0 = torch.stack([topic, 1.0 - topic], dim=1)
    propagate = mean_propagation()
    forward_edges = torch.stack([head, tail])  # heads send to tails: in-neighbour means
    reverse_edges = torch.stack([tail, head])
    feats = [s0]
    x = s0
    for _ in range(rounds):
        x = propagate(x, forward_edges)
        feats.append(x)
    x = s0
    for _ in range(reverse_rounds):
        x = propagate(x, reverse_edges)
        feats.append(x)
    return torch.cat(feats, dim=1)


def triple_encoding(entity_dde: Tensor, head: Tensor, tail: Tensor) -> Tensor:
    """z_tau = [s_h || s_t], [m, 2 * entity width]."""
    return torch.cat([entity_dde.index_select(0, head), entity_dde.index_select(0, tail)], dim=1)
