"""The retriever interface: a featurised subgraph in, one score per triple out.

Models are plain `nn.Module`s and never touch the database: `kgdb.models.features` turns a
`kgdb.subgraph.Subgraph` (numpy, from Neo4j) into `SubgraphTensors` on the model's device.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass
class TensorTables:
    """The graph-wide embedding tables as tensors on one device (rows = Entity.idx / Relation.idx).

    CVT rows of `entity` are zeros; models substitute their own vector for them.
    """

    entity: Tensor  # float32 [N, d]
    relation: Tensor  # float32 [R, d]
    fingerprint: str = ""

    @classmethod
    def from_numpy(cls, entity: np.ndarray, relation: np.ndarray, fingerprint: str = "", device: str = "cpu"):
        return cls(
            torch.from_numpy(np.ascontiguousarray(entity, dtype=np.float32)).to(device),
            torch.from_numpy(np.ascontiguousarray(relation, dtype=np.float32)).to(device),
            fingerprint,
        )

    @property
    def dim(self) -> int:
        return int(self.entity.shape[1])

    @property
    def device(self) -> torch.device:
        return self.entity.device


@dataclass
class SubgraphTensors:
    """Candidate triples of one question, or of a batch of B questions as one disjoint union.

    Local nodes 0..n-1 index `entity_idx` (rows of `tables.entity`); triple i is
    (head[i], relation[i], tail[i]) with head/tail local and relation a row of `tables.relation`.
    Node j belongs to question `node_batch[j]` (all zeros for a single question); triples never
    cross questions, so the DDE of the union equals the DDE of each part.
    """

    head: Tensor  # int64 [m]
    relation: Tensor  # int64 [m]
    tail: Tensor  # int64 [m]
    entity_idx: Tensor  # int64 [n]
    topic_mask: Tensor  # bool [n]
    cvt_mask: Tensor  # bool [n]
    question: Tensor  # float32 [B, d], unit norm, one row per question
    node_batch: Tensor  # int64 [n], question of each node
    tables: TensorTables
    triple_offsets: list[int] | None = None  # batch: triples of question b are [off[b], off[b+1])
    node_offsets: list[int] | None = None  # batch: nodes of question b are [off[b], off[b+1])
    # Precomputed per-node features by `Retriever.node_feature_key` (e.g. SubgraphRAG's DDE), [n, w]
    features: dict[str, Tensor] = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return int(self.entity_idx.shape[0])

    @property
    def num_triples(self) -> int:
        return int(self.head.shape[0])

    @property
    def edge_index(self) -> Tensor:
        """[2, m] head -> tail, the PyG convention."""
        return torch.stack([self.head, self.tail])

    @property
    def num_questions(self) -> int:
        return int(self.question.shape[0])

    def triple_question(self) -> Tensor:
        """[m] question index of each triple."""
        return self.node_batch.index_select(0, self.head)

    def entity_embedding(self) -> Tensor:
        """[n, d] text embeddings of the local nodes (zeros for CVT nodes)."""
        return self.tables.entity.index_select(0, self.entity_idx)

    def relation_embedding(self) -> Tensor:
        """[m, d] text embedding of each triple's relation."""
        return self.tables.relation.index_select(0, self.relation)


def resolve_device(name: str = "auto") -> str:
    """The torch device a setting names; "auto" is CUDA when present, else the CPU. A device torch cannot
    use here (a typo, CUDA where there is none) is refused at once, not at the first tensor minutes into a
    training run (every training entry point resolves it first, in `prepare_cpu`)."""
    from kgdb.errors import InputError

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(name)
    except RuntimeError:
        raise InputError(f"{name!r} is not a torch device; use auto, cpu, cuda or cuda:N", path="KGDB_DEVICE") from None
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise InputError(
            f"{name}: torch {torch.__version__} sees {torch.cuda.device_count()} CUDA device(s) on this machine; "
            "use auto or cpu",
            path="KGDB_DEVICE",
        )
    return name


LabelKind = Literal["triples", "entities"]
ReturnKind = Literal["triple_scores", "paths"]  # "paths": also `paths(x)` -> (scores, paths per question)
PATH_FLOOR = 1.0  # a "paths" retriever scores the triples on its kept paths above this, all others below


def passed_count(scores) -> int:
    """How many triples a "paths" retriever passes on: those on one of its kept paths."""
    return int((scores > PATH_FLOOR).sum())


@dataclass
class Targets:
    """Training labels of one question, in every kind the data cache holds.

    `triples`: 1.0 for triples on a shortest topic-answer path ([m]); `entities`: 1.0 for the gold
    answer nodes ([n]). A retriever's `label_kind` says which one it learns from. `relation_targets`
    (bool [m, 2], or None): RAPL's relation targeting (Eq. 8) - column 0 the triple read forward,
    column 1 read backwards, leaves a topic by a relation the LLM targeted (R_*); only retrievers with
    `uses_relation_targets` read it.
    """

    triples: Tensor
    entities: Tensor
    relation_targets: Tensor | None = None
    # RAPL's topic -> answer paths over the labelled triples (`rapl.target_paths`): found on the first
    # epoch, kept for the next ones
    paths: list[list[int]] | None = field(default=None, compare=False, repr=False)

    def of(self, kind: LabelKind) -> Tensor:
        return self.triples if kind == "triples" else self.entities


@dataclass(frozen=True)
class NoConfig:
    """Config of a retriever without hyper-parameters."""


class Retriever(nn.Module):
    """Scores every candidate triple of a subgraph; higher = more relevant.

    A subclass is a retriever kgdb can train, evaluate, checkpoint and ask with once it is
    registered (`kgdb.models.registry.register`). It declares:
    - `name`, and `Config`: a frozen dataclass of its hyper-parameters (built from `--set k=v`
      and from a checkpoint's `config.json`); `__init__(config, embedding_dim)`;
    - `trainable`: whether it has weights (a trainable retriever needs a checkpoint to be used);
    - `label_kind`: what it learns from ("triples": shortest-path triples, "entities": answers);
    - `loss(scores, targets)`: its training objective (default: per-triple BCE, SubgraphRAG's);
    - `returns`: what `forward` gives (one score per triple); a "paths" retriever also has
      `paths(x) -> (scores, sampled paths per question)` and passes an adaptive number of triples.
    `prepare(tables)` may precompute per-table caches for inference; `node_feature_key()` and
    `node_features(x)` name and compute per-node features that depend only on the subgraph (not on
    the weights), which training computes once per cached subgraph and stores in the cache;
    `batched_training`: whether `forward` and `loss` take several questions at once (`--batch-size`);
    `uses_relation_targets`: whether `loss` reads `Targets.relation_targets` (`--relation-targets`);
    `inference_settings`: the `Config` fields that only steer inference (sampling, budgets), which
    `kgdb eval retrieval --set` may change on a trained checkpoint without retraining.
    """

    name: ClassVar[str] = ""
    Config: ClassVar[type] = NoConfig
    trainable: ClassVar[bool] = False
    label_kind: ClassVar[LabelKind] = "triples"
    returns: ClassVar[ReturnKind] = "triple_scores"
    description: ClassVar[str] = ""
    batched_training: ClassVar[bool] = False
    uses_relation_targets: ClassVar[bool] = False
    inference_settings: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: Any = None, embedding_dim: int = 0):
        super().__init__()
        self.cfg = config if config is not None else self.Config()
        self.embedding_dim = embedding_dim

    def forward(self, x: SubgraphTensors) -> Tensor:  # pragma: no cover - interface
        raise NotImplementedError

    def loss(self, scores: Tensor, targets: Targets) -> Tensor:
        """Mean per-triple BCE over all candidates (no negative sampling, no class weights)."""
        return F.binary_cross_entropy_with_logits(scores, targets.of(self.label_kind))

    def batch_loss(self, scores: Tensor, targets: list[Targets], x: SubgraphTensors) -> Tensor:
        """The loss of a batch of questions: the mean of their `loss`, each over its own triples and
        nodes, so a batch of one is exactly `loss` and every question weighs the same."""
        if len(targets) == 1:
            return self.loss(scores, targets[0])
        off = x.triple_offsets
        assert off is not None, "a batch of several questions carries its triple offsets"
        total = scores.new_zeros(())
        for b, y in enumerate(targets):
            total = total + self.loss(scores[off[b] : off[b + 1]], y)
        return total / len(targets)

    def prepare(self, tables: TensorTables) -> None:
        """Optional inference cache over the whole tables; the default needs none."""

    def node_feature_key(self) -> str | None:
        """Name of the per-node features `node_features` computes (None: none), keyed by the
        settings they depend on, so a cache never serves features of other settings."""
        return None

    def node_features(self, x: SubgraphTensors) -> Tensor:  # pragma: no cover - interface
        raise NotImplementedError

    def config(self) -> dict[str, Any]:
        return {"retriever": self.name, **asdict(self.cfg)}

    @torch.no_grad()
    def score(self, x: SubgraphTensors) -> Tensor:
        """Inference scores (eval mode, no autograd)."""
        if self.training:
            self.eval()
        return self(x)
