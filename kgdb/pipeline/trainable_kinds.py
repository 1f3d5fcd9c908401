"""The built-in trainable kinds, each declared once: its options (name, type, default, range, help),
its model's config dataclass and its train entry. Every trainable registered retriever is one kind
(`retriever_kind`); RRP adds its planner (`rrp-planner`), path ranker (`rrp-ranker`) and structural
reasoner (`rrp`). The registry is `kgdb.pipeline.trainables`.

No torch at import: the entries import their training code when they run.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

from kgdb.errors import InputError, KgdbError
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


@dataclass
class PlannerOptions(EpochOptions):
    hops: int = option(3, "The longest relation path the planner plans.", ge=1)


@dataclass
class RankerOptions(EpochOptions):
    model_settings: list[str] = field(
        default_factory=list,
        metadata=about(
            "Ranker hyper-parameter KEY=VALUE (repeatable); planner=NAME picks the trained "
            "planner it reads (default the newest).",
            flag="--set",
        ),
    )
    tune_per_file: int = option(
        300,
        "Val questions per file that choose the answering mode, λ1, θ and the answer closeness "
        "weight (a fixed prefix; 0: no tuning, the checkpoint answers with the defaults).",
        ge=0,
    )
    portable: bool = option(
        False,
        "A ranker for any graph (no planner, no relation ids; reads the graph's relation text table), "
        "trainable on several graphs at once (--on).",
    )
    on: list[str] = field(
        default_factory=list,
        metadata=about(
            "--portable: the Neo4j URI holding each --questions file, in order (one per file; default: --uri for all)."
        ),
    )
    sample_train: int | None = option(None, "N training questions of each file at random (fixed seed).", ge=1)
    sample_val: int | None = option(None, "N val questions of each file at random (fixed seed).", ge=1)
    positive_margin: float | None = option(
        None,
        "Of the best-F1 shortest candidate paths, only those whose question-relation "
        "cosine is within this of the closest are positives (default: all of them).",
    )


@dataclass
class StructuralOptions(EpochOptions):
    hops: int = option(3, "Reasoning steps.", ge=1)
    max_val: int | None = option(None, "Use only the first N validation questions (default 1000).", ge=1)
    resume: bool = option(False, "Continue a killed run from its last finished epoch (a finished run is tuned again).")
    tune_per_file: int = option(
        300,
        "Val questions per file that choose λ1, θ and the answer closeness weight (a fixed prefix; "
        "0: no tuning, the checkpoint answers with the defaults).",
        ge=0,
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


def train_planner_kind(job: TrainJob) -> TrainOutcome:
    from kgdb.pipeline.train import train_planner

    ckpt, result = train_planner(job.graph, job.settings, job.questions, job.options, job.events)
    summary = (
        f"best epoch {result.best_epoch}: val path Hit@1 {result.best_val_hit1:.4f}; "
        f"{result.train_questions} training questions "
        f"({result.skipped_no_path} without a path skipped); checkpoint {ckpt.path}"
    )
    return TrainOutcome(ckpt, result, summary)


def train_ranker_kind(job: TrainJob) -> TrainOutcome:
    from kgdb.pipeline.path_ranker_training import train_and_tune_ranker

    opts = job.options
    if opts.on and not opts.portable:
        raise InputError("a graph's own ranker reads that graph's planner: --on needs --portable", path="--on")
    if opts.on and len(opts.on) != len(job.questions):
        raise InputError(
            f"give one --on URI per --questions file: {len(opts.on)} for {len(job.questions)}", path="--on"
        )
    with ExitStack() as stack:
        by_uri = {job.settings.neo4j_uri: job.graph}
        for uri in opts.on:
            if uri not in by_uri:
                by_uri[uri] = stack.enter_context(job.connect(uri))
        graphs = [by_uri[u] for u in opts.on] or [job.graph] * len(job.questions)
        return train_and_tune_ranker(job, graphs)


def train_structural_kind(job: TrainJob) -> TrainOutcome:
    from kgdb.pipeline.structural import train_structural, tune_and_store
    from kgdb.training.structural import StructuralTrainConfig

    opts, events = job.options, job.events
    batch = StructuralTrainConfig().batch_size  # its steps report no question count: the bar counts full batches

    def on_examples(split: str, n: int, used: int, counts: dict) -> None:
        events.message(
            f"{split}: {used} of {n} questions have a training subgraph holding an answer "
            f"({counts['no_path']} without a "
            f"relation path, {counts['no_answer_in_subgraph']} answer cut by the frontier cap)"
        )

    ckpt, result = train_structural(
        job.graph,
        job.settings,
        job.questions,
        name=opts.name,
        steps=opts.hops,
        max_epochs=opts.max_epochs,
        patience=opts.patience,
        lr=opts.lr,
        seed=opts.seed,
        threads=opts.thread_count(),
        resume=opts.resume,
        max_val=opts.max_val or 1000,
        on_examples=on_examples,
        on_step=lambda loss: events.step(loss, batch),
        on_epoch=events.epoch,
    )
    outcome = TrainOutcome(
        ckpt,
        result,
        f"best epoch {result.best_epoch}: val Hit@1 {result.best_val_hit1:.4f}; "
        f"{result.train_questions} training subgraphs; checkpoint {ckpt.path}",
    )
    if opts.tune_per_file:
        events.message(outcome.summary)
        try:
            outcome.tuned = tune_and_store(
                job.graph,
                job.settings,
                ckpt,
                job.questions,
                per_file=opts.tune_per_file,
                on_start=lambda n: events.phase("tune λ1, θ, closeness weight on val", n),
                on_progress=events.advance,
            )
        except KgdbError as exc:
            events.message(f"rethinking not tuned: {exc}")
        outcome.summary = ""
    return outcome


PLANNER_KIND = TrainableKind(
    "rrp-planner",
    "RRP's relation-path planner (labels: shortest relation paths from topic to answer; selection: val path Hit@1).",
    PlannerOptions,
    train_planner_kind,
    several_files=True,
)
RANKER_KIND = TrainableKind(
    "rrp-ranker",
    "RRP's ranker over every enumerated relation path (reads a trained planner; with --portable none, for any graph).",
    RankerOptions,
    train_ranker_kind,
    several_files=True,
)
STRUCTURAL_KIND = TrainableKind(
    "rrp",
    "RRP's structural reasoner; then λ1, θ and the answer closeness weight are tuned on val.",
    StructuralOptions,
    train_structural_kind,
    several_files=True,
)
BUILTIN = (PLANNER_KIND, RANKER_KIND, STRUCTURAL_KIND)


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
