"""Directional Distance Encoding (SubgraphRAG §2.2): parameter-free, computed with scatter ops.

s^(0)_e = one-hot [e is topic, e is not topic]. Forward round: each entity takes the MEAN of
s^(l) over the heads of triples whose tail it is (in-neighbours, one message per triple, so
parallel edges count once each); reverse rounds do the same over out-neighbours, starting again
from s^(0). Entities without such neighbours get zeros (the reference code's PyG mean aggregation).
Entity encoding: [s^(0) || s^(1) .. s^(L) || s^(r,1) .. s^(r,L)]; triple encoding [s_h || s_t].
"""

from __future__ import annotations

import torch
from torch import Tensor


def dde_dim(rounds: int = 2, reverse_rounds: int = 2) -> int:
    """Width of one entity's encoding."""
    return 2 * (1 + rounds + reverse_rounds)


def _mean_propagate(x: Tensor, src: Tensor, dst: Tensor, count: Tensor) -> Tensor:
    out = torch.zeros_like(x).index_add_(0, dst, x.index_select(0, src))
    return out / count


def dde(head: Tensor, tail: Tensor, topic_mask: Tensor, rounds: int = 2, reverse_rounds: int = 2) -> Tensor:
    """Per-entity DDE, float32 [n, 2 * (1 + rounds + reverse_rounds)] on the input's device."""
    n = int(topic_mask.shape[0])
    topic = topic_mask.to(torch.float32)
    s0 = torch.stack([topic, 1.0 - topic], dim=1)
    in_count = torch.bincount(tail, minlength=n).clamp_(min=1).to(torch.float32).unsqueeze(1)
    out_count = torch.bincount(head, minlength=n).clamp_(min=1).to(torch.float32).unsqueeze(1)
    feats = [s0]
    x = s0
    for _ in range(rounds):
        x = _mean_propagate(x, head, tail, in_count)
        feats.append(x)
    x = s0
    for _ in range(reverse_rounds):
        x = _mean_propagate(x, tail, head, out_count)
        feats.append(x)
    return torch.cat(feats, dim=1)


def triple_encoding(entity_dde: Tensor, head: Tensor, tail: Tensor) -> Tensor:
    """z_tau = [s_h || s_t], [m, 2 * entity width]."""
    return torch.cat([entity_dde.index_select(0, head), entity_dde.index_select(0, tail)], dim=1)
