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
        """The `QuestionRetriever` for a registered retriever (built once, then reused)."""
        from kgdb.pipeline import RetrievePipeline

        key = (name, checkpoint, k, hops, cap, write)
        if key not in self._pipelines:
            self._pipelines[key] = RetrievePipeline(self.graph, self.settings, name, checkpoint, k=k, hops=hops, cap=cap, write=write)
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
        pipe = self.retriever(retriever, checkpoint=checkpoint, k=k, hops=hops, cap=cap, write=write)
        return pipe.retrieve(question, topics, qid=qid)

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
        reasoner: str | Any = "auto",
        fmt: str | None = None,
        k: int = 100,
        hops: int | None = None,
        cap: int | None = None,
        write: bool = True,
    ):
        """Answer from the graph as `kgdb ask` does: with `retriever` None, RRP when trained for this
        graph or, without an LLM, the portable ranker shipped with kgdb; else subgraphrag (or the
        shipped cosine-dde) and an LLM when one is configured, else the extractive reasoner."""
        from kgdb.qa.ask import answering_pipeline

        key = ("ask", retriever, checkpoint, reasoner if isinstance(reasoner, str) else id(reasoner), fmt, k, hops, cap, write)
        if key not in self._pipelines:
            if isinstance(reasoner, str):
                self._pipelines[key] = answering_pipeline(self.graph, self.settings, retriever=retriever, checkpoint=checkpoint,
                                                          reasoner=reasoner, fmt=fmt, k=k, hops=hops, cap=cap, write=write)
            else:  # a reasoner object: the retriever as given (default subgraphrag)
                from kgdb.qa.ask import AskPipeline, default_retriever

                self._pipelines[key] = AskPipeline(self.graph, self.settings, retriever=default_retriever(retriever, "auto"),
                                                   checkpoint=checkpoint, reasoner=reasoner, fmt=fmt or "triples", k=k, hops=hops, cap=cap,
                                                   write=write)
        return self._pipelines[key].ask(question, topics)

    # ---- training ----------------------------------------------------------------------------
    def train(self, retriever: str, questions: str | Path, **options: Any):
        """Train a registered retriever on a question file's train split; returns the `Checkpoint`.

        Options are those of `kgdb train` (`name`, `hops`, `cap`, `max_epochs`, `patience`, `lr`,
        `seed`, `settings` (hyper-parameters), `max_train`, `max_val`, `resume`, callbacks).
        """
        from kgdb.pipeline import train_retriever

        return train_retriever(self.graph, self.settings, retriever, Path(questions), **options)

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

