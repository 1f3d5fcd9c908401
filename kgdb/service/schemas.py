"""The HTTP API's requests and responses as pydantic models: what FastAPI validates, serialises and
publishes as the OpenAPI schema (`/openapi.json`) that clients and the fuzz tests read.

Requests forbid unknown fields, so a misspelt option is a 422 naming it rather than silently ignored.
Responses carry what the Python API returns (`AskResult.to_json()`, `Retrieval.to_json()`) and allow
fields added there later.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kgdb.cypher.writeback import RunSummary
from kgdb.reading.question import LinkedEntity

MAX_QUESTION_CHARS = 2000
MAX_NAME_CHARS = 500  # an entity name or id
MAX_TOPICS = 20
MAX_K = 1000
MAX_LINK_K = 50
MAX_RUNS = 1000

Question = Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="The question, in plain words.")
EntityName = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS, pattern=r"\S")]
Topics = Field(
    default=None,
    max_length=MAX_TOPICS,
    description="Topic entities (names or ids); null: linked from the question.",
)
OptionName = Field(default=None, min_length=1, max_length=100)


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Response(BaseModel):
    model_config = ConfigDict(extra="allow")


# ---- requests --------------------------------------------------------------------------------------
class AskRequest(Request):
    question: str = Question
    topics: list[EntityName] | None = Topics
    retriever: str | None = Field(
        default=None, min_length=1, max_length=100, description="null: the answering policy's choice."
    )
    reasoner: str | None = Field(
        default=None, min_length=1, max_length=100, description="null: `auto`, the answering policy's choice."
    )
    k: int = Field(default=100, ge=1, le=MAX_K, description="Triples kept from the retriever (top-K).")
    write: bool | None = Field(
        default=None,
        description="Write the scores back as a run (null: yes, unless the service is read-only, which refuses true).",
    )


class RetrieveRequest(Request):
    question: str = Question
    topics: list[EntityName] | None = Topics
    retriever: str = Field(default="subgraphrag", min_length=1, max_length=100)
    k: int = Field(default=100, ge=1, le=MAX_K)
    hops: int | None = Field(default=None, ge=1, le=4)
    cap: int | None = Field(default=None, ge=1, le=100_000)
    qid: str | None = Field(default=None, min_length=1, max_length=MAX_NAME_CHARS)
    write: bool | None = Field(default=None, description="As for /v1/ask.")


class LinkRequest(Request):
    text: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="A question or any text.")
    k: int = Field(default=5, ge=1, le=MAX_LINK_K, description="How many entities to return.")


class PathsRequest(Request):
    source: EntityName = Field(description="Entity name or id.")
    targets: list[EntityName] = Field(min_length=1, max_length=MAX_TOPICS, description="Entity names or ids.")
    directed_only: bool = Field(default=False, description="No undirected fallback.")


class ExplainRequest(Request):
    retriever: str | None = OptionName
    checkpoint: str | None = OptionName
    reasoner: str | None = OptionName
    fmt: str | None = Field(default=None, min_length=1, max_length=20, description="triples | chains | paths.")


# ---- responses -------------------------------------------------------------------------------------
class ErrorDetail(BaseModel):
    type: str
    message: str
    parameter: str | None = None


class ErrorBody(BaseModel):
    error: ErrorDetail


class Answer(Response):
    answer: str
    grounded: bool
    entity_id: str | None
    evidence: list[str]
    confidence: float | None = Field(
        default=None,
        description="The answer model's probability that this answer is right; null where an LLM answered.",
    )


class GraphNode(BaseModel):
    id: str
    name: str
    role: Literal["topic", "answer", "other"]


class GraphEdge(BaseModel):
    source: str
    target: str
    relation: str


class EvidenceGraph(BaseModel):
    nodes: list[GraphNode] = []
    edges: list[GraphEdge] = []


class AskResponse(Response):
    """`kgdb ask --json`'s fields, plus the evidence as a graph and a link into Neo4j Browser."""

    question: str
    qid: str | None = None
    run: str | None
    topics: list[str]
    topic_names: list[str]
    retriever: str
    retriever_note: str | None = None
    k: int
    format: str
    reasoner: str | None = None
    llm_used: bool | None = None
    answers: list[Answer]
    confidence: float | None = Field(
        default=None, description="The probability that the first answer is right; null where an LLM answered."
    )
    sure: bool | None = Field(default=None, description="False: the first answer's confidence is below min_confidence.")
    min_confidence: float | None = None
    error: str | None = None
    evidence: list[str]
    timings_ms: dict[str, float]
    plan: dict[str, Any] | None = None
    retrieval: dict[str, Any] = {}
    graph: EvidenceGraph
    browser_query: str | None
    browser_url: str | None


class ScoredTripleOut(BaseModel):
    rank: int
    head: str
    relation: str
    tail: str
    score: float
    head_id: str
    tail_id: str
    index: int


class RetrieveResponse(Response):
    question: str
    qid: str | None
    retriever: str
    k: int
    run: str | None
    topics: list[str]
    top: list[ScoredTripleOut]
    notes: list[str]
    timings_ms: dict[str, float]


class LinkResponse(Response):
    text: str
    entities: list[LinkedEntity]


class PathStep(BaseModel):
    head: str
    head_name: str
    relation: str
    tail: str
    tail_name: str


class PathOut(BaseModel):
    source: str
    target: str
    direction: str
    length: int
    triples: list[PathStep]


class PathsResponse(Response):
    source: str
    targets: list[str]
    paths: list[PathOut]


class RunsResponse(Response):
    runs: list[RunSummary]


class RunResponse(Response):
    run: str
    question: str | None = None
    retriever: str | None = None
    topics: list[str] = []
    triples: list[dict[str, Any]] = []


class PlanResponse(Response):
    retriever: str
    reasoner: str
    format: str
    decisions: list[dict[str, Any]]
    notes: list[str]


class HealthResponse(BaseModel):
    status: Literal["ok"]
    version: str


class ReadyResponse(BaseModel):
    status: Literal["ready"]
    entities: int
    triples: int
    read_only: bool
