"""`load --bulk`: CSVs + `neo4j-admin database import full` against the local server.

The fastest path Neo4j offers, for large sources. Everything the Bolt path computes (labels,
dense idx, name embeddings as float arrays) goes into the CSVs, so after the import the server is
restarted and only the schema (constraints, full-text and vector indexes) is built. The import
REPLACES the whole database; a non-empty database is refused unless `replace=True`.
"""

from __future__ import annotations

import csv
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import AbstractSet, Callable, Mapping, Sequence
from urllib.parse import urlparse

import numpy as np

from kgdb.config import Settings, mask_uri
from kgdb.cypher import Graph
from kgdb.errors import KgdbError
from kgdb.loaders.writer import (
    LoadStats,
    ProgressFn,
    TextEncoder,
    Triple,
    _noop,
    check_relations,
    entity_rows,
    iter_encoded,
)
from kgdb.server import LocalServer

LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}


@dataclass(frozen=True)
class BulkFiles:
    folder: Path
    entities: Path
    relations: Path
    triples: Path


def check_local(settings: Settings, server: LocalServer) -> None:
    """--bulk rewrites the store files, so it only works on the server in KGDB_NEO4J_HOME."""
    uri = urlparse(settings.neo4j_uri)
    if uri.hostname not in LOCAL_HOSTS or (uri.port or 7687) != server.bolt_port:
        raise KgdbError(
            f"--bulk imports into the local server in {server.home} (Bolt port {server.bolt_port}), but "
            f"KGDB_NEO4J_URI is {mask_uri(settings.neo4j_uri)}: drop --bulk for a remote or Docker server, or set "
            "KGDB_NEO4J_HOME / KGDB_NEO4J_BOLT_PORT to the server that URI names"
        )
    if not server.jars_installed():
        raise KgdbError(f"no Neo4j installed in {server.home}: run `kgdb neo4j install` first")


def _vector_text(vec: np.ndarray | None) -> str:
    return "" if vec is None else ";".join(np.char.mod("%.8g", vec))


def _embed(embedder: TextEncoder | None, texts: list[str], phase: str, progress: ProgressFn) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    if embedder is None:
        return out
    distinct = len(set(texts))
    progress(phase, 0, distinct)
    for chunk, vectors in iter_encoded(embedder, texts):
        out.update(zip(chunk, vectors))
        progress(phase, len(out), distinct)
    return out


def write_csvs(
    folder: Path,
    triples: Sequence[Triple],
    names: Mapping[str, str],
    literals: AbstractSet[str],
    embedder: TextEncoder | None,
    stats: LoadStats,
    progress: ProgressFn = _noop,
) -> BulkFiles:
    """The node and relationship CSVs of neo4j-admin import (header row, RFC 4180 quoting)."""
    from kgdb.embeddings import relation_text

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    files = BulkFiles(folder, folder / "entities.csv", folder / "relations.csv", folder / "triples.csv")
    rows = entity_rows(triples, names, literals)
    relations = sorted({r for _, r, _ in triples})
    check_relations(relations)
    stats.entities, stats.relation_types = len(rows), len(relations)
    stats.cvt = sum("CVT" in r.labels for r in rows)
    stats.literals = sum("Literal" in r.labels for r in rows)

    t0 = time.perf_counter()
    entity_vecs = _embed(embedder, [r.name for r in rows if "CVT" not in r.labels], "entity embeddings", progress)
    relation_vecs = _embed(embedder, [relation_text(r) for r in relations], "relation embeddings", progress)
    stats.entity_embeddings = sum("CVT" not in r.labels for r in rows) if embedder else 0
    stats.relation_embeddings = len(relations) if embedder else 0
    if embedder is not None:
        stats.seconds["embeddings"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    with files.entities.open("w", encoding="utf-8", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["id:ID(Entity)", "name", "idx:long", "embedding:float[]", ":LABEL"])
        for idx, r in enumerate(rows):
            vec = None if "CVT" in r.labels else entity_vecs.get(r.name)
            out.writerow([r.id, r.name, idx, _vector_text(vec), ";".join(r.labels)])
    with files.relations.open("w", encoding="utf-8", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["name:ID(Relation)", "text", "idx:long", "embedding:float[]", ":LABEL"])
        for idx, r in enumerate(relations):
            text = relation_text(r)
            out.writerow([r, text, idx, _vector_text(relation_vecs.get(text)), "Relation"])
    with files.triples.open("w", encoding="utf-8", newline="") as fh:
        out = csv.writer(fh)
        out.writerow([":START_ID(Entity)", ":END_ID(Entity)", ":TYPE"])
        out.writerows((h, t, r) for h, r, t in triples)
    stats.seconds["csv"] = time.perf_counter() - t0
    return files


def bulk_load(
    settings: Settings,
    server: LocalServer,
    triples: Sequence[Triple],
    names: Mapping[str, str] | None = None,
    *,
    literals: AbstractSet[str] = frozenset(),
    embedder: TextEncoder | None = None,
    replace: bool = False,
    progress: ProgressFn = _noop,
    log: Callable[[str], None] = print,
) -> LoadStats:
    """Replace the local database with `triples` via neo4j-admin import, then build the schema."""
    from kgdb.cypher.schema import init_schema

    from kgdb.loaders.lease import acquire, release

    check_local(settings, server)
    if server.running():
        with Graph.connect(settings) as graph:
            # Stopping the server under a running Bolt load would kill it: refuse while one holds the lease.
            release(graph, acquire(graph))
            nodes = (graph.single("load_node_count") or {}).get("nodes", 0)
        if nodes and not replace:
            raise KgdbError(
                f"--bulk replaces the whole database, which holds {nodes:,} nodes: pass --replace to confirm, "
                "or load over Bolt (without --bulk) to add to it"
            )
    stats = LoadStats()
    unique = sorted(set(triples))
    stats.triples_in = stats.triples_created = len(unique)
    files = write_csvs(server.home / "import" / "kgdb-bulk", unique, names or {}, literals, embedder, stats, progress)

    t0 = time.perf_counter()
    if server.running():
        server.stop(log=log)
    stats.seconds["stop"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        server.admin(
            "database", "import", "full", settings.neo4j_database,
            "--overwrite-destination=true", "--id-type=string", "--array-delimiter=;",
            "--multiline-fields=true", f"--report-file={files.folder / 'import.report'}",
            f"--nodes={files.entities}", f"--nodes={files.relations}", f"--relationships={files.triples}",
        )
    finally:
        stats.seconds["import"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        server.start(log=log)
        stats.seconds["start"] = time.perf_counter() - t1
    t0 = time.perf_counter()
    with Graph.connect(settings) as graph:
        init_schema(graph, embedder.name if embedder else None, embedder.dim if embedder else None)
    stats.seconds["schema"] = time.perf_counter() - t0
    return stats
