"""The answering policy: which retriever, checkpoint, planner, reasoner and prompt format answer a
question on the connected graph, and why each was chosen, decided in one place.

`kgdb ask` (`--explain` prints the plan without answering), `kgdb eval qa`, `Kgdb.ask` and the
neo4j-graphrag adapter call `choose_answering`; `AskPipeline` then builds exactly what the plan
names. The rules, in order:

- retriever: the one asked for; else RRP (relation paths) when an RRP planner or ranker was trained
  on this graph and the reasoner is `auto` or `rrp`; else, with `auto`, no LLM and no checkpoint
  named, RRP with the portable ranker shipped with kgdb where it fits the graph's embedding model;
  else relation paths for a reasoner that needs them, else subgraphrag.
- checkpoint: `kgdb.pipeline.model_choice` (named, else trained on this graph, else what the
  caller's `Fallback` allows: the same method's shipped checkpoint, or a shipped stand-in).
- reasoner: the one asked for; `auto` is `rrp` on RRP without an LLM, else the LLM when
  KGDB_LLM_MODEL is set, else extractive.
- format: the one asked for; else `paths` when an LLM reads the paths of an RRP model trained on
  this graph, else `triples`.

Only config files and one fingerprint query are read: no model is loaded, no torch imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.errors import InputError
from kgdb.pipeline.model_choice import (
    PLANNER_KIND,
    RANKER_KIND,
    Fallback,
    GraphFacts,
    ModelChoice,
    choose_path_model,
    choose_retriever_model,
    newest_trained,
    portable_ranker_misfit,
)
from kgdb.qa.prompts import FORMATS
from kgdb.qa.reasoners import AUTO, reasoner_choices, reasoner_kind

RELATION_PATHS = "relation-paths"  # not a tensor retriever: plans relation paths and grounds them in Cypher
DEFAULT_SUBGRAPH_RETRIEVER = "subgraphrag"
PLANNERS = ("trained", "llm")
GIVEN = "given"  # a retriever or reasoner object the caller built itself


@dataclass(frozen=True)
class AnswerRequest:
    """What the caller asked for; None / `auto` leave the choice to the policy."""

    retriever: str | None = None
    checkpoint: str | None = None
    reasoner: str = AUTO
    planner: str = "trained"
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
    model: (
        ModelChoice | None
    )  # the retriever's checkpoint, or relation paths' planner/ranker; None for a given retriever
    planner: str | None  # trained | llm, for relation paths
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
    if request.planner not in PLANNERS:
        raise InputError(f"{request.planner!r} is not one of {', '.join(PLANNERS)}", path="--planner")
    named = request.given_retriever or request.retriever
    if request.planner == "llm" and named not in (None, RELATION_PATHS):
        raise InputError(
            "the LLM planner plans relation paths: use it with --retriever relation-paths (or --reasoner rrp)",
            path="--planner",
        )


class _Planning:
    """One `choose_answering` call: the decisions in order, each with its reason."""

    def __init__(self, facts: GraphFacts, settings: Settings, request: AnswerRequest):
        self.facts, self.settings, self.request = facts, settings, request
        self.llm = settings.llm_model or None
        self.decisions: list[Decision] = []
        self.notes: list[str] = []
        self.own_rrp = False  # RRP was chosen because it was trained on this graph: an LLM then reads its paths

    def decide(self, part: str, value: str, why: str) -> str:
        self.decisions.append(Decision(part, value, why))
        return value

    def plan(self) -> AnsweringPlan:
        retriever, reasoner = self._route()
        model = self._model(retriever)
        if model is not None and model.retriever != retriever:  # a shipped stand-in answers instead
            retriever = model.retriever
        planner = self._planner() if retriever == RELATION_PATHS else None
        reasoner = self._reasoner(reasoner, retriever)
        fmt = self._format(reasoner)
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
        if r.planner == "llm":
            return self.decide(
                "retriever", RELATION_PATHS, "the LLM planner (--planner llm) plans relation paths"
            ), reasoner
        own = self._own_path_model() if reasoner in (AUTO, "rrp") else None
        if own is not None:
            self.own_rrp = True
            return self.decide("retriever", RELATION_PATHS, f"an RRP model ({own}) was trained on this graph"), reasoner
        if reasoner == AUTO and not r.checkpoint and not self.llm:
            misfit = portable_ranker_misfit(self.facts)
            if misfit is None:
                return self.decide(
                    "retriever",
                    RELATION_PATHS,
                    "no LLM is configured and no RRP model was trained on this graph, "
                    "so the portable ranker shipped with kgdb answers from relation paths",
                ), reasoner
            self.notes.append(
                f"the portable rrp-ranker shipped with kgdb does not fit this graph's embedding model ({misfit}), "
                "so RRP did not answer"
            )
        if reasoner not in (AUTO, GIVEN) and reasoner_kind(reasoner).needs_paths:
            return self.decide(
                "retriever", RELATION_PATHS, f"the {reasoner} reasoner answers from relation paths"
            ), reasoner
        why = "the default subgraph retriever" + (" (RRP cannot answer here: see the notes)" if self.notes else "")
        return self.decide("retriever", DEFAULT_SUBGRAPH_RETRIEVER, why), reasoner

    def _own_path_model(self) -> str | None:
        for kind in (RANKER_KIND, PLANNER_KIND):
            if (ckpt := newest_trained(self.settings, self.facts, kind)) is not None:
                return f"{kind} {ckpt.name}"
        return None

    # ---- checkpoint ---------------------------------------------------------------------------
    def _model(self, retriever: str) -> ModelChoice | None:
        r = self.request
        if r.given_retriever:
            return None
        if retriever == RELATION_PATHS:
            # the LLM planner needs no model; one that exists is its fallback
            model = choose_path_model(self.facts, self.settings, r.checkpoint, required=r.planner != "llm")
        else:
            model = choose_retriever_model(self.facts, self.settings, retriever, r.checkpoint, r.fallback)
        if model.retriever != retriever:
            self.decide("retriever", model.retriever, f"stands in for {retriever}")
        self.decide("checkpoint", model.checkpoint_text(), model.why)
        if model.note:
            self.notes.append(model.note)
        return model

    def _planner(self) -> str:
        if self.request.planner == "llm":
            return self.decide(
                "planner",
                "llm",
                "asked for (--planner llm): the LLM of KGDB_LLM_MODEL plans the relation paths, "
                "the checkpoint above is its fallback",
            )
        return self.decide("planner", "trained", "the checkpoint above ranks or plans the relation paths")

    # ---- reasoner and format ------------------------------------------------------------------
    def _reasoner(self, reasoner: str, retriever: str) -> str:
        if reasoner == GIVEN:
            return self.decide(
                "reasoner", self.request.given_reasoner or GIVEN, "a reasoner object passed by the caller"
            )
        if reasoner != AUTO:  # the rrp reasoner given other evidence says so when asked (PathReasoner.reason)
            return self.decide("reasoner", reasoner, "asked for (--reasoner)")
        if self.llm:
            return self.decide("reasoner", "openai", f"an LLM is configured (KGDB_LLM_MODEL={self.llm})")
        if retriever == RELATION_PATHS:
            return self.decide(
                "reasoner", "rrp", "no LLM is configured (KGDB_LLM_MODEL is unset): RRP answers from its relation paths"
            )
        return self.decide(
            "reasoner",
            "extractive",
            "no LLM is configured (KGDB_LLM_MODEL is unset): the end points of the best "
            "relation path through the retrieved triples",
        )

    def _format(self, reasoner: str) -> str:
        if self.request.fmt:
            return self.decide("format", self.request.fmt, "asked for (--format)")
        if self.own_rrp and self.request.given_reasoner is None and reasoner_kind(reasoner).uses_llm:
            return self.decide(
                "format", "paths", "an LLM reads the grounded relation paths of the RRP model trained on this graph"
            )
        return self.decide("format", "triples", "the retrieved triples, best first")
