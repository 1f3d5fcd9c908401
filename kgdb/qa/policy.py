"""The answering policy: which retriever, checkpoint, planner, reasoner and prompt format answer a
question on the connected graph, and why each was chosen, decided in one place.

`kgdb ask` (`--explain` prints the plan without answering), `kgdb eval qa`, `Kgdb.ask` and the
neo4j-graphrag adapter call `choose_answering`; `AskPipeline` then builds exactly what the plan
names. The rules, in order:

- retriever: the one asked for; else, for a planner other than `trained`, the question-level retriever
  that answers from relation paths; else a registered question-level retriever (`kgdb.qa.question_retrievers`)
  with a model of its own trained on this graph, when the reasoner is `auto` or the one it suits (RRP:
  its planner or ranker); else, with `auto`, no LLM and no checkpoint named, one that answers well
  without either (RRP with the portable ranker shipped with kgdb, where it fits the graph's embedding
  model); else the relation-path retriever for a reasoner that needs paths, else subgraphrag.
- checkpoint: a tensor retriever's from `kgdb.pipeline.model_choice` (named, else trained on this
  graph, else what the caller's `Fallback` allows: the same method's shipped checkpoint, or a shipped
  stand-in); a question-level retriever's from its own `choose_model`.
- planner: for a retriever that answers from relation paths, the registered planner asked for
  (`kgdb.qa.planners`).
- reasoner: the one asked for; `auto` is the LLM when KGDB_LLM_MODEL is set, else the reasoner the
  retriever suits (`rrp` on relation paths), else extractive.
- format: the one asked for; else `paths` when an LLM reads the relation paths of a model trained on
  this graph, else `triples`.

Every retriever, planner and reasoner is looked up by name in its registry: nothing here knows RRP.

Only config files and one fingerprint query are read: no model is loaded, no torch imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.errors import InputError
from kgdb.pipeline.model_choice import UNTRAINED_BUILTINS, Fallback, GraphFacts, ModelChoice, choose_retriever_model
from kgdb.qa.planners import DEFAULT_PLANNER, planner_kind
from kgdb.qa.prompts import FORMATS
from kgdb.qa.question_retrievers import QUESTION_RETRIEVERS, QuestionRetrieverKind, path_retriever
from kgdb.qa.reasoners import AUTO, reasoner_choices, reasoner_kind
from kgdb.scoring.twins import TRAINABLE_BUILTINS

DEFAULT_SUBGRAPH_RETRIEVER = "subgraphrag"
GIVEN = "given"  # a retriever or reasoner object the caller built itself


@dataclass(frozen=True)
class AnswerRequest:
    """What the caller asked for; None / `auto` leave the choice to the policy."""

    retriever: str | None = None
    checkpoint: str | None = None
    reasoner: str = AUTO
    planner: str = DEFAULT_PLANNER
    fmt: str | None = None
    fallback: Fallback = Fallback.STAND_IN
    given_retriever: str | None = None  # the name of a retriever object passed in (no choice to make)
    given_reasoner: str | None = None  # the name of a reasoner object passed in


@dataclass(frozen=True)
class Decision:
    part: str  # retriever | checkpoint | planner | reasoner | format
    value: str
    why: str


@dataclass(frozen=True)
class AnsweringPlan:
    """What answers, and why; `notes` are told with every answer (a stand-in model answers)."""

    retriever: str
    model: ModelChoice | None  # the retriever's checkpoint (or planner's / ranker's); None where it has none
    planner: str | None  # a registered planner, for a retriever that answers from relation paths
    reasoner: str  # a registered name, or `given`
    fmt: str
    decisions: tuple[Decision, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def checkpoint(self):
        return self.model.checkpoint if self.model else None

    def to_json(self) -> dict[str, Any]:
        ckpt = self.checkpoint
        return {
            "retriever": self.retriever,
            "checkpoint": ckpt.name if ckpt else None,
            "checkpoint_path": str(ckpt.path) if ckpt else None,
            "planner": self.planner,
            "reasoner": self.reasoner,
            "format": self.fmt,
            "why": {d.part: d.why for d in self.decisions},  # the last decision of each part
            "decisions": [{"part": d.part, "value": d.value, "why": d.why} for d in self.decisions],
            "notes": list(self.notes),
        }

    def lines(self) -> list[str]:
        """The plan as `part: value - why` lines, in the order the parts were decided."""
        return [f"{d.part}: {d.value} - {d.why}" for d in self.decisions]


def choose_answering(graph: Graph, settings: Settings, request: AnswerRequest) -> AnsweringPlan:
    """The plan for `request` on this graph (see the module docstring for the rules). Raises
    `InputError` for an unknown or contradictory choice and `NoCheckpointError` when the method
    asked for has no model and the request's `fallback` allows no stand-in."""
    _check(request)
    return _Planning(GraphFacts.of(graph), settings, request).plan()


def _check(request: AnswerRequest) -> None:
    if request.given_reasoner is None and request.reasoner not in reasoner_choices():
        raise InputError(f"{request.reasoner!r} is not one of {', '.join(reasoner_choices())}", path="--reasoner")
    if request.fmt is not None and request.fmt not in FORMATS:
        raise InputError(f"unknown format {request.fmt!r}; choose one of {', '.join(FORMATS)}", path="--format")
    planner_kind(request.planner)  # an unknown planner names the registered ones
    if request.retriever is not None:
        check_retriever(request.retriever)
    named = request.given_retriever or request.retriever
    kind = QUESTION_RETRIEVERS.find(named) if named is not None else None
    plans_paths = named is None or (kind is not None and kind.from_paths)
    if request.planner != DEFAULT_PLANNER and not plans_paths:
        takers = [name for name, kind in QUESTION_RETRIEVERS.items() if kind.from_paths]
        raise InputError(
            f"the {request.planner} planner plans relation paths: use it with a retriever that answers from "
            f"them (--retriever {' | '.join(takers) or 'none is registered'})",
            path="--planner",
        )


def check_retriever(name: str) -> None:
    """A registered question-level or tensor retriever; else `UnknownRetrieverError` listing both."""
    if name in QUESTION_RETRIEVERS or name in TRAINABLE_BUILTINS or name in UNTRAINED_BUILTINS:
        return
    from kgdb.models import registry  # torch: only for a name that is no built-in

    if name not in registry.RETRIEVERS:
        known = sorted([*QUESTION_RETRIEVERS.names(), *registry.names()])
        raise registry.UnknownRetrieverError(
            f"unknown retriever {name!r}; choose one of {', '.join(known)}", path="--retriever"
        )


class _Planning:
    """One `choose_answering` call: the decisions in order, each with its reason."""

    def __init__(self, facts: GraphFacts, settings: Settings, request: AnswerRequest):
        self.facts, self.settings, self.request = facts, settings, request
        self.llm = settings.llm_model or None
        self.decisions: list[Decision] = []
        self.notes: list[str] = []
        self.own_model = False  # chosen for a model of its own trained on this graph: an LLM then reads its paths

    def decide(self, part: str, value: str, why: str) -> str:
        self.decisions.append(Decision(part, value, why))
        return value

    def plan(self) -> AnsweringPlan:
        retriever, reasoner = self._route()
        model = self._model(retriever)
        if model is not None and model.retriever != retriever:  # a shipped stand-in answers instead
            retriever = model.retriever
        kind = QUESTION_RETRIEVERS.find(retriever)
        planner = self._planner() if kind is not None and kind.from_paths else None
        reasoner = self._reasoner(reasoner, kind)
        fmt = self._format(reasoner, kind)
        return AnsweringPlan(retriever, model, planner, reasoner, fmt, tuple(self.decisions), tuple(self.notes))

    # ---- retriever ----------------------------------------------------------------------------
    def _route(self) -> tuple[str, str]:
        """The retriever (with its reason) and the reasoner still to settle."""
        r = self.request
        reasoner = GIVEN if r.given_reasoner else r.reasoner
        if r.given_retriever:
            return self.decide("retriever", r.given_retriever, "a retriever object passed by the caller"), reasoner
        if r.retriever:
            return self.decide("retriever", r.retriever, "asked for (--retriever)"), reasoner
        if r.planner != DEFAULT_PLANNER and (paths := path_retriever()) is not None:
            why = f"the {r.planner} planner (--planner {r.planner}) plans relation paths"
            return self.decide("retriever", paths.name, why), reasoner
        if (question_level := self._question_level(reasoner)) is not None:
            return question_level, reasoner
        needs_paths = reasoner not in (AUTO, GIVEN) and reasoner_kind(reasoner).needs_paths
        if needs_paths and (paths := path_retriever(reasoner)) is not None:
            why = f"the {reasoner} reasoner answers from relation paths"
            return self.decide("retriever", paths.name, why), reasoner
        why = "the default subgraph retriever" + (
            " (no question-level retriever can answer here: see the notes)" if self.notes else ""
        )
        return self.decide("retriever", DEFAULT_SUBGRAPH_RETRIEVER, why), reasoner

    def _question_level(self, reasoner: str) -> str | None:
        """A registered question-level retriever with a model of its own trained on this graph, for
        `reasoner` if it is not `auto`; else, with `auto`, no LLM and no checkpoint named, one that
        answers well without either (why the others do not is noted); else None."""
        kinds = [kind for _, kind in QUESTION_RETRIEVERS.items()]
        for kind in kinds:
            if kind.trained_here is None or reasoner not in (AUTO, kind.reasoner):
                continue
            if (trained := kind.trained_here(self.facts, self.settings)) is not None:
                self.own_model = True
                return self.decide("retriever", kind.name, trained)
        if reasoner == AUTO and not self.request.checkpoint and not self.llm:
            for kind in kinds:
                if kind.without_llm is not None:
                    fits, why = kind.without_llm(self.facts)
                    if fits:
                        return self.decide("retriever", kind.name, why)
                    self.notes.append(why)
        return None

    # ---- checkpoint ---------------------------------------------------------------------------
    def _model(self, retriever: str) -> ModelChoice | None:
        r = self.request
        if r.given_retriever:
            return None
        kind = QUESTION_RETRIEVERS.find(retriever)
        if kind is not None and kind.choose_model is None:
            if r.checkpoint:
                raise InputError(f"the {retriever} retriever takes no checkpoint", path="--checkpoint")
            return None
        if kind is not None and kind.choose_model is not None:
            # a planner that plans alone needs no model; one that exists is its fallback
            required = not kind.from_paths or planner_kind(r.planner).needs_checkpoint
            model = kind.choose_model(self.facts, self.settings, r.checkpoint, required)
        else:
            model = choose_retriever_model(
                self.facts, self.settings, retriever, r.checkpoint, r.fallback, asked=r.retriever is not None
            )
        if model.retriever != retriever:
            self.decide("retriever", model.retriever, f"stands in for {retriever}")
        self.decide("checkpoint", model.checkpoint_text(), model.why)
        if model.note:
            self.notes.append(model.note)
        return model

    def _planner(self) -> str:
        name = self.request.planner
        kind = planner_kind(name)
        if name == DEFAULT_PLANNER:
            return self.decide("planner", name, "the checkpoint above ranks or plans the relation paths")
        fallback = ", the checkpoint above is its fallback" if not kind.needs_checkpoint else ""
        return self.decide("planner", name, f"asked for (--planner {name}): {kind.summary}{fallback}")

    # ---- reasoner and format ------------------------------------------------------------------
    def _reasoner(self, reasoner: str, kind: QuestionRetrieverKind | None) -> str:
        if reasoner == GIVEN:
            return self.decide(
                "reasoner", self.request.given_reasoner or GIVEN, "a reasoner object passed by the caller"
            )
        if reasoner != AUTO:  # a reasoner given evidence it cannot read says so when asked (the rrp reasoner)
            return self.decide("reasoner", reasoner, "asked for (--reasoner)")
        if self.llm:
            return self.decide("reasoner", "openai", f"an LLM is configured (KGDB_LLM_MODEL={self.llm})")
        if kind is not None and kind.reasoner is not None:
            return self.decide(
                "reasoner",
                kind.reasoner,
                f"no LLM is configured (KGDB_LLM_MODEL is unset): the {kind.reasoner} reasoner answers from what "
                f"{kind.name} retrieved",
            )
        return self.decide(
            "reasoner",
            "extractive",
            "no LLM is configured (KGDB_LLM_MODEL is unset): the end points of the best "
            "relation path through the retrieved triples",
        )

    def _format(self, reasoner: str, kind: QuestionRetrieverKind | None) -> str:
        if self.request.fmt:
            return self.decide("format", self.request.fmt, "asked for (--format)")
        own_paths = self.own_model and kind is not None and kind.from_paths
        if own_paths and self.request.given_reasoner is None and reasoner_kind(reasoner).uses_llm:
            return self.decide(
                "format", "paths", "an LLM reads the grounded relation paths of the model trained on this graph"
            )
        return self.decide("format", "triples", "the retrieved triples, best first")
