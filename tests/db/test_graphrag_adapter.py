"""`kgdb.integrations.neo4j_graphrag.KgdbRetriever` end to end: the real neo4j-graphrag package
(`GraphRAG`, `OpenAILLM`), a real Neo4j and a real local OpenAI-protocol HTTP server as the LLM."""

from __future__ import annotations

import pytest

pytest.importorskip("neo4j_graphrag", reason="neo4j-graphrag is not installed (pip install 'kgdb[graphrag]')")

from neo4j_graphrag.generation import GraphRAG
from neo4j_graphrag.llm import OpenAILLM
from neo4j_graphrag.types import RetrieverResult, RetrieverResultItem

from kgdb.api import connect
from kgdb.errors import InputError
from kgdb.integrations.neo4j_graphrag import KgdbRetriever
from support.openai_server import OpenAIServer

pytestmark = pytest.mark.usefixtures("one_thread")

# France's 2-hop neighbourhood holds more than 5 triples, so top_k=5 keeps exactly 5.
TRIPLES = [
    ("France", "location.country.capital", "Paris"),
    ("France", "location.country.official_language", "French"),
    ("France", "location.country.currency_used", "Euro"),
    ("France", "location.location.containedby", "Europe"),
    ("Paris", "location.location.containedby", "France"),
    ("Paris", "travel.travel_destination.tourist_attractions", "Eiffel Tower"),
    ("Eiffel Tower", "architecture.structure.architect", "Gustave Eiffel"),
    ("Jamaica", "location.country.capital", "Kingston"),
    ("Jamaica", "location.country.official_language", "Jamaican English"),
]
CAPITAL = "(France, location.country.capital, Paris)"


@pytest.fixture
def kg(kept_graph, tmp_path):
    graph = kept_graph(TRIPLES)
    settings = graph.settings.with_overrides(
        cache_dir=tmp_path / "cache", checkpoints_dir=tmp_path / "ckpt", runs_dir=tmp_path / "runs", llm_model=None
    )
    with connect(driver=graph.driver, settings=settings) as kg:  # the fixture's driver: not closed here
        yield kg


def test_graphrag_search_with_kgdb_retriever_and_openai_llm(kg):
    with OpenAIServer(script=[{"content": "Paris is the capital of France."}]) as server:
        llm = OpenAILLM(model_name="kgdb-test-model", base_url=server.base_url, api_key="test", max_retries=0)
        rag = GraphRAG(KgdbRetriever(kg, "cosine"), llm)
        result = rag.search("What is the capital of France?", retriever_config={"top_k": 5}, return_context=True)
        sent = "\n".join(m.get("content") or "" for m in server.requests[-1]["messages"])
    assert server.calls == 1
    assert result.answer == "Paris is the capital of France."

    context = result.retriever_result
    assert isinstance(context, RetrieverResult)
    items = context.items
    assert [i.metadata["rank"] for i in items] == [1, 2, 3, 4, 5]
    scores = [i.metadata["score"] for i in items]
    assert scores == sorted(scores, reverse=True)
    capital = next(i for i in items if i.content == CAPITAL)
    assert capital.metadata["relation"] == "location.country.capital"
    assert capital.metadata["head_id"] and capital.metadata["tail_id"]

    run = context.metadata["run"]
    assert run and all(i.metadata["run"] == run for i in items)
    assert context.metadata["retriever"] == "cosine" and context.metadata["k"] == 5
    assert context.metadata["topics"] == [capital.metadata["head_id"]]  # France, linked from the text
    assert {"embed", "link", "fetch", "score", "write"} <= set(context.metadata["timings_ms"])
    assert context.metadata["__retriever"] == "KgdbRetriever"

    stored = kg.read_run(run)  # written back to the graph
    assert stored["question"] == "What is the capital of France?" and stored["retriever"] == "cosine"
    assert [t["rank"] for t in stored["triples"]] == [1, 2, 3, 4, 5]
    assert {(t["h_name"], t["rel"], t["t_name"]) for t in stored["triples"]} >= {
        ("France", "location.country.capital", "Paris")
    }

    # The LLM saw kgdb's triples as GraphRAG's context, next to the question.
    assert CAPITAL in sent and "What is the capital of France?" in sent
    assert all(i.content in sent for i in items)


def test_search_without_write_back_and_custom_formatter(kg):
    retriever = KgdbRetriever(
        kg,
        "cosine",
        write=False,
        result_formatter=lambda record: RetrieverResultItem(content=f"{record['tail']} <- {record['relation']}"),
    )
    result = retriever.search(query_text="What is the capital of France?", top_k=3, topics=["France"])
    assert result.metadata["run"] is None and len(result.items) == 3
    assert "Paris <- location.country.capital" in [i.content for i in result.items]
    assert kg.runs() == []  # nothing was written


def test_the_readme_subgraphrag_retriever_works_on_a_graph_with_no_checkpoint(kg):
    """`KgdbRetriever(kg, "subgraphrag")` as the README writes it: nothing trained on this graph, so the
    checkpoint `kgdb ask` would use stands in, and the metadata says which and why."""
    result = KgdbRetriever(kg, "subgraphrag", write=False).search(query_text="What is the capital of France?", top_k=5)
    assert CAPITAL in [i.content for i in result.items]
    assert result.metadata["retriever"] == "cosine-dde" and result.metadata["checkpoint"] == "cosine-dde-webqsp"
    assert "no subgraphrag checkpoint" in result.metadata["notes"][0]


def test_bad_search_inputs_raise_clear_errors(kg):
    retriever = KgdbRetriever(kg, "cosine")
    with pytest.raises(InputError, match=r"top_k: must be a positive integer, got 0"):
        retriever.search(query_text="What is the capital of France?", top_k=0)
    with pytest.raises(InputError, match=r"top_k: must be a positive integer, got -3"):
        retriever.search(query_text="What is the capital of France?", top_k=-3)
    with pytest.raises(InputError, match=r"query_text: the question is empty"):
        retriever.search(query_text="   ", top_k=5)
    # GraphRAG passes them through unchanged: the same error, before any LLM call.
    with OpenAIServer() as server:
        rag = GraphRAG(retriever, OpenAILLM(model_name="m", base_url=server.base_url, api_key="test", max_retries=0))
        with pytest.raises(InputError, match="the question is empty"):
            rag.search("", retriever_config={"top_k": 5}, return_context=True)
        with pytest.raises(InputError, match="top_k"):
            rag.search("What is the capital of France?", retriever_config={"top_k": 0}, return_context=True)
    assert server.calls == 0
    assert kg.runs() == []
