"""RRP's trainable kinds, registered under the `kgdb.trainables` entry-point group like any plugin's:
its planner (`rrp-planner`), path ranker (`rrp-ranker`) and structural reasoner (`rrp`).

No torch at import: the entries import their training code when they run.
"""

from __future__ import annotations

from contextlib import ExitStack

from kgdb.errors import InputError, KgdbError
from kgdb.pipeline.trainables import TrainableKind, TrainJob, TrainOutcome
from kgdb.rrp.options import PlannerOptions, RankerOptions, StructuralOptions

# ---- the train entries -------------------------------------------------------------------------------


def train_planner_kind(job: TrainJob) -> TrainOutcome:
    from kgdb.rrp.planner_training import train_planner

    ckpt, result = train_planner(job.graph, job.settings, job.questions, job.options, job.events)
    summary = (
        f"best epoch {result.best_epoch}: val path Hit@1 {result.best_val_hit1:.4f}; "
        f"{result.train_questions} training questions "
        f"({result.skipped_no_path} without a path skipped); checkpoint {ckpt.path}"
    )
    return TrainOutcome(ckpt, result, summary)


def train_ranker_kind(job: TrainJob) -> TrainOutcome:
    from kgdb.rrp.ranker_training import train_and_tune_ranker

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
    from kgdb.rrp.structural import train_structural, tune_and_store
    from kgdb.rrp.training.structural import StructuralTrainConfig

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
