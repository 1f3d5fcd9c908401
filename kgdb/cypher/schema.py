"""Creates kgdb's constraints and indexes (idempotent) and guards the embedding dimension."""

from __future__ import annotations

from kgdb.cypher import Graph, statements
from kgdb.errors import DatabaseError, KgdbError

# `IF NOT EXISTS` is checked when a transaction starts: two loads creating the schema at the same
# moment both pass it, and the second commit fails with this code although the index it wanted exists.
CREATED_CONCURRENTLY = "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists"


def init_schema(graph: Graph, model: str | None, dim: int | None) -> list[str]:
    """Create every constraint and index; refuse a model whose dimension differs from the stored one.

    Without a model (`dim=None`) the vector indexes are left for the first load that embeds. Safe
    when several loads run it at once on an empty database: the schema record is MERGEd only
    once the KgdbMeta.key constraint exists, and duplicates an older version left are removed
    first (`kgdb init` repairs such a graph).
    """
    graph.run("schema_meta_dedupe")
    done = []
    vector = []
    for text in statements("schema"):
        if "VECTOR INDEX" in text:
            vector.append(text)
            continue
        done.append(_create(graph, text, dim))
    row = graph.single("schema_meta", model=model, dim=dim) if dim is not None else None
    if row and row["dim"] != dim:
        raise KgdbError(
            f"the graph was embedded with {row['model']!r} (dimension {row['dim']}), but the configured "
            f"model {model!r} has dimension {dim}: use the same KGDB_EMBEDDING_MODEL or load into an empty database"
        )
    if dim is not None:
        done += [_create(graph, text, dim) for text in vector]
    graph.run_text("CALL db.awaitIndexes(300)", _name="await_indexes")
    return done


def _create(graph: Graph, text: str, dim: int | None) -> str:
    """Run one `CREATE ... IF NOT EXISTS`; returns its first line (what `kgdb init` prints)."""
    try:
        graph.run_text(text, _name="schema", dim=dim)
    except DatabaseError as exc:
        if getattr(exc.__cause__, "code", None) != CREATED_CONCURRENTLY:
            raise
    return text.split("IF NOT EXISTS")[0].strip().splitlines()[-1]


def counts(graph: Graph) -> dict[str, int]:
    return graph.single("counts") or {}
