"""A small learned rescorer over graph-independent evidence: question similarities and DDE.

SubgraphRAG and RAPL read the raw 384-d text vectors, so what they learn is tied to the
vocabulary of the graph they were trained on (trained on WebQSP, both fall below cosine on
MetaQA). This retriever sees only numbers that mean the same on any graph embedded with the same
model: the cosine of the question with the triple, its relation, head and tail, those cosines
standardised within the question (so a graph whose texts are all close to its questions is
scored like one whose texts are not), CVT flags, and the directional distance encoding (DDE) of
head and tail. A two-layer MLP of a few hundred weights combines them. It is meant to be trained
on one graph and used on others: the default retriever a fresh install ships.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing

from kgdb.bounds import bounded
from kgdb.models.base import Retriever, SubgraphTensors
from kgdb.models.dde import dde, dde_dim, triple_encoding
from kgdb.scoring.retrievers import UNREACHED

SIMILARITIES = 4  # triple, relation, head, tail


def _standardise(values: Tensor, group: Tensor, groups: int) -> Tensor:
    """(v - mean) / std within each question (std floored so one-triple subgraphs stay finite)."""
    count = torch.zeros(groups, device=values.device).index_add_(0, group, torch.ones_like(values[:, 0]))
    count = count.clamp_min(1).unsqueeze(1)
    mean = torch.zeros(groups, values.shape[1], device=values.device).index_add_(0, group, values) / count
    centred = values - mean.index_select(0, group)
    var = torch.zeros_like(mean).index_add_(0, group, centred * centred) / count
    return centred / (var.sqrt() + 1e-2).index_select(0, group)


def similarity_features(x: SubgraphTensors) -> Tensor:
    """[m, 2 * SIMILARITIES + 2]: raw and per-question standardised cosines, CVT flags of h and t."""
    z = x.entity_embedding()
    zh, zt, zr = z.index_select(0, x.head), z.index_select(0, x.tail), x.relation_embedding()
    q = x.question.index_select(0, x.triple_question()) if x.num_questions > 1 else x.question[0].expand_as(zr)
    unit = nn.functional.normalize
    triple = unit(zh + zr + zt, dim=1)
    raw = torch.stack(
        [(triple * q).sum(1), (unit(zr, dim=1) * q).sum(1), (unit(zh, dim=1) * q).sum(1), (unit(zt, dim=1) * q).sum(1)],
        dim=1,
    )
    group = x.triple_question() if x.num_questions > 1 else torch.zeros_like(x.head)
    cvt = x.cvt_mask.to(torch.float32)
    flags = torch.stack([cvt.index_select(0, x.head), cvt.index_select(0, x.tail)], dim=1)
    return torch.cat([raw, _standardise(raw, group, x.num_questions), flags], dim=1)


class MaxPropagation(MessagePassing):
    """x'_v = max over edges u -> v of (x_u + w_uv): the best-scoring walk, one hop longer."""

    def __init__(self) -> None:
        super().__init__(aggr="max", flow="source_to_target")

    def forward(self, x: Tensor, edge_index: Tensor, weight: Tensor) -> Tensor:
        return self.propagate(edge_index, x=x, weight=weight, size=(x.shape[0], x.shape[0]))

    def message(self, x_j: Tensor, weight: Tensor) -> Tensor:
        return x_j + weight


_MAX = MaxPropagation()  # no parameters: one instance serves every device and thread


def path_relevance(x: SubgraphTensors, relation_score: Tensor, rounds: int) -> Tensor:
    """[n] best sum of `relation_score` along a shortest walk (at most `rounds` hops, edges walked
    both ways) from a topic entity; entities further away keep a floor far below.

    A multi-hop answer is reached through relations that each match part of the question; the
    triples on that walk score high together, which per-triple cosine cannot see. Only shortest
    walks count, so a walk cannot gain by going back and forth over a well-matching relation.
    """
    edges = torch.cat([x.edge_index, x.edge_index.flip(0)], dim=1)
    weight = torch.cat([relation_score, relation_score]).unsqueeze(1)
    reached = x.topic_mask.clone()
    best = torch.where(reached, 0.0, UNREACHED * (rounds + 1)).unsqueeze(1)
    has_in = torch.zeros(x.num_nodes, dtype=torch.bool, device=best.device)
    has_in[edges[1]] = True  # PyG's max gives 0 to a node without messages: it must not count as reached
    for _ in range(rounds):
        source = torch.where(reached.unsqueeze(1), best, float("-inf"))
        step = _MAX(source, edges, weight).squeeze(1)
        new = ~reached & has_in & torch.isfinite(step)
        best = torch.where(new.unsqueeze(1), step.unsqueeze(1), best)
        reached = reached | new
    return best.squeeze(1)


@dataclass(frozen=True)
class CosineDDEConfig:
    hidden: int = bounded(32, ge=1)
    dde_rounds: int = bounded(2, ge=0)
    dde_reverse_rounds: int = bounded(2, ge=0)
    walk_rounds: int = bounded(3, ge=0)


class CosineDDE(Retriever):
    name = "cosine-dde"
    Config = CosineDDEConfig
    trainable = True
    label_kind = "triples"
    description = "small MLP over question cosines + DDE; graph-independent inputs, so it transfers"

    def __init__(self, config: CosineDDEConfig | None = None, embedding_dim: int = 384):
        super().__init__(config, embedding_dim)
        width = 2 * SIMILARITIES + 2 + 3 + 2 * dde_dim(self.cfg.dde_rounds, self.cfg.dde_reverse_rounds)
        self.mlp = nn.Sequential(nn.Linear(width, self.cfg.hidden), nn.ReLU(), nn.Linear(self.cfg.hidden, 1))

    def inputs(self, x: SubgraphTensors) -> Tensor:
        s = dde(x.head, x.tail, x.topic_mask, self.cfg.dde_rounds, self.cfg.dde_reverse_rounds)
        sims = similarity_features(x)
        relation_std = sims[:, SIMILARITIES + 1]
        walk = path_relevance(x, relation_std, self.cfg.walk_rounds)
        wh, wt = walk.index_select(0, x.head), walk.index_select(0, x.tail)
        through = torch.maximum(wh, wt) + relation_std  # the best walk that ends with this triple
        return torch.cat([sims, torch.stack([wh, wt, through], dim=1), triple_encoding(s, x.head, x.tail)], dim=1)

    def forward(self, x: SubgraphTensors) -> Tensor:
        return self.mlp(self.inputs(x)).squeeze(1)
