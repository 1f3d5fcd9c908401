"""The Python API: one object per graph, the same operations as the CLI.

    import kgdb

    with kgdb.connect("bolt://localhost:7687", password="kgdb-password") as kg:
        r = kg.retrieve("What is the capital of France?", retriever="cosine", k=10)
        print(r.triples[0].tail, r.run)
        answer = kg.ask("What is the capital of France?")
        print(answer.answers[0].answer)

`connect()` takes a URI (plus user/password/database, defaulting to kgdb's settings) or an
existing `neo4j.Driver`. Pipelines (tables, embedding model, checkpoint) are built once per
retriever configuration and reused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgdb.config import Settings, load_settings
from kgdb.cypher import Graph
from kgdb.errors import InputError
from kgdb.protocol import Retrieval
from kgdb.qa.reasoners.base import Reasoner


class Kgdb:
    """A connection to one kgdb graph in Neo4j."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.settings: Settings = graph.settings
        self._pipelines: dict[tuple, Any] = {}

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
        key = (name, checkpoint, k, hops, cap, write)
        if key not in self._pipelines:
            facts = GraphFacts.of(self.graph)
            choice = choose_retriever_model(facts, self.settings, name, checkpoint, Fallback.STAND_IN)
            self._pipelines[key] = RetrievePipeline(
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
        return self._pipelines[key]

    def retrieve(
        self,
        question: str,
        topics: list[str] | None = None,
        *,
        retriever: str = "subgraphrag",
        checkpoint: str | None = None,
        k: int = 100,
        hops: int | None = None,
        cap: int | None = None,
        write: bool = True,
        qid: str | None = None,
    ) -> Retrieval:
        """Score the question's subgraph and keep the top `k` triples (written back unless `write=False`)."""
        _check_question(question, topics)
        _check_optional_text("qid", qid)
        pipe = self.retriever(retriever, checkpoint=checkpoint, k=k, hops=hops, cap=cap, write=write)
        return pipe.retrieve(question, list(topics) if topics is not None else None, qid=qid)

    def write_back(self, retrieval: Retrieval) -> str:
        """Write a retrieval made with `write=False` into the graph; returns the new run id."""
        from kgdb.cypher.writeback import write_scores

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
    def ask(
        self,
        question: str,
        topics: list[str] | None = None,
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
        """Answer from the graph as `kgdb ask` does: the answering policy (`kgdb.qa.policy`) chooses
        what `retriever`, `checkpoint`, `reasoner` (a registered name, `auto`, or a `Reasoner` object)
        and `fmt` leave open; `explain(...)` shows that choice, the result's `plan` records it."""
        from kgdb.qa.ask import AskPipeline

        _check_question(question, topics)
        _check_answering_options(retriever=retriever, reasoner=reasoner, fmt=fmt)
        _check_retrieval_options(checkpoint=checkpoint, k=k, hops=hops, cap=cap, write=write)
        named = reasoner if isinstance(reasoner, str) else id(reasoner)
        key = ("ask", retriever, checkpoint, named, fmt, k, hops, cap, write)
        if key not in self._pipelines:
            plan = self.explain(retriever=retriever, checkpoint=checkpoint, reasoner=reasoner, fmt=fmt)
            self._pipelines[key] = AskPipeline(
                self.graph, self.settings, plan=plan, reasoner=reasoner, k=k, hops=hops, cap=cap, write=write
            )
        return self._pipelines[key].ask(question, list(topics) if topics is not None else None)

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
        from kgdb.pipeline.trainables import TrainJob, trainable
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
        self.graph.close()

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
        return Kgdb(Graph(settings, driver=driver))
    return Kgdb(Graph.connect(settings))


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
