"""What every relation-path planner answers: `PathPlanner.plan(graph, reading, topics, names) -> Plan`.

A planner (the untrained cosine beam, RRP's trained planner, the path ranker, an LLM) proposes the
relation paths a question's answers lie at the end of; `RelationPathRetriever` grounds them in Cypher.
The `Plan` carries everything the later steps read (the topics the paths start from, the question as
the planner read it, the ranked paths, notes, the LLM's usage), so nothing is kept on the planner
between questions and one planner serves many questions at once (what the readings of one question
share lives inside `PathPlanner.question`, per thread).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # the CLI imports the LLM planner, a `PathPlanner`: no neo4j driver, numpy or torch at import time
    import numpy as np

    from kgdb.cypher import Graph
    from kgdb.models.checkpoints import Checkpoint
    from kgdb.reading import QuestionReading, Topics

RelationPath = tuple[tuple[str, ...], tuple[int, ...]]  # (relations, directions)


@dataclass(frozen=True)
class PlannedPath:
    relations: tuple[str, ...]
    score: float
    directions: tuple[int, ...] = ()  # +1 / -1 per relation; empty = either direction


@dataclass(frozen=True)
class Plan:
    """One question's plan. `text` is the question as the planner read it (most read it without the
    topic names) and `text_emb` its vector (None where the planner encoded none): the structural
    reasoner reads the same. `scored`: every relation path the planner scored with its score, where it
    scores more than it plans (the ranker's candidates), for `PathPlanner.path_probability`."""

    topics: Topics  # where the paths start (the ranker may choose one of the linked candidates)
    topic_names: tuple[str, ...]
    paths: tuple[PlannedPath, ...]  # best first
    text: str
    text_emb: np.ndarray | None = None
    notes: tuple[str, ...] = ()  # what the user should know about this plan (a composed reading, dropped paths)
    composed: str | None = None  # the note of a compositional question's composed reading, None when not taken
    usage: dict | None = None  # the LLM planner's calls and tokens (None: no LLM planned)
    scored: tuple[tuple[Any, float], ...] = ()  # (candidate with `.steps`, probability), the ranker's


def names_of(topics: Topics, names: Mapping[str, str]) -> tuple[str, ...]:
    """The topics' readable names (`names`: id -> name), an id where none is known."""
    return tuple(names.get(i, i) for i in topics.ids)


class PathPlanner(ABC):
    """Proposes relation paths for a question. `name` is recorded next to results; `checkpoint` is the
    trained model's (None: untrained); `beam` how many paths a plan holds (None: no fixed number);
    `constrained` whether decoding only names relations that leave the topics' frontier (True: a path
    that grounds to nothing can name no unknown relation; None: the planner does not decode step by step)."""

    name: str = ""
    checkpoint: Checkpoint | None = None
    beam: int | None = None
    constrained: bool | None = None

    @abstractmethod
    def plan(self, graph: Graph, reading: QuestionReading, topics: Topics, names: Mapping[str, str]) -> Plan:
        """The relation paths from `topics` (`names`: id -> readable name of at least the topics) for the
        question `reading` read (`QuestionReading.encoded`: what a model reads of it)."""

    def question(self) -> AbstractContextManager[None]:
        """A block in which one question is planned several times (each topic alone, parts of a composition):
        the plans may share what no reading changes. Nothing is shared by default."""
        return nullcontext()

    def path_probability(self, plan: Plan, paths: list[RelationPath]) -> list[float]:
        """P(path | question) of relation paths `plan` may not hold (the structural reasoner's traced
        paths, for rethinking's S1); 0 for a path the planner cannot score."""
        return [0.0] * len(paths)

    def describe(self) -> dict | None:
        """Settings recorded next to results beyond the name and checkpoint (None: nothing more)."""
        return None
