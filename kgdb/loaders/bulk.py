"""`load --bulk`: import files + `neo4j-admin database import full` against the local server.

The fastest path Neo4j offers, for large sources. Everything the Bolt path computes (labels,
dense idx, name embeddings as float arrays) goes into the files, which `kgdb.loaders.import_files`
streams from the source with bounded memory, so after the import the server is
restarted and only the schema (constraints, full-text and vector indexes) is built. The import
REPLACES the whole database; a non-empty database is refused unless `replace=True`.
"""

from __future__ import annotations

import re
import time
from typing import AbstractSet, Callable, Mapping, Sequence
from urllib.parse import urlparse

from kgdb.config import EmbeddingMode, Settings, mask_uri
from kgdb.cypher import Graph
from kgdb.errors import KgdbError
from kgdb.loaders.badlines import BadLines
from kgdb.loaders.import_files import write_import_files
from kgdb.loaders.source import SourceStream
from kgdb.loaders.writer import LoadStats, ProgressFn, TextEncoder, Triple, _noop
from kgdb.server import LocalServer

LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}


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


def store_on_disk(server: LocalServer, database: str) -> bool:
    """Whether the home holds store files of `database` (a stopped server's data is still there)."""
    folder = server.home / "data" / "databases" / database
    return folder.is_dir() and any(folder.iterdir())


class ImportOutput:
    """neo4j-admin import's output as progress: each stage's name is logged as it starts (nodes,
    relationships, indexes, counts ...), its dotted progress lines move the `import` bar."""

    _PERCENT = re.compile(r"^[.\s-]+(\d+)%")
    _STAGE = re.compile(r"^\((\d+)/(\d+)\)")

    def __init__(self, progress: ProgressFn, log: Callable[[str], None]):
        self.progress, self.log = progress, log
        self.pending = ""
        self.started = False
        self.stage, self.stages = 1, 1  # from the "(2/4) Relationship import" headings

    def __call__(self, chunk: str) -> None:
        self.pending += chunk
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            pct = self._PERCENT.match(line)
            stage = self._STAGE.match(line)
            if pct:
                self.progress("import", (self.stage - 1) * 100 + int(pct.group(1)), self.stages * 100)
            elif line.startswith("Import starting"):
                self.started = True
            elif self.started and line.strip() and not line[0].isspace():
                if stage:
                    self.stage, self.stages = int(stage.group(1)), int(stage.group(2))
                self.log(f"neo4j-admin import: {line.strip()}")


def list_stream(triples: Sequence[Triple], names: Mapping[str, str], literals: AbstractSet[str]) -> SourceStream:
    """In-memory triples as a stream (the Python API and the tests)."""
    return SourceStream(
        description="triples",
        bad=BadLines(),
        records=lambda: ((h, r, t, t in literals) for h, r, t in triples),
        names=(lambda: iter(names.items())) if names else None,
    )


def bulk_load(
    settings: Settings,
    server: LocalServer,
    triples: Sequence[Triple] | SourceStream,
    names: Mapping[str, str] | None = None,
    *,
    literals: AbstractSet[str] = frozenset(),
    embedder: TextEncoder | None = None,
    embeddings: EmbeddingMode | str = EmbeddingMode.eager,
    replace: bool = False,
    progress: ProgressFn = _noop,
    log: Callable[[str], None] = print,
) -> LoadStats:
    """Replace the local database with `triples` (a list, or a source streamed with bounded
    memory) via neo4j-admin import, then build the schema."""
    from kgdb.cypher.schema import init_schema
    from kgdb.loaders.lease import acquire, release

    check_local(settings, server)
    if not server.running() and not replace and store_on_disk(server, settings.neo4j_database):
        # Only the server can count what the store holds: start it to look, or refuse unchecked.
        log(f"Neo4j is stopped; starting it to check whether database {settings.neo4j_database!r} is empty ...")
        try:
            server.start(log=log)
        except KgdbError as exc:
            raise KgdbError(
                f"--bulk replaces the whole database, and kgdb cannot check whether {settings.neo4j_database!r} in "
                f"{server.home} is empty: the server did not start ({exc}). Start it with `kgdb neo4j start`, or "
                "pass --replace to replace the database unchecked"
            ) from None
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
    stream = triples if isinstance(triples, SourceStream) else list_stream(triples, names or {}, literals)
    stats = LoadStats()
    files = write_import_files(server.home / "import" / "kgdb-bulk", stream, embedder, stats, progress, embeddings)

    t0 = time.perf_counter()
    if server.running():
        server.stop(log=log)
    stats.seconds["stop"] = time.perf_counter() - t0
    server.write_conf()  # neo4j-admin reads the server's conf: the import gets today's settings (dense threshold)
    t0 = time.perf_counter()
    try:
        server.admin(
            "database",
            "import",
            "full",
            settings.neo4j_database,
            "--overwrite-destination=true",
            "--id-type=string",
            f"--report-file={files.folder / 'import.report'}",
            *files.import_args(),
            on_output=ImportOutput(progress, log),
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
