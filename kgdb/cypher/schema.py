"""Creates kgdb's constraints and indexes (idempotent) and guards the embedding dimension."""

from __future__ import annotations

from kgdb.cypher import Graph, statements
from kgdb.errors import DatabaseError, KgdbError

# `IF NOT EXISTS` is checked when a transaction starts: two loads creating the schema at the same
# moment both pass it, and the second commit fails with this code although the index it wanted exists.
CREATED_CONCURRENTLY = "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists"


def init_schema(graph: Graph, model: str | None, dim: int | None) -> list[str]:
    """Create every constraint and index; refuse a model whose dimension differs from the stored one.

    Without a model (`dim=None`) the vector indexes are left for the first load that embeds.
    """
    row = graph.single("schema_meta", model=model, dim=dim) if dim is not None else None
    if row and row["dim"] != dim:
        raise KgdbError(
            f"the graph was embedded with {row['model']!r} (dimension {row['dim']}), but the configured "
            f"model {model!r} has dimension {dim}: use the same KGDB_EMBEDDING_MODEL or load into an empty database"
        )
    done = []
    for text in statements("schema"):
        if dim is None and "VECTOR INDEX" in text:
            continue
        try:
            graph.run_text(text, _name="schema", dim=dim)
        except DatabaseError as exc:
            if getattr(exc.__cause__, "code", None) != CREATED_CONCURRENTLY:
                raise
        done.append(text.split("IF NOT EXISTS")[0].strip().splitlines()[-1])
    graph.run_text("CALL db.awaitIndexes(300)", _name="await_indexes")
    return done


def counts(graph: Graph) -> dict[str, int]:
    return graph.single("counts") or {}
