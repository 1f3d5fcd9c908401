"""The registry of question-level retrievers: one name -> one way to build a `kgdb.protocol.QuestionRetriever`
for `kgdb ask --retriever NAME`, `kgdb eval qa` and `Kgdb.ask`, beside the tensor retrievers of
`kgdb.models.registry` (a subgraph scored triple by triple).

A question-level retriever takes the question itself and returns a `Retrieval`: RRP's relation-path
retriever (`relation-paths`, registered by `kgdb.rrp.kinds`) plans relation paths and grounds them in
Cypher. Packages register through the `kgdb.question_retrievers` entry-point group (the entry point names
a `QuestionRetrieverKind` or a module that calls `register_question_retriever` when imported). What the
answering policy (`kgdb.qa.policy`) needs to choose one by itself is declared on the kind; a kind that
declares none of it answers only when asked for.

No neo4j driver or torch at import: the CLI builds `--retriever`'s help from this registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgdb.registry import UnknownNameError, registry_of

if TYPE_CHECKING:
    from kgdb.config import Settings
    from kgdb.cypher import Graph
    from kgdb.pipeline.model_choice import GraphFacts, ModelChoice
    from kgdb.protocol import QuestionRetriever


@dataclass(frozen=True)
class AskOptions:
    """What `kgdb ask` passes to a question-level retriever it builds."""

    checkpoint: str | None  # the path of the checkpoint the answering plan chose (None: none)
    k: int  # evidence triples to keep
    write: bool  # write the scores back as a run
    planner: Any = None  # a relation-path planner from the planner registry; None: the retriever's own choice


@dataclass(frozen=True)
class QuestionRetrieverKind:
    """How to build one registered question-level retriever, and what the answering policy reads of it.

    `build(graph, settings, options)` returns the retriever; `summary` is its line in `--retriever` help;
    `evidence` how `kgdb ask` names what it kept ("triples of ..."). `from_paths`: it answers from relation
    paths, so a planner (`--planner`) plans them and a reasoner that needs paths reads them. `reasoner`: the
    reasoner that answers its evidence without an LLM (`auto` takes it).

    The policy's hooks, each optional: `choose_model(facts, settings, checkpoint, required)` the
    checkpoint it runs with (`kgdb.pipeline.model_choice.ModelChoice`; `required=False` where the planner
    needs none); `trained_here(facts, settings)` why a model of its own trained on this graph makes it the
    method to answer with, or None; `without_llm(facts)` whether it answers well with no LLM and nothing
    trained on this graph, and why (or why not)."""

    name: str
    build: Callable[[Graph, Settings, AskOptions], QuestionRetriever]
    summary: str
    evidence: str = "triples it retrieved for the question"
    from_paths: bool = False
    reasoner: str | None = None
    choose_model: Callable[[GraphFacts, Settings, str | None, bool], ModelChoice] | None = None
    trained_here: Callable[[GraphFacts, Settings], str | None] | None = None
    without_llm: Callable[[GraphFacts], tuple[bool, str]] | None = None


class UnknownQuestionRetrieverError(UnknownNameError):
    """No question-level retriever is registered under that name."""


QUESTION_RETRIEVERS = registry_of(
    QuestionRetrieverKind,
    "question-level retriever",
    "kgdb.question_retrievers",
    "--retriever",
    error=UnknownQuestionRetrieverError,
)


def register_question_retriever(kind: QuestionRetrieverKind) -> QuestionRetrieverKind:
    """Make `kind` available under `kind.name` (a later registration replaces it)."""
    return QUESTION_RETRIEVERS.register(kind)


def path_retriever(reasoner: str | None = None) -> QuestionRetrieverKind | None:
    """The question-level retriever that answers from relation paths: the one `reasoner` suits, else
    the first registered, or None."""
    kinds = [kind for _, kind in QUESTION_RETRIEVERS.items() if kind.from_paths]
    return next((kind for kind in kinds if kind.reasoner == reasoner), kinds[0] if kinds else None)
