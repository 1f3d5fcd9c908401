"""kgdb retrieval as a `neo4j-graphrag` retriever, so `GraphRAG(KgdbRetriever(kg), llm)` works.

neo4j-graphrag's `GraphRAG` pairs any `Retriever` with any of its LLM wrappers and prompt
templates. Its own retrievers search vector indexes or generate Cypher; this one answers with
kgdb's scored triples (a registered retriever scores the question's subgraph and keeps the top K,
written back as a run unless `write=False`), one result item per triple. The retriever's checkpoint
is chosen as `kgdb ask` chooses it (`kgdb.pipeline.model_choice`, through `Kgdb.retriever`): on a
graph with no checkpoint of its own a shipped one stands in, and the metadata's notes say so.

    import kgdb
    from neo4j_graphrag.generation import GraphRAG
    from neo4j_graphrag.llm import OpenAILLM
    from kgdb.integrations.neo4j_graphrag import KgdbRetriever

    with kgdb.connect(password="...") as kg:
        rag = GraphRAG(KgdbRetriever(kg, "cosine"), OpenAILLM(model_name="gpt-4o-mini"))
        rag.search("What is the capital of France?", retriever_config={"top_k": 20}).answer

This module is the only place kgdb imports `neo4j_graphrag` (an optional extra).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import kgdb.cypher.driver  # noqa: F401  (first: the driver without pandas and pyarrow)

# isort: split
import neo4j

from kgdb.errors import InputError, KgdbError

try:
    from neo4j_graphrag.retrievers.base import Retriever
    from neo4j_graphrag.types import RawSearchResult, RetrieverResultItem
except ImportError as exc:
    raise KgdbError(
        "kgdb.integrations.neo4j_graphrag needs the neo4j-graphrag package: pip install 'kgdb[graphrag]'"
    ) from exc

if TYPE_CHECKING:
    from kgdb.api import Kgdb

__all__ = ["KgdbRetriever"]


class KgdbRetriever(Retriever):
    """A `neo4j_graphrag` retriever backed by a kgdb graph (`kgdb.connect(...)`).

    `search(query_text=..., top_k=5, topics=None)` returns one `RetrieverResultItem` per kept
    triple, best first: content `"(head, relation, tail)"` (readable names), metadata `score`,
    `rank`, `run`, `head_id`, `tail_id`, `relation`. The result's metadata carries the run id,
    retriever, its checkpoint, k, topic ids, notes and per-stage timings (ms). Bad input raises `kgdb.errors.InputError`.
    """

    # kgdb checks its own graph; the base check exists for neo4j-graphrag's vector-index queries.
    VERIFY_NEO4J_VERSION = False

    def __init__(
        self,
        kg: Kgdb,
        retriever: str = "subgraphrag",
        *,
        checkpoint: str | None = None,
        write: bool = True,
        result_formatter: Callable[[neo4j.Record], RetrieverResultItem] | None = None,
    ):
        super().__init__(kg.graph.driver, kg.settings.neo4j_database)
        self.kg = kg
        self.retriever = retriever
        self.checkpoint = checkpoint
        self.write = write
        self.result_formatter = result_formatter

    def get_search_results(self, query_text: str, top_k: int = 5, topics: list[str] | None = None) -> RawSearchResult:
        """Score the question's subgraph with kgdb and keep the `top_k` best triples.

        Args:
            query_text: the question.
            top_k: how many triples to keep (at least 1).
            topics: entity names or ids to start from; None links them from the question.
        """
        if not isinstance(query_text, str) or not query_text.strip():
            raise InputError("the question is empty", path="query_text")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise InputError(f"must be a positive integer, got {top_k!r}", path="top_k")
        r = self.kg.retrieve(
            query_text, topics, retriever=self.retriever, checkpoint=self.checkpoint, k=top_k, write=self.write
        )
        described = self.kg.retriever(self.retriever, checkpoint=self.checkpoint, k=top_k, write=self.write).describe()
        records = [
            neo4j.Record(
                {
                    "head": t.head,
                    "relation": t.relation,
                    "tail": t.tail,
                    "score": t.score,
                    "rank": t.rank,
                    "run": r.run,
                    "head_id": t.head_id,
                    "tail_id": t.tail_id,
                }
            )
            for t in r.triples
        ]
        metadata = {
            "run": r.run,
            "retriever": r.retriever,
            "checkpoint": described["checkpoint"],
            "k": r.k,
            "topics": list(r.topics),
            "notes": list(r.notes),
            "timings_ms": {stage: round(ms, 3) for stage, ms in r.timings.items()},
        }
        return RawSearchResult(records=records, metadata=metadata)

    def default_record_formatter(self, record: neo4j.Record) -> RetrieverResultItem:
        return RetrieverResultItem(
            content=f"({record['head']}, {record['relation']}, {record['tail']})",
            metadata={key: record[key] for key in ("score", "rank", "run", "head_id", "tail_id", "relation")},
        )
