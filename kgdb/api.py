"""The Python API: one object per graph, the same operations as the CLI.

    import kgdb

    with kgdb.connect("bolt://localhost:7687", password="kgdb-password") as kg:
        r = kg.retrieve("What is the capital of France?", retriever="cosine", k=10)
        print(r.triples[0].tail, r.run)
        answer = kg.ask("What is the capital of France?")
        print(answer.answers[0].answer)

`connect()` takes a URI (plus user/password/database, defaulting to kgdb's settings) or an
existing `neo4j.Driver`. Pipelines (tables, embedding model, checkpoint) are built once per
retriever configuration and reused (the most recently used `PIPELINES_KEPT` of them). One `Kgdb`
may be shared by threads (`kgdb serve` answers on a thread pool): a pipeline is built by one
thread at a time, and asking through a built one is safe from several.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypedDict

from kgdb.config import Settings, load_settings
from kgdb.cypher import Graph
from kgdb.cypher.driver import Driver, DriverError
from kgdb.errors import ClosedError, DatabaseError, InputError, KgdbError
from kgdb.protocol import Retrieval
from kgdb.qa.reasoners.base import Reasoner

if TYPE_CHECKING:  # only annotations use it (typing has it from 3.12), and annotations are not evaluated here
    from typing_extensions import Unpack

# A long-running service sees many (retriever, k, ...) combinations: each pipeline holds tables and models.
PIPELINES_KEPT = 16


def _open_only(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method`, refused with one ClosedError once the connection, or the driver the caller handed in,
    is closed (the driver's own error says nothing of which, and is no KgdbError)."""

    @functools.wraps(method)
    def call(self: Kgdb, *args: Any, **kwargs: Any) -> Any:
        self._check_open()
        try:
            return method(self, *args, **kwargs)
        except DriverError:
            self._check_open()
            raise

    return call


def _refused_once_closed(cls: type[Kgdb]) -> type[Kgdb]:
    """Every public method of the class but `close` wrapped in `_open_only`, those added later too."""
    for name, value in list(vars(cls).items()):
        if not name.startswith("_") and name != "close" and inspect.isfunction(value):
            setattr(cls, name, _open_only(value))
    return cls


class RetrievalOptions(TypedDict, total=False):
    """How `Kgdb.retrieve` retrieves (keyword arguments of `Kgdb.retriever`, with their defaults there)."""

    checkpoint: str | None
    k: int
    hops: int | None
    cap: int | None
    write: bool


class AskOptions(RetrievalOptions, total=False):
    """How `Kgdb.ask` answers (keyword arguments of `Kgdb.ask_pipeline`, with their defaults there)."""

    retriever: str | None
    reasoner: str | Reasoner
    fmt: str | None


@_refused_once_closed
class Kgdb:
    """A connection to one kgdb graph in Neo4j."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.settings: Settings = graph.settings
        self._pipelines: OrderedDict[tuple, Any] = OrderedDict()
        self._pipelines_lock = threading.Lock()  # the cache itself, held for a look-up or an insert only
        self._building = threading.Lock()  # one pipeline built at a time: builds load models and pin the fingerprint
        self._link_vectors: Any = None
        self._closed = False

    def _pipeline(self, key: tuple, build: Callable[[], Any]) -> Any:
        """The cached pipeline for `key`, built by `build()` the first time (by one thread only)."""
        with self._pipelines_lock:
            if key in self._pipelines:
                self._pipelines.move_to_end(key)
                return self._pipelines[key]
        with self._building:
            with self._pipelines_lock:
                if key in self._pipelines:  # another thread built it while this one waited
                    return self._pipelines[key]
            pipe = build()
            with self._pipelines_lock:
                self._pipelines[key] = pipe
                while len(self._pipelines) > PIPELINES_KEPT:
                    self._pipelines.popitem(last=False)
            return pipe

    # ---- retrieval ---------------------------------------------------------------------------
    def retriever(
        self,
        name: str = "subgraphrag",
        *,
        checkpoint: str | None = None,
        k: int = 100,
        hops: int | None = None,
        cap: int | None = None,
        write: bool = True,
    ):
        """The `QuestionRetriever` for a registered retriever (built once, then reused). Its checkpoint
        is chosen as `kgdb ask` chooses it (`kgdb.pipeline.model_choice`): the one named, else the
        newest trained on this graph, else a checkpoint shipped with kgdb, whose note every retrieval carries."""
        from kgdb.pipeline import RetrievePipeline
        from kgdb.pipeline.model_choice import Fallback, GraphFacts, choose_retriever_model

        _check_retrieval_options(name=name, checkpoint=checkpoint, k=k, hops=hops, cap=cap, write=write)

        def build():
            facts = GraphFacts.of(self.graph)
            choice = choose_retriever_model(facts, self.settings, name, checkpoint, Fallback.STAND_IN)
            return RetrievePipeline(
                self.graph,
                self.settings,
                choice.retriever,
                choice.checkpoint,
                k=k,
                hops=hops,
                cap=cap,
                write=write,
                note=choice.note,
            )

        return self._pipeline((name, checkpoint, k, hops, cap, write), build)

    def retrieve(
        self,
        question: str,
        topics: list[str] | None = None,
        *,
        retriever: str = "subgraphrag",
        qid: str | None = None,
        **options: Unpack[RetrievalOptions],
    ) -> Retrieval:
        """Score the question's subgraph and keep the top `k` triples (written back unless `write=False`),
        with the options of `retriever(...)` (`RetrievalOptions`)."""
        _check_question(question, topics)
        _check_optional_text("qid", qid)
        pipe = self.retriever(retriever, **options)
        return pipe.retrieve(question, list(topics) if topics is not None else None, qid=qid)

    def write_back(self, retrieval: Retrieval) -> str:
        """Write a retrieval made with `write=False` into the graph; returns the new run id."""
        from kgdb.cypher.writeback import write_scores

        if not isinstance(retrieval, Retrieval):
            raise InputError(f"must be a Retrieval (what retrieve() returns), got {retrieval!r:.80}", path="retrieval")
        if retrieval.subgraph is None or retrieval.scores is None:
            raise InputError("this retrieval carries no scored subgraph to write", path="retrieval")
        if retrieval.run:
            return retrieval.run
        retrieval.run = write_scores(self.graph, retrieval.subgraph, retrieval.scores, retrieval.retriever, retrieval.k)
        return retrieval.run

    def read_run(self, run: str) -> dict[str, Any]:
        """A written run: question, retriever, topics and its scored triples by rank."""
        from kgdb.cypher.writeback import show_run

        return show_run(self.graph, run)

    def runs(self, qid: str | None = None, limit: int = 50) -> list:
        from kgdb.cypher.writeback import list_runs

        return list_runs(self.graph, qid=qid, limit=limit)

    def chains(self, run: str, max_hops: int | None = 2):
        """ReG evidence chains of a written run."""
        from kgdb.cypher.chains import evidence_chains

        return evidence_chains(self.graph, run, max_hops=max_hops)

    # ---- answers -----------------------------------------------------------------------------
    def ask(self, question: str, topics: list[str] | None = None, **options: Unpack[AskOptions]):
        """Answer from the graph as `kgdb ask` does, with the options of `ask_pipeline` (`AskOptions`):
        the answering policy (`kgdb.qa.policy`) chooses what `retriever`, `checkpoint`, `reasoner` (a
        registered name, `auto`, or a `Reasoner` object) and `fmt` leave open; `explain(...)` shows that
        choice, the result's `plan` records it."""
        _check_question(question, topics)
        return self.ask_pipeline(**options).ask(question, list(topics) if topics is not None else None)

    def ask_pipeline(
        self,
        *,
        retriever: str | None = None,
        checkpoint: str | None = None,
        reasoner: str | Reasoner = "auto",
        fmt: str | None = None,
        k: int = 100,
        hops: int | None = None,
        cap: int | None = None,
        write: bool = True,
    ):
        """The `AskPipeline` `ask` answers with for these options, built once and then reused: a
        service builds it before its first question (its models load here)."""
        from kgdb.qa.ask import AskPipeline

        _check_answering_options(retriever=retriever, reasoner=reasoner, fmt=fmt)
        _check_retrieval_options(checkpoint=checkpoint, k=k, hops=hops, cap=cap, write=write)
        named = reasoner if isinstance(reasoner, str) else id(reasoner)

        def build():
            plan = self.explain(retriever=retriever, checkpoint=checkpoint, reasoner=reasoner, fmt=fmt)
            return AskPipeline(
                self.graph, self.settings, plan=plan, reasoner=reasoner, k=k, hops=hops, cap=cap, write=write
            )

        return self._pipeline(("ask", retriever, checkpoint, named, fmt, k, hops, cap, write), build)

    def explain(
        self,
        *,
        retriever: str | None = None,
        checkpoint: str | None = None,
        reasoner: str | Reasoner = "auto",
        fmt: str | None = None,
    ):
        """The `AnsweringPlan` `ask` would follow with these arguments: what answers, and why
        (`.lines()`, `.to_json()`)."""
        from kgdb.qa.ask import plan_for

        _check_answering_options(retriever=retriever, reasoner=reasoner, fmt=fmt)
        _check_optional_text("checkpoint", checkpoint)
        return plan_for(
            self.graph, self.settings, retriever=retriever, checkpoint=checkpoint, reasoner=reasoner, fmt=fmt
        )

    # ---- entities and paths ----------------------------------------------------------------------
    def link(self, text: str, k: int = 5) -> list:
        """The `k` entities `text` most likely names, best first (`LinkedEntity`: id, name, score, mention),
        as `kgdb link` links them."""
        from kgdb.cypher.linking import link_entities
        from kgdb.embeddings import get_embedder
        from kgdb.pipeline.vectors import vectors_on_demand
        from kgdb.reading import read_question

        _check_question(text, None)
        _check_count("k", k, optional=False)
        s = self.settings
        embedder = get_embedder(s.embedding_model, s.device, s.embedding_batch_size)
        if self._link_vectors is None:  # opens the entity table on its first use only, then keeps it
            self._link_vectors = vectors_on_demand(self.graph, s)
        vector = embedder.encode_one(text)
        return link_entities(
            self.graph, read_question(text), vector, k=k, entity_vectors=self._link_vectors, encode=embedder.encode
        )

    def paths(self, source: str, targets: list[str], *, directed_only: bool = False) -> list:
        """Every shortest path between `source` and each of `targets` (names or ids), as `kgdb paths`
        finds them (`PathTriples`: topic, answer, direction, triples of (elementId, head id, relation, tail id))."""
        from kgdb.cypher.paths import shortest_path_triples

        if not isinstance(source, str) or not source.strip():
            raise InputError(f"must be an entity name or id, got {source!r}", path="source")
        if isinstance(targets, str) or not isinstance(targets, (list, tuple)) or not targets:
            raise InputError(f"must be a non-empty list of entity names or ids, got {targets!r}", path="targets")
        for i, t in enumerate(targets):
            if not isinstance(t, str) or not t.strip():
                raise InputError(f"must be an entity name or id, got {t!r}", path=f"targets[{i}]")
        src = _resolved(self.graph, [source], "source")
        dst = _resolved(self.graph, list(targets), "targets")
        return shortest_path_triples(self.graph, src, dst, undirected=not directed_only)

    def names(self, ids: list[str]) -> dict[str, str]:
        """Readable names of entity ids (an id the graph lacks is left out)."""
        return {row["id"]: row["name"] for row in self.graph.run("entity_names", ids=list(dict.fromkeys(ids)))}

    # ---- training ----------------------------------------------------------------------------
    def train(self, kind: str, questions: str | Path | list[str | Path], events: Any = None, **options: Any):
        """Train a model of a registered trainable kind (`kgdb train --help` lists them: the trainable
        retrievers, `rrp-planner`, `rrp-ranker`, `rrp`) on the question file's (or files') train split,
        select it on val, save its checkpoint; returns `(Checkpoint, result)`.

        `options` are that kind's options, named as `kgdb train KIND --help` spells them with `_` for
        `-` (`max_epochs=5`, `hops=2`, `resume=True`); `--set KEY=VALUE` is `model_settings={"hidden": 512}`.
        An option the kind does not take, or a value out of its range, raises `InputError` naming it.
        `events`: a `kgdb.training.events.TrainEvents` whose methods hear the run's progress.
        """
        from kgdb.pipeline.trainable import TrainJob
        from kgdb.pipeline.trainables import trainable
        from kgdb.training.events import TrainEvents

        found = trainable(kind)
        files = [Path(q) for q in questions] if isinstance(questions, (list, tuple)) else [Path(questions)]
        settings = self.settings
        job = TrainJob(
            self.graph,
            settings,
            files,
            found.make_options(options),
            events or TrainEvents(),
            connect=lambda uri: Graph.connect(settings.with_overrides(neo4j_uri=uri)),
        )
        outcome = found.train(job)
        return outcome.checkpoint, outcome.result

    # ---- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        self._closed = True
        self.graph.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("this kgdb connection is closed; open another with kgdb.connect(...)")
        # The driver keeps no public flag; a caller's driver closed behind the connection's back is seen here.
        if getattr(self.graph.driver, "_closed", False):
            raise ClosedError(
                "the neo4j.Driver this kgdb connection was given is closed; "
                "connect again with an open driver (kgdb.connect(driver=...)) or by URI"
            )

    def __enter__(self) -> "Kgdb":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(
    uri: str | None = None,
    *,
    user: str | None = None,
    password: str | None = None,
    database: str | None = None,
    driver: Any = None,
    settings: Settings | None = None,
) -> Kgdb:
    """Connect to a kgdb graph by URI (verified at once) or through an existing `neo4j.Driver`."""
    base = settings or load_settings()
    settings = base.with_overrides(neo4j_uri=uri, neo4j_user=user, neo4j_password=password, neo4j_database=database)
    if driver is not None:
        if not isinstance(driver, Driver):
            raise InputError(
                f"must be a neo4j.Driver (neo4j.GraphDatabase.driver(...)), got {driver!r:.80}", path="driver"
            )
        return Kgdb(Graph(settings, driver=driver))
    return Kgdb(Graph.connect(settings))


class UnknownEntityError(InputError):
    """An entity named by the caller (name or id) is not in the graph."""


def _resolved(graph: Graph, keys: list[str], parameter: str) -> list[str]:
    """Entity ids of `keys`; an entity the graph lacks is an `UnknownEntityError` naming `parameter`."""
    from kgdb.cypher.linking import resolve_topics

    try:
        return resolve_topics(graph, keys)
    except DatabaseError:
        raise
    except KgdbError as exc:
        raise UnknownEntityError(str(exc), path=parameter) from None


# ---- inputs: checked here, so a wrong type is one clear InputError naming the parameter ------------------
def _check_question(question: Any, topics: Any) -> None:
    if not isinstance(question, str) or not question.strip():
        raise InputError(f"must be a non-empty string, got {question!r}", path="question")
    if topics is None:
        return
    if isinstance(topics, str) or not isinstance(topics, (list, tuple)):
        raise InputError(f"must be a list of entity names or ids (strings), got {topics!r}", path="topics")
    for i, topic in enumerate(topics):
        if not isinstance(topic, str) or not topic.strip():
            raise InputError(f"must be a non-empty string (an entity name or id), got {topic!r}", path=f"topics[{i}]")


def _check_optional_text(name: str, value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise InputError(f"must be a non-empty string or None, got {value!r}", path=name)


def _check_count(name: str, value: Any, optional: bool) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"must be a positive integer{' or None' if optional else ''}, got {value!r}", path=name)


def _check_retrieval_options(
    *, name: Any = "subgraphrag", checkpoint: Any, k: Any, hops: Any, cap: Any, write: Any
) -> None:
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"must be a retriever name (a string), got {name!r}", path="retriever")
    _check_optional_text("checkpoint", checkpoint)
    _check_count("k", k, optional=False)
    _check_count("hops", hops, optional=True)
    _check_count("cap", cap, optional=True)
    if not isinstance(write, bool):
        raise InputError(f"must be True or False, got {write!r}", path="write")


def _check_answering_options(*, retriever: Any, reasoner: Any, fmt: Any) -> None:
    _check_optional_text("retriever", retriever)
    _check_optional_text("fmt", fmt)
    if not isinstance(reasoner, (str, Reasoner)):
        raise InputError(
            f"must be a reasoner name or an object with name, uses_llm, reason() and settings(), got {reasoner!r}",
            path="reasoner",
        )
