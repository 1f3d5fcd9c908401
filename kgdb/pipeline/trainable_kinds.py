"""The built-in trainable kinds, each declared once: its options (name, type, default, range, help),
its model's config dataclass and its train entry. Every trainable registered retriever is one kind
(`retriever_kind`); RRP adds its planner (`rrp-planner`), path ranker (`rrp-ranker`) and structural
reasoner (`rrp`). The registry is `kgdb.pipeline.trainables`.

No torch at import: the entries import their training code when they run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

from kgdb.errors import InputError
from kgdb.pipeline.trainables import (
    TrainableKind,
    TrainJob,
    TrainOutcome,
    about,
    option,
)

if TYPE_CHECKING:
    from kgdb.models.base import Retriever

LABEL_CHOICES = ("shortest", "rapl", "reg")


def default_threads() -> int:
    """Half the cores, at most 8: the tiny per-question matmuls of training gain nothing from more,
    and on a shared 2-core machine a second thread only spin-waits (epochs 6x slower measured)."""
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def parse_pairs(pairs: list[str] | dict) -> dict[str, str]:
    """`--set KEY=VALUE` options as a dict (values as given: the config they go to types them); the
    Python API may pass the dict itself."""
    if isinstance(pairs, dict):
        return dict(pairs)
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected KEY=VALUE, got {pair!r}", path="--set")
        out[key.strip()] = value.strip()
    return out


@dataclass
class EpochOptions:
    """What every kind's loop takes (`kgdb.training.fit`)."""

    name: str | None = option(None, "Checkpoint name (default <kind>-<dataset>).")
    max_epochs: int = option(50, "Upper bound; early stopping usually ends sooner.", ge=1)
    patience: int = option(10, "Epochs without a better validation figure before stopping.")
    lr: float = option(1e-3, "Learning rate (Adam).")
    seed: int = option(42, "Seed of the initial weights and the epochs' order.")
    threads: int = option(0, "CPU threads for torch (default: half the cores, at most 8).")

    def thread_count(self) -> int:
        return self.threads or default_threads()


@dataclass
class RetrieverOptions(EpochOptions):
    hops: int | None = option(None, "Subgraph radius around the topic entities (default 2).", ge=1)
    cap: int | None = option(None, "Per-node expansion cap (default: the fetch default).", ge=1)
    model_settings: list[str] = field(
        default_factory=list,
        metadata=about("Retriever hyper-parameter KEY=VALUE (repeatable), e.g. hidden=512.", flag="--set"),
    )
    max_train: int | None = option(None, "Use only the first N training questions.", ge=1)
    max_val: int | None = option(None, "Use only the first N validation questions.", ge=1)
    resume: bool = option(False, "Continue a killed run from its last finished epoch.")
    labels: str = option(
        "shortest",
        "Training positives: shortest-path triples, or the triples on the paths `kgdb label --method "
        "rapl|reg` stored (questions without them fall back to shortest).",
        choices=LABEL_CHOICES,
    )
    relation_targets: bool = option(
        False,
        "rapl: add RAPL's relation targeting (Eq. 8) to the question-triple loss: the triples "
        "leaving a topic by a relation `kgdb label --method rapl-relations` stored for the question are "
        "positives too (questions without R_* unchanged). Combines with any --labels.",
    )
    batch_size: int = option(
        1,
        "Questions per optimiser step, scored as one disjoint union (retrievers that support it: "
        "subgraphrag); the loss is the mean over the questions.",
        ge=1,
    )
    nproc: int = option(
        1,
        "Data-parallel training processes on this machine (PyTorch DDP: gloo on CPU, NCCL with one GPU "
        "each); the database is read once, by this process.",
        ge=1,
    )


# ---- the train entries -------------------------------------------------------------------------------


def train_retriever_kind(job: TrainJob) -> TrainOutcome:
    from kgdb.pipeline.train import train_retriever

    kind = job.options.kind
    if len(job.questions) != 1:
        raise InputError(f"{kind} trains on one question file, got {len(job.questions)}", path="--questions")
    if job.options.nproc > 1:
        job.events.message(
            f"data-parallel training in {job.options.nproc} processes (DDP); epoch lines come from rank 0"
        )
    ckpt, result = train_retriever(job.graph, job.settings, kind, job.questions[0], job.options, job.events)
    if result.resumed_from_epoch:
        job.events.message(f"resumed after epoch {result.resumed_from_epoch}")
    seconds = [e.seconds for e in result.epochs]
    summary = (
        f"best epoch {result.best_epoch}: val triple recall@100 {result.best_val_triple_recall:.4f}; "
        f"{len(result.epochs)} epochs, "
        f"{sum(seconds) / max(len(seconds), 1):.1f} s/epoch; checkpoint {ckpt.path}"
    )
    return TrainOutcome(ckpt, result, summary)


@cache
def retriever_kind(cls: type[Retriever]) -> TrainableKind:
    """The kind of a trainable registered retriever: its options carry its name (`kind`); the options
    its loss has no use for are left out."""
    options: type = dataclass(
        type(f"{cls.__name__}Options", (RetrieverOptions,), {"kind": cls.name, "__module__": __name__})
    )
    without = (() if cls.uses_relation_targets else ("relation_targets",)) + (
        () if cls.batched_training else ("batch_size",)
    )
    summary = (cls.description or f"The {cls.name} retriever").rstrip(".")
    return TrainableKind(
        cls.name,
        f"{summary} (a registered retriever; selection: val triple recall@100).",
        options,
        train_retriever_kind,
        config=cls.Config,
        without=without,
    )


def retriever_kinds() -> dict[str, TrainableKind]:
    from kgdb.models import registry

    return {
        name: retriever_kind(registry.get(name))  # type: ignore[arg-type]  # mypy: a type[nn.Module] is not Hashable
        for name in registry.names()
        if registry.get(name).trainable
    }
