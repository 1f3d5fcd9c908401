"""What a trainable kind is: its options (each declared once: name, type, default, range, help), its train
entry, the job that entry gets and the outcome it returns; and the options every kind that trains for epochs
shares. The registry of kinds is `kgdb.pipeline.trainables`; the kinds of the registered retrievers are
`kgdb.pipeline.trainable_kinds`. No torch here."""

from __future__ import annotations

import dataclasses
import enum
import os
import typing
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgdb.bounds import out_of_range
from kgdb.config import Settings
from kgdb.errors import InputError
from kgdb.training.events import TrainEvents


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
