"""The registry of trainable kinds: one name -> one `kgdb.pipeline.trainable.TrainableKind` (its options dataclass, its model's
config dataclass and its train entry), so `kgdb train KIND`, `Kgdb.train(KIND, ...)` and the help
texts are built from one table.

Every trainable registered retriever is a kind (`kgdb.pipeline.trainable_kinds.retriever_kind`), and
so are RRP's planner, path ranker and structural reasoner. A third-party package registers a kind
through the `kgdb.trainables` entry-point group (the entry point names a `TrainableKind` or a module
that calls `register_trainable` when imported); a script or test calls `register_trainable`.

No torch here: the command line lists the kinds' names and options before any model is imported.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from kgdb.pipeline.trainable import TrainableKind, TrainJob, TrainOutcome
from kgdb.registry import UnknownNameError, registry_of

ENTRY_POINT_GROUP = "kgdb.trainables"


class UnknownTrainableError(UnknownNameError):
    """No trainable kind is registered under that name."""


def _check(kind: TrainableKind) -> None:
    if not dataclasses.is_dataclass(kind.options):
        raise TypeError(f"{kind.name}: options must be a dataclass")


def _retriever_kinds() -> dict[str, TrainableKind]:
    """A kind for every trainable registered retriever, computed at each look-up: a test's `@register`
    adds a retriever after the first one."""
    from kgdb.pipeline.trainable_kinds import retriever_kinds

    return retriever_kinds()


TRAINABLES = registry_of(
    TrainableKind,
    "trainable kind",
    ENTRY_POINT_GROUP,
    "KIND",
    callables=(),
    check=_check,
    derived=_retriever_kinds,
    error=UnknownTrainableError,
)


def register_trainable(kind: TrainableKind) -> TrainableKind:
    """Make `kind` trainable under `kind.name` (a later registration replaces it)."""
    return TRAINABLES.register(kind)


def trainable(name: str) -> TrainableKind:
    return TRAINABLES.get(name)


def trainable_names() -> list[str]:
    return TRAINABLES.names()


def train(kind: str, job_of: Callable[[TrainableKind], TrainJob]) -> TrainOutcome:
    """Look `kind` up and run its train entry on the job `job_of(kind)` builds."""
    found = trainable(kind)
    return found.train(job_of(found))
