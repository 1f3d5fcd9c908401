from kgdb.cypher import Graph, quote_identifier, statements
from kgdb.cypher.schema import counts, init_schema
from kgdb.errors import KgdbError

import pytest


def test_schema_is_idempotent_and_guards_dimension(graph: Graph):
    first = init_schema(graph, "all-MiniLM-L6-v2", 384)
    second = init_schema(graph, "all-MiniLM-L6-v2", 384)
    assert first == second and len(first) == len(statements("schema"))
    names = {r["name"] for r in graph.run_text("SHOW INDEXES YIELD name")}
    assert {"entity_id", "entity_names", "entity_embedding", "relation_embedding", "scored_run"} <= names
    with pytest.raises(KgdbError, match="dimension 384"):
        init_schema(graph, "other-model", 768)


def test_counts_on_empty_graph(graph: Graph):
    assert counts(graph)["entities"] == 0


def test_quote_identifier_escapes_backticks():
    assert quote_identifier("a`b") == "`a``b`"
