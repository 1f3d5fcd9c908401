"""What RRP registers through kgdb's entry-point groups, like any plugin: its trainable kinds
(`kgdb.trainables`: the planner `rrp-planner`, the path ranker `rrp-ranker`, the structural reasoner
`rrp`), its question-level retriever (`kgdb.question_retrievers`: `relation-paths`) and its planners
(`kgdb.planners`: `trained`, `llm`). Its reasoner (`kgdb.reasoners`: `rrp`) is `kgdb.rrp.reasoner.KIND`.

No torch or neo4j driver at import: the entries import what they run when they run.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING

from kgdb.errors import InputError, KgdbError
from kgdb.pipeline.trainable import TrainableKind, TrainJob, TrainOutcome
from kgdb.qa.planners import DEFAULT_PLANNER, PlannerKind
from kgdb.qa.question_retrievers import AskOptions, QuestionRetrieverKind
from kgdb.rrp.options import PlannerOptions, RankerOptions, StructuralOptions

if TYPE_CHECKING:
    from kgdb.config import Settings
    from kgdb.cypher import Graph
    from kgdb.pipeline.model_choice import GraphFacts, ModelChoice
    from kgdb.rrp.llm_planner import LLMPathPlanner
    from kgdb.rrp.retriever import RelationPathRetriever

RELATION_PATHS = "relation-paths"  # not a tensor retriever: plans relation paths and grounds them in Cypher

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
        opts,
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
            outcome.tuned = tune_and_store(job, ckpt)
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


# ---- the question-level retriever and its planners --------------------------------------------------


def build_relation_paths(graph: Graph, settings: Settings, options: AskOptions) -> RelationPathRetriever:
    from kgdb.rrp.model_choice import relation_path_retriever

    return relation_path_retriever(
        graph, settings, checkpoint=options.checkpoint, k=options.k, write=options.write, planner=options.planner
    )


def path_model(facts: GraphFacts, settings: Settings, checkpoint: str | None, required: bool) -> ModelChoice:
    from kgdb.pipeline.model_choice import choose_path_model

    return choose_path_model(facts, settings, checkpoint, required=required)


def rrp_trained_here(facts: GraphFacts, settings: Settings) -> str | None:
    from kgdb.pipeline.model_choice import PLANNER_KIND, RANKER_KIND, newest_trained

    for kind in (RANKER_KIND, PLANNER_KIND):
        if (ckpt := newest_trained(settings, facts, kind)) is not None:
            return f"an RRP model ({kind} {ckpt.name}) was trained on this graph"
    return None


def portable_ranker_fits(facts: GraphFacts) -> tuple[bool, str]:
    from kgdb.pipeline.model_choice import portable_ranker_misfit

    misfit = portable_ranker_misfit(facts)
    if misfit is None:
        return True, (
            "no LLM is configured and no RRP model was trained on this graph, "
            "so the portable ranker shipped with kgdb answers from relation paths"
        )
    return False, (
        f"the portable rrp-ranker shipped with kgdb does not fit this graph's embedding model ({misfit}), "
        "so RRP did not answer"
    )


RELATION_PATHS_RETRIEVER = QuestionRetrieverKind(
    RELATION_PATHS,
    build_relation_paths,
    "RRP: relation paths planned by the planner or ranker trained for this graph, else the portable ranker "
    "shipped with kgdb, grounded in Cypher",
    evidence="triples of the planned relation paths grounded in Cypher",
    from_paths=True,
    reasoner="rrp",
    choose_model=path_model,
    trained_here=rrp_trained_here,
    without_llm=portable_ranker_fits,
)


def build_llm_planner(graph: Graph, settings: Settings, checkpoint: str | None) -> LLMPathPlanner:
    from kgdb.rrp.llm_planner import llm_planner

    return llm_planner(graph, settings, checkpoint)


TRAINED_PLANNER = PlannerKind(
    DEFAULT_PLANNER,
    lambda graph, settings, checkpoint: None,  # the retriever plans with the checkpoint it was given
    "the trained ranker or planner for this graph, else the portable ranker shipped with kgdb",
)
LLM_PLANNER = PlannerKind(
    "llm",
    build_llm_planner,
    "the OpenAI-compatible LLM of KGDB_LLM_BASE_URL / KGDB_LLM_MODEL, prompt plan_paths_v1; the trained "
    "ranker or planner, else the shipped portable ranker, is its fallback",
    uses_llm=True,
    needs_checkpoint=False,
)
