"""The registry of trainable kinds: one name -> one `TrainableKind` (its options dataclass, its model's
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
import enum
import typing
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from kgdb.bounds import out_of_range
from kgdb.config import Settings
from kgdb.errors import InputError
from kgdb.training.events import TrainEvents

ENTRY_POINT_GROUP = "kgdb.trainables"


def option(
    default: Any = None,
    help: str = "",
    *,
    flag: str | None = None,
    ge: float | None = None,
    choices: tuple[str, ...] | None = None,
) -> Any:
    """A field of a kind's options dataclass: its `--flag` (default from the field name), help text,
    lower bound and closed choices."""
    metadata = {
        "help": help,
        "flag": flag,
        **({"ge": ge} if ge is not None else {}),
        **({"choices": choices} if choices else {}),
    }
    return field(default=default, metadata=metadata)


def about(help: str, *, flag: str | None = None) -> dict:
    """The metadata of a list field of a kind's options (a repeatable `--flag`):
    `field(default_factory=list, metadata=about(...))`."""
    return {"help": help, "flag": flag}


def flag_of(f: dataclasses.Field) -> str:
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


@dataclass
class TrainJob:
    """Everything a train entry reads: the graph the questions live on, the settings, the question
    files, the kind's options, where to report, and how to open another graph by URI (`--on`)."""

    graph: Any  # kgdb.cypher.Graph
    settings: Settings
    questions: list[Path]
    options: Any
    events: TrainEvents
    connect: Callable[[str], AbstractContextManager]


@dataclass
class TrainOutcome:
    checkpoint: Any  # kgdb.models.checkpoints.Checkpoint
    result: Any  # the kind's result (epochs, best epoch, ...)
    summary: str  # the closing line: the best epoch, its val figures, the checkpoint
    tuned: dict | None = None  # answering settings chosen on val after training (rrp, rrp-ranker)


@dataclass(frozen=True)
class TrainableKind:
    name: str
    summary: str  # one line for `kgdb train --help`
    options: type  # dataclass of the kind's options, fields declared with `option`
    train: Callable[[TrainJob], TrainOutcome]
    config: type | None = None  # the model's config dataclass (the keys `--set KEY=VALUE` takes)
    several_files: bool = False  # one model for several question files
    without: tuple[str, ...] = ()  # fields of `options` this kind neither shows nor accepts (they keep their defaults)

    def option_fields(self) -> list[dataclasses.Field]:
        return [f for f in dataclasses.fields(self.options) if f.name not in self.without]

    def make_options(self, values: dict[str, Any]) -> Any:
        """The kind's options from keyword values (the API), checked: unknown names, ranges and choices
        are refused naming the option."""
        fields = {f.name: f for f in self.option_fields()}
        if unknown := sorted(set(values) - set(fields)):
            raise InputError(
                f"{self.name} has no option {', '.join(unknown)} (options: {', '.join(fields)})", path=unknown[0]
            )
        for key, value in values.items():
            f = fields[key]
            if isinstance(value, enum.Enum):
                value = values[key] = value.value
            if (choices := f.metadata.get("choices")) and value not in choices:
                raise InputError(
                    f"{self.name} option {key} takes one of {', '.join(choices)}, got {value!r}", path=flag_of(f)
                )
            if value is not None and (violated := out_of_range(f, value)) is not None:
                raise InputError(f"{self.name} option {key} must be {violated}, got {value!r}", path=flag_of(f))
        return self.options(**values)

    def option_types(self) -> dict[str, Any]:
        return typing.get_type_hints(self.options)


_REGISTRY: dict[str, TrainableKind] = {}
_loaded = False


class UnknownTrainableError(InputError):
    """No trainable kind is registered under that name."""


def register_trainable(kind: TrainableKind) -> TrainableKind:
    """Make `kind` trainable under `kind.name` (a later registration replaces it)."""
    if not isinstance(kind, TrainableKind):
        raise TypeError(f"{kind!r} is not a kgdb.pipeline.trainables.TrainableKind")
    if not kind.name or not kind.name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(
            f"a trainable kind's name must be a non-empty word (letters, digits, - or _), got {kind.name!r}"
        )
    if not dataclasses.is_dataclass(kind.options):
        raise TypeError(f"{kind.name}: options must be a dataclass")
    _REGISTRY[kind.name] = kind
    return kind


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        obj = ep.load()
        if isinstance(obj, TrainableKind):
            register_trainable(obj)


def _all() -> dict[str, TrainableKind]:
    """Registered kinds, and a kind for every trainable registered retriever not shadowed by one
    (retrievers register late: a test's `@register` adds one after the first look-up)."""
    _load()
    from kgdb.pipeline.trainable_kinds import retriever_kinds

    return {**retriever_kinds(), **_REGISTRY}


def trainable(name: str) -> TrainableKind:
    kinds = _all()
    try:
        return kinds[name]
    except KeyError:
        raise UnknownTrainableError(
            f"unknown trainable kind {name!r}; registered: {', '.join(sorted(kinds))}", path="KIND"
        ) from None


def trainable_names() -> list[str]:
    return sorted(_all())


def train(kind: str, job_of: Callable[[TrainableKind], TrainJob]) -> TrainOutcome:
    """Look `kind` up and run its train entry on the job `job_of(kind)` builds."""
    found = trainable(kind)
    return found.train(job_of(found))
