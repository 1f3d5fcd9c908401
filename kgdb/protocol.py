"""The question-level retrieval protocol: a question (and optionally its topic entities) in, a
`Retrieval` out. Plain data, no database and no torch, so every layer can share it.

A tensor retriever (`kgdb.models.base.Retriever`) is one way to fill a `Retrieval`: the seam
(`kgdb.pipeline.RetrievePipeline`) fetches a subgraph, scores its triples and keeps the top K.
Retrievers that plan relation paths and ground them in Cypher (RRP, `RelationPathRetriever`) or
that score paths (RAPL) fill `paths` and `entities` too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from kgdb.reading import QuestionReading


def relation_path_text(relations, directions) -> str:
    """A relation path as a user reads it: `r1 → r2^-1`, `^-1` where a step goes against the edge."""
    return " → ".join(
        r if not directions or d > 0 else f"{r}^-1" for r, d in zip(relations, directions or [1] * len(relations))
    )


@dataclass(frozen=True)
class ScoredTriple:
    rank: int
    head: str  # readable names
    relation: str
    tail: str
    score: float
    head_id: str
    tail_id: str
    index: int  # triple index in the fetched subgraph (-1 when there is none)


@dataclass(frozen=True)
class ScoredPath:
    """A reasoning path e0 -r1-> e1 ... -rn-> en, as entity ids and relation names in path order.

    `directions[i]` is +1 when the i-th relationship points along the path, -1 when against it.
    """

    score: float
    entities: tuple[str, ...]
    relations: tuple[str, ...]
    directions: tuple[int, ...]
    names: tuple[str, ...] = ()  # readable names of `entities`, same order
    source: str = ""  # which module proposed it (planner, structural, ...)

    def render(self) -> str:
        names = self.names or self.entities
        parts = [names[0]]
        for rel, d, name in zip(self.relations, self.directions, names[1:]):
            parts.append(f"[{rel}]" if d > 0 else f"[{rel}] (reversed)")
            parts.append(name)
        return " → ".join(parts)

    @property
    def answer(self) -> str:
        return self.entities[-1]


@dataclass(frozen=True)
class ScoredEntity:
    id: str
    name: str
    score: float
    confidence: float | None = None  # the answer model's calibrated P(right answer); None: not judged


@dataclass
class Retrieval:
    """What any retriever returns for one question."""

    question: str
    qid: str | None
    retriever: str
    k: int
    topics: list[str]  # entity ids retrieval started from
    triples: list[ScoredTriple]  # best first
    paths: list[ScoredPath] = field(default_factory=list)  # best first
    entities: list[ScoredEntity] = field(default_factory=list)  # best first
    run: str | None = None  # write-back run id (None when not written)
    linked: list[Any] = field(default_factory=list)  # linker candidates (empty when topics were given)
    names: dict[str, str] = field(default_factory=dict)  # entity id -> readable name, for every id above
    cvt: set[str] = field(default_factory=set)  # ids of unnamed compound-value nodes
    timings: dict[str, float] = field(default_factory=dict)  # milliseconds per stage
    notes: list[str] = field(default_factory=list)  # what the user should know (dropped topics, ...)
    missing_topics: list[str] = field(default_factory=list)  # given topics the graph lacks (dropped)
    subgraph: Any = field(default=None, repr=False)  # the fetched kgdb.subgraph.Subgraph, when there is one
    scores: Any = field(default=None, repr=False)  # float32 [m], one per subgraph triple
    llm_usage: dict | None = None  # calls and tokens an LLM spent inside retrieval (the LLM relation-path planner)
    reading: QuestionReading | None = field(default=None, repr=False)  # how the question was read, where it was
    # the answer model's judgement (`kgdb.rrp.judging.JudgedAnswers.to_json`): the question's confidence,
    # the "not sure" threshold, the feature that decided the first answer; None where no model judged
    judgement: dict | None = None

    @property
    def top(self) -> list[ScoredTriple]:
        return self.triples

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "qid": self.qid,
            "retriever": self.retriever,
            "k": self.k,
            "run": self.run,
            "topics": self.topics,
            "linked": [asdict(e) for e in self.linked],
            "candidate_triples": self.subgraph.num_triples if self.subgraph is not None else len(self.triples),
            "top": [asdict(t) for t in self.triples],
            "paths": [{**asdict(p), "text": p.render()} for p in self.paths],
            "entities": [asdict(e) for e in self.entities],
            "notes": self.notes,
            "missing_topics": self.missing_topics,
            "reading": self.reading.to_json() if self.reading is not None else None,
            "judgement": self.judgement,
            "timings_ms": {k: round(v, 3) for k, v in self.timings.items()},
            "llm_usage": self.llm_usage,
        }


@runtime_checkable
class QuestionRetriever(Protocol):
    """Anything that answers `retrieve(question, topics) -> Retrieval` (one public method) for a question
    already read (`kgdb.reading.QuestionReading`: read the question through it, never its text again)."""

    name: str

    def retrieve(
        self, question: QuestionReading, topics: list[str] | None = None, *, qid: str | None = None
    ) -> Retrieval: ...


@runtime_checkable
class DescribedRetriever(QuestionRetriever, Protocol):
    """A question retriever that also says how it retrieves (recorded beside results), what the user should
    know of how it was built, and which question encoder it holds (a reasoner that reads embeddings shares it)."""

    notes: list[str]
    embedder: Any
    embedding_model: str | None

    def describe(self) -> dict[str, Any]: ...


@runtime_checkable
class LinkingRetriever(QuestionRetriever, Protocol):
    """A question retriever that can link a question without retrieving anything (`kgdb ask --explain`)."""

    def read(self, question: QuestionReading, topics: list[str] | None = None) -> QuestionReading: ...
