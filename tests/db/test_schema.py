import pytest

from kgdb.cypher import Graph, quote_identifier, statements
from kgdb.cypher.schema import counts, init_schema
from kgdb.errors import KgdbError


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


def _drop_schema(graph: Graph) -> None:
    """Back to a database no load has touched: no kgdb constraint or index (token lookups stay)."""
    for row in graph.run_text("SHOW CONSTRAINTS YIELD name"):
        graph.run_text(f"DROP CONSTRAINT {quote_identifier(row['name'])}")
    for row in graph.run_text("SHOW INDEXES YIELD name, type WHERE type <> 'LOOKUP'"):
        graph.run_text(f"DROP INDEX {quote_identifier(row['name'])}")


class _HashEncoder:
    """A text encoder without a model: the schema record needs a name and a dimension, not meaning."""

    name, dim = "hash-encoder", 384

    def encode(self, texts: list[str]):
        import numpy as np

        rows = [np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(self.dim) for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)
        return out / np.linalg.norm(out, axis=1, keepdims=True).clip(min=1e-9)


def test_concurrent_first_loads_into_an_empty_database_leave_one_schema_and_both_finish(graph: Graph):
    import threading

    from kgdb.loaders.lease import LeaseHeld
    from kgdb.loaders.writer import write_graph

    triples = [(f"e{i}", f"r.x{i % 3}", f"e{i + 1}") for i in range(200)]
    encoder = _HashEncoder()
    for _ in range(3):  # the race is between two MERGEs a few milliseconds apart: give it several chances
        graph.run_text("MATCH (n) DETACH DELETE n")
        _drop_schema(graph)
        barrier = threading.Barrier(2)
        errors: list[Exception] = []

        def load() -> None:
            with Graph(graph.settings) as own:
                barrier.wait()
                try:
                    write_graph(own, triples, embedder=encoder)
                except LeaseHeld:
                    pass  # the other load holds the lease: refused cleanly, as designed
                except Exception as exc:  # noqa: BLE001 - every other failure is what this test looks for
                    errors.append(exc)

        threads = [threading.Thread(target=load) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert graph.run_text("MATCH (m:KgdbMeta {key: 'schema'}) RETURN count(m) AS n") == [{"n": 1}]
        assert counts(graph)["triples"] == 200
    init_schema(graph, "all-MiniLM-L6-v2", 384)  # the next test finds the whole schema


def test_init_repairs_a_half_made_schema_with_two_schema_records(graph: Graph):
    _drop_schema(graph)
    graph.run_text("CREATE (:KgdbMeta {key: 'schema', embedding_model: 'm', embedding_dim: 384, created: datetime()})")
    graph.run_text("CREATE (:KgdbMeta {key: 'schema', embedding_model: 'm', embedding_dim: 384, created: datetime()})")
    init_schema(graph, "m", 384)
    assert graph.run_text("MATCH (m:KgdbMeta {key: 'schema'}) RETURN count(m) AS n") == [{"n": 1}]
    assert "meta_key" in {r["name"] for r in graph.run_text("SHOW CONSTRAINTS YIELD name")}
    init_schema(graph, "all-MiniLM-L6-v2", 384)  # back to the model the other tests use
