"""The graph as a few typed, capped, read-only tools for LLM agents (served over MCP by
`kgdb.service.mcp_server`): link the entities a text mentions, rank a topic's relation paths for a
question, list an entity's relations and triples, follow a relation path, answer a question with its
evidence, and run read-only Cypher.

Each tool calls what the command line already uses (`kgdb link`'s linker, the relation-path ranker
`kgdb ask` answers with, `ground_relation_path`, `Kgdb.ask`); nothing here ranks or answers on its
own. Every result is a pydantic model: graph text (names, relations, evidence lines) comes back as
JSON string fields, never woven into sentences an agent could take for instructions; every list is
capped and a `truncated` flag says when something was left off. Nothing here writes: `ask` runs with
`write=False`, linking reads only the vectors the graph stores, and Cypher runs through
`kgdb.service.read_only_cypher`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel, Field

from kgdb.cypher.linking import link_entities, resolve_topics
from kgdb.cypher.paths import entity_names, ground_relation_path
from kgdb.errors import DatabaseError, InputError, KgdbError
from kgdb.limits import MAX_HOPS
from kgdb.reading import Topics, read_question
from kgdb.service.options import ServiceOptions
from kgdb.service.read_only_cypher import run_read_only

if TYPE_CHECKING:
    from kgdb.api import Kgdb
    from kgdb.rrp.retriever import RelationPathRetriever

# Characters of one text argument (a question, a name): an agent's question is a sentence.
MAX_TEXT_CHARS = 2_000
# Relations listed by `neighbours` before its page of triples.
MAX_RELATIONS = 200
# Answers, and evidence lines per answer, returned by `ask`.
MAX_ANSWERS = 20
MAX_EVIDENCE = 10


class _Capped(Protocol):
    """A tool's result: its JSON, and whether anything was left off to keep it short."""

    truncated: bool

    def model_dump_json(self) -> str: ...


_Result = TypeVar("_Result", bound=_Capped)


@dataclass(frozen=True)
class ToolLimits:
    """The limits every tool call keeps: `deadline_s` for the whole call, `cypher_timeout_s` for the
    server-side transaction of `cypher` (at most the deadline), `row_cap` for any list of rows or
    entities, `max_chars` for the JSON of one result."""

    deadline_s: float = 60.0
    cypher_timeout_s: float = 10.0
    row_cap: int = 100
    max_chars: int = 50_000

    def __post_init__(self) -> None:
        for name, seconds in (("deadline_s", self.deadline_s), ("cypher_timeout_s", self.cypher_timeout_s)):
            if not seconds > 0:
                raise InputError(f"must be a positive number of seconds, got {seconds!r}", path=name)
        for name, count in (("row_cap", self.row_cap), ("max_chars", self.max_chars)):
            if count < 1:
                raise InputError(f"must be a positive integer, got {count!r}", path=name)

    @classmethod
    def from_options(cls, options: ServiceOptions | None, **overrides: Any) -> "ToolLimits":
        """The limits of a service started with `options` (its per-request deadline and response size),
        `overrides` on top."""
        base: dict[str, Any] = {}
        if options is not None:
            base["deadline_s"] = float(options.deadline_s)
            base["cypher_timeout_s"] = min(cls.cypher_timeout_s, float(options.deadline_s))
            base["max_chars"] = min(cls.max_chars, options.max_response_bytes)
        return cls(**{**base, **overrides})


# ---- results -------------------------------------------------------------------------------------
class Entity(BaseModel):
    id: str = Field(description="The entity's id in the graph (pass it back to other tools).")
    name: str = Field(description="Its readable name (the id for unnamed compound-value nodes).")


class LinkedEntity(Entity):
    score: float = Field(description="Link score: name match, similarity to the text and popularity; higher is better.")
    mention: str | None = Field(description="The words of the text that matched; null when found by meaning only.")


class LinkedEntities(BaseModel):
    entities: list[LinkedEntity] = Field(description="Best first.")
    truncated: bool = Field(description="True when more entities were left off (limit or size cap).")


class RelationPath(BaseModel):
    relations: list[str] = Field(description="Relation names, hop by hop from the topic.")
    directions: list[int] = Field(description="Per hop: 1 follows the relation from head to tail, -1 against it.")
    score: float = Field(description="The ranker's probability that the question's answers lie at the path's end.")


class RelationPaths(BaseModel):
    topic: Entity
    planner: str = Field(description="What ranked the paths (kgdb's relation-path ranker or planner).")
    paths: list[RelationPath] = Field(description="Best first; pass one to `follow` to reach its entities.")
    notes: list[str] = Field(description="What the ranking says about itself (e.g. which model ranked).")
    truncated: bool


class RelationCount(BaseModel):
    relation: str
    direction: int = Field(description="1: the entity is the head of these relationships, -1: the tail.")
    count: int = Field(description="How many relationships of this relation and direction the entity has.")


class Triple(BaseModel):
    head_id: str
    head: str
    relation: str
    tail_id: str
    tail: str


class Neighbours(BaseModel):
    entity: Entity
    relations: list[RelationCount] = Field(description="The entity's relations, most relationships first.")
    relation: str | None = Field(description="The relation the triples are restricted to, if any.")
    page: int
    page_size: int
    triples: list[Triple] = Field(description="This page of the entity's triples.")
    next_page: int | None = Field(description="The page to ask for next; null when this is the last.")
    truncated: bool = Field(description="True when relations or triples were left off.")


class Reached(Entity):
    cvt: bool = Field(description="An unnamed compound-value node (follow one more relation from it).")
    via: list[Triple] = Field(description="One path of triples from the start entity to this one.")


class Followed(BaseModel):
    start: Entity
    relations: list[str]
    directions: list[int]
    entities: list[Reached] = Field(description="Distinct entities at the end of the relation path.")
    truncated: bool


class Answer(BaseModel):
    answer: str
    grounded: bool = Field(description="Whether the answer names an entity of the retrieved evidence.")
    entity_id: str | None
    evidence: list[str] = Field(description="Evidence lines (head → [relation] → tail), best first.")
    confidence: float | None = Field(
        default=None, description="The probability that this answer is right (null where an LLM answered)."
    )


class Answers(BaseModel):
    question: str
    topics: list[Entity] = Field(description="The entities the question was answered about.")
    answers: list[Answer] = Field(description="Best first; empty when the graph holds no answer.")
    confidence: float | None = Field(
        default=None, description="The probability that the first answer is right (null where an LLM answered)."
    )
    sure: bool | None = Field(
        default=None, description="False: the first answer is below kgdb's confidence threshold; treat it as a guess."
    )
    retriever: str
    reasoner: str | None
    notes: list[str]
    error: str | None = Field(description="Why the reasoner gave no answer, when it failed.")
    truncated: bool


class CypherResult(BaseModel):
    columns: list[str]
    rows: list[dict[str, Any]] = Field(description="One object per row, keyed by column.")
    row_cap: int
    truncated: bool = Field(description="True when the query had more rows than the cap, or values were shortened.")


# ---- the tools -----------------------------------------------------------------------------------
class GraphTools:
    """The graph tools over one warm `Kgdb`. Thread-safe: the MCP server runs each call in a worker thread."""

    def __init__(self, kg: Kgdb, limits: ToolLimits | None = None):
        self.kg, self.limits = kg, limits or ToolLimits()
        self._lock = threading.Lock()
        self._paths: tuple[RelationPathRetriever, list[str]] | None = None

    # -- link_entities
    def link_entities(self, text: str, limit: int = 5) -> LinkedEntities:
        from kgdb.embeddings import get_embedder

        text = _text("text", text)
        limit = self._count("limit", limit)
        s = self.kg.settings
        embedder = get_embedder(s.embedding_model, s.device, s.embedding_batch_size)
        # No vectors filled on use: a lazily embedded graph's candidates without one count 0 for meaning.
        found = link_entities(
            self.kg.graph, read_question(text), embedder.encode_one(text), k=limit + 1, encode=embedder.encode
        )
        out = [LinkedEntity(id=e.id, name=e.name, score=e.score, mention=e.mention) for e in found]
        result = LinkedEntities(entities=out[:limit], truncated=len(out) > limit)
        return self._fit(result, result.entities)

    # -- relation_paths
    def relation_paths(self, question: str, topic: str, limit: int = 10) -> RelationPaths:
        question = _text("question", question)
        start = self._entity("topic", topic)
        limit = self._count("limit", limit)
        retriever, notes = self._path_retriever()
        planner = retriever.planner
        with planner.question():
            plan = planner.plan(
                self.kg.graph, read_question(question), Topics([start.id], "given", [], []), {start.id: start.name}
            )
        paths = [
            RelationPath(
                relations=list(p.relations),
                directions=list(p.directions) or [0] * len(p.relations),
                score=float(p.score),
            )
            for p in plan.paths
        ]
        result = RelationPaths(
            topic=start,
            planner=planner.name,
            paths=paths[:limit],
            notes=[*notes, *plan.notes],
            truncated=len(paths) > limit,
        )
        return self._fit(result, result.paths)

    def _path_retriever(self) -> tuple[RelationPathRetriever, list[str]]:
        """RRP's retriever as `kgdb ask` builds it without an LLM (the answering policy's checkpoint), once."""
        with self._lock:
            if self._paths is None:
                from kgdb.rrp.kinds import RELATION_PATHS
                from kgdb.rrp.model_choice import relation_path_retriever

                plan = self.kg.explain(retriever=RELATION_PATHS)
                checkpoint = str(plan.checkpoint.path) if plan.checkpoint else None
                retriever = relation_path_retriever(self.kg.graph, self.kg.settings, checkpoint=checkpoint, write=False)
                self._paths = (retriever, [*plan.notes, *retriever.notes])
            return self._paths

    # -- neighbours
    def neighbours(self, entity: str, relation: str | None = None, page: int = 0, page_size: int = 25) -> Neighbours:
        found = self._entity("entity", entity)
        if relation is not None:
            relation = _text("relation", relation)
        if isinstance(page, bool) or not isinstance(page, int) or page < 0:
            raise InputError(f"must be 0 or a positive integer, got {page!r}", path="page")
        page_size = self._count("page_size", page_size)
        graph = self.kg.graph
        counts = graph.run("entity_relations", id=found.id, limit=MAX_RELATIONS + 1)
        rows = graph.run(
            "entity_triples_page", id=found.id, relation=relation, skip=page * page_size, limit=page_size + 1
        )
        more = len(rows) > page_size
        result = Neighbours(
            entity=found,
            relations=[RelationCount(**r) for r in counts[:MAX_RELATIONS]],
            relation=relation,
            page=page,
            page_size=page_size,
            triples=[Triple(**r) for r in rows[:page_size]],
            next_page=page + 1 if more else None,
            truncated=len(counts) > MAX_RELATIONS,
        )
        return self._fit(result, result.triples)

    # -- follow
    def follow(self, entity: str, relations: list[str], directions: list[int] | None = None) -> Followed:
        start = self._entity("entity", entity)
        if not isinstance(relations, list) or not 1 <= len(relations) <= MAX_HOPS:
            raise InputError(f"must be a list of 1 to {MAX_HOPS} relation names, got {relations!r}", path="relations")
        relations = [_text(f"relations[{i}]", r) for i, r in enumerate(relations)]
        dirs = list(directions) if directions else [0] * len(relations)
        cap = self.limits.row_cap
        # at most `cap` entities per hop, one path to each: a bounded frontier whatever the graph's hubs
        paths = ground_relation_path(self.kg.graph, start.id, relations, cap=cap, directions=dirs, per_end=1)
        ends: dict[str, list[tuple[str, str, str]]] = {}
        for triples in paths:
            hops = [(h, r, t) for _, h, r, t in triples]
            ends.setdefault(_end_of(start.id, hops), hops)
        ids = list(ends)
        info = entity_names(self.kg.graph, [*ids, *(x for hops in ends.values() for h, _, t in hops for x in (h, t))])

        def named(i: str) -> str:
            return info[i].name if i in info else i

        reached = [
            Reached(
                id=i,
                name=named(i),
                cvt=bool(info[i].cvt) if i in info else False,
                via=[Triple(head_id=h, head=named(h), relation=r, tail_id=t, tail=named(t)) for h, r, t in ends[i]],
            )
            for i in ids[:cap]
        ]
        result = Followed(
            start=start, relations=relations, directions=dirs, entities=reached, truncated=len(ids) >= cap
        )
        return self._fit(result, result.entities)

    # -- ask
    def ask(self, question: str, topics: list[str] | None = None) -> Answers:
        question = _text("question", question)
        if topics is not None:
            topics = [_text(f"topics[{i}]", t) for i, t in enumerate(topics)]
        # triples: the one prompt format built without writing the run back
        res = self.kg.ask(question, topics or None, fmt="triples", write=False)
        answers = [
            Answer(
                answer=a.answer,
                grounded=a.grounded,
                entity_id=a.entity_id,
                evidence=a.evidence[:MAX_EVIDENCE],
                confidence=a.confidence,
            )
            for a in res.answers
        ]
        shortened = len(answers) > MAX_ANSWERS or any(len(a.evidence) > MAX_EVIDENCE for a in res.answers)
        result = Answers(
            question=question,
            topics=[Entity(id=i, name=n) for i, n in zip(res.topics, res.topic_names)],
            answers=answers[:MAX_ANSWERS],
            confidence=res.confidence,
            sure=res.sure,
            retriever=res.retriever,
            reasoner=res.reasoning.reasoner if res.reasoning else None,
            notes=[res.retriever_note] if res.retriever_note else [],
            error=res.error,
            truncated=shortened,
        )
        return self._fit(result, result.answers)

    # -- cypher
    def cypher(self, query: str, parameters: dict[str, Any] | None = None) -> CypherResult:
        limits = self.limits
        timeout = min(limits.cypher_timeout_s, limits.deadline_s)
        rows = run_read_only(self.kg.graph, query, parameters, timeout_s=timeout, row_cap=limits.row_cap)
        result = CypherResult(columns=rows.columns, rows=rows.rows, row_cap=limits.row_cap, truncated=rows.truncated)
        return self._fit(result, result.rows)

    # -- shared checks
    def _entity(self, name: str, key: str) -> Entity:
        """An entity given by id or readable name, or `InputError` naming the parameter."""
        key = _text(name, key)
        try:
            found = resolve_topics(self.kg.graph, [key])[0]
        except DatabaseError:
            raise
        except KgdbError as exc:  # the resolver names the key; the parameter is the tool's to name
            raise InputError(
                f"{key!r} is neither the id nor the name of an entity of the graph; "
                "`link_entities` finds entities by the words of a text",
                path=name,
            ) from exc
        return Entity(id=found, name=entity_names(self.kg.graph, [found])[found].name)

    def _count(self, name: str, value: int) -> int:
        cap = self.limits.row_cap
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= cap:
            raise InputError(f"must be an integer from 1 to {cap}, got {value!r}", path=name)
        return value

    def _fit(self, result: _Result, items: list[Any]) -> _Result:
        """`result` with `items`, one of its lists, shortened from the end until its JSON holds `max_chars`
        characters at most (`truncated` set when anything was dropped)."""
        while items and len(result.model_dump_json()) > self.limits.max_chars:
            items.pop()
            result.truncated = True
        return result


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"must be a non-empty string, got {value!r}", path=name)
    if len(value) > MAX_TEXT_CHARS:
        raise InputError(f"is {len(value):,} characters long; at most {MAX_TEXT_CHARS:,} are read", path=name)
    return value.strip()


def _end_of(start: str, hops: list[tuple[str, str, str]]) -> str:
    """The entity a walk of (head, relation, tail) hops from `start` ends at, whichever way each hop ran."""
    here = start
    for head, _, tail in hops:
        here = tail if head == here else head
    return here
