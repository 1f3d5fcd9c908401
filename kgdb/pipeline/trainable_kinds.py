"""The trainable kinds of the registered retrievers: every trainable one is a kind (`retriever_kind`), its
options `RetrieverOptions` less those its loss has no use for. RRP registers its own kinds through the
`kgdb.trainables` entry-point group (`kgdb.rrp.kinds`). The registry is `kgdb.pipeline.trainables`.

No torch at import: the entries import their training code when they run.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from kgdb.errors import InputError
from kgdb.pipeline.trainable import RetrieverOptions, TrainableKind, TrainJob, TrainOutcome

if TYPE_CHECKING:
    from kgdb.models.base import Retriever


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
