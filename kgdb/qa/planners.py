"""The registry of relation-path planners: one name -> one way to build what plans the relation paths of a
question-level retriever that answers from them (`kgdb ask --planner NAME`, `kgdb eval qa`, `kgdb eval rrp`).

RRP registers `trained` (the retriever's own trained ranker or planner: `build` returns None) and `llm` (an
LLM plans, RoG-style) through the `kgdb.planners` entry-point group (`kgdb.rrp.kinds`); another package
registers its own the same way (the entry point names a `PlannerKind` or a module that calls
`register_planner` when imported). What a planner returns is a `kgdb.rrp.plan.PathPlanner`; this module
never imports it, the QA layer only looks planners up by name.

No neo4j driver or torch at import: the CLI builds `--planner`'s help from this registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgdb.registry import UnknownNameError, registry_of

if TYPE_CHECKING:
    from kgdb.config import Settings
    from kgdb.cypher import Graph

DEFAULT_PLANNER = "trained"  # the retriever's own trained choice


@dataclass(frozen=True)
class PlannerKind:
    """How to build one registered planner.

    `build(graph, settings, checkpoint)` returns a relation-path planner (`kgdb.rrp.plan.PathPlanner`),
    or None for the retriever's own trained choice; `checkpoint` is the path of the checkpoint the answering
    plan chose (None: none). `summary` is its line in `--planner` help; `uses_llm`: it needs
    KGDB_LLM_MODEL; `needs_checkpoint`: it plans with the chosen checkpoint (False: the checkpoint, where
    one exists, is at most its fallback)."""

    name: str
    build: Callable[[Graph, Settings, str | None], Any]
    summary: str
    uses_llm: bool = False
    needs_checkpoint: bool = True


class UnknownPlannerError(UnknownNameError):
    """No planner is registered under that name."""


PLANNERS = registry_of(PlannerKind, "planner", "kgdb.planners", "--planner", error=UnknownPlannerError)


def register_planner(kind: PlannerKind) -> PlannerKind:
    """Make `kind` available under `kind.name` (a later registration replaces it)."""
    return PLANNERS.register(kind)


def planner_kind(name: str) -> PlannerKind:
    return PLANNERS.get(name)


def require_planner_ready(name: str, settings: Settings) -> PlannerKind:
    """The planner `name`, refused before anything is opened when it needs an LLM and none is configured."""
    kind = planner_kind(name)
    if kind.uses_llm and not settings.llm_model:
        from kgdb.qa.labelling import LLMNotConfigured  # the one "no LLM configured" error

        raise LLMNotConfigured(
            f"--planner {name} needs an LLM: set KGDB_LLM_BASE_URL (an OpenAI-compatible endpoint, "
            "e.g. http://host:8000/v1) and KGDB_LLM_MODEL (KGDB_LLM_API_KEY if it needs one)"
        )
    return kind


def build_planner(name: str, graph: Graph, settings: Settings, checkpoint: str | None = None) -> Any:
    """The planner `name` for this graph (None: the retriever's own trained choice)."""
    return require_planner_ready(name, settings).build(graph, settings, checkpoint)


def planner_help() -> str:
    """`--planner` help: each registered planner's summary."""
    return (
        "Who plans the relation paths of a retriever that answers from them: " + "; ".join(PLANNERS.summaries()) + "."
    )
