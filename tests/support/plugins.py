"""Plugins defined outside kgdb, the way a user defines theirs: a relation-path planner that proposes
given paths, and a retriever registered as `toy-test` by importing this module."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from kgdb.models import registry
from kgdb.models.base import Retriever, SubgraphTensors
from kgdb.rrp.plan import PathPlanner, Plan, PlannedPath, names_of


class FixedPlanner(PathPlanner):
    """A planner that proposes given relation paths (the seam a trained RRP planner plugs into)."""

    name = "fixed"

    def __init__(self, *paths: tuple[str, ...]):
        self.paths = tuple(PlannedPath(p, 1.0 - 0.1 * i) for i, p in enumerate(paths))

    def plan(self, graph, reading, topics, names) -> Plan:
        return Plan(topics, names_of(topics, names), self.paths, reading.plain())


@dataclass(frozen=True)
class ToyConfig:
    scale: float = 1.0


@registry.register
class ToyRetriever(Retriever):
    """Scores a triple by a learned linear map of (question * relation) embeddings."""

    name = "toy-test"
    Config = ToyConfig
    trainable = True
    label_kind = "triples"
    description = "test-only toy"

    def __init__(self, config: ToyConfig | None = None, embedding_dim: int = 384):
        super().__init__(config, embedding_dim)
        self.linear = nn.Linear(embedding_dim, 1)

    def forward(self, x: SubgraphTensors) -> Tensor:
        q = x.question.index_select(0, x.triple_question())
        return self.linear(q * x.relation_embedding()).squeeze(1) * self.cfg.scale
