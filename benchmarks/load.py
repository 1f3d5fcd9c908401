"""Loading FB15k-237 (310,116 triples, 14,541 entities, 237 relation types) in one run:
the Bolt path (`kgdb load freebase-subset`) and the --bulk path (neo4j-admin import).

    .venv/bin/python benchmarks/load.py                # both paths, embeddings on the Bolt path
    .venv/bin/python benchmarks/load.py --json runs/benchmarks/load.json

It starts its own throw-away Neo4j 5.26 (kgdb.server.LocalServer on free ports, jars from
`kgdb neo4j install`) so that it never touches a dev server, loads FB15k-237 over Bolt into the
empty database (entities, relationships, idx, entity + relation embeddings with the configured
model), then replaces the database with a --bulk import of the same triples (without
embeddings, so the import figure is the store-writing speed alone).

Figures: Bolt triples/s = distinct triples / seconds of the triples phase (relationship writes
only, entities and embeddings excluded; target >= 50,000), once on the freshly started server and
once more (relationships deleted, same writes) on the warm server; embedding names/s = names embedded
(encode + vector write, which overlap) / seconds of the embedding phase; whole Bolt load =
read + all phases incl. embeddings (target < 180 s); bulk triples/s = triples / seconds of
`neo4j-admin database import full` (CSV writing and server stop/start reported apart); peak RSS of
this Python process and of the Neo4j JVMs (server and import tool). The machine's load average is
printed before and after, because other jobs share its cores.
"""

from __future__ import annotations

import logging
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

import psutil
import typer
from rich.console import Console
from rich.table import Table

from kgdb.cli.load import phase_progress
from kgdb.config import Settings, dump_json, load_settings
from kgdb.cypher import Graph
from kgdb.cypher.schema import counts
from kgdb.embeddings import get_embedder
from kgdb.loaders.bulk import bulk_load
from kgdb.loaders.sources import open_source
from kgdb.loaders.writer import write_graph
from kgdb.server import LocalServer, server_from_settings
from kgdb.server_home import free_port

DATA = Path(os.environ.get("KGDB_DATA", "data")) / "fb15k237"
EXPECTED = {"triples": 310_116, "entities": 14_541, "relations": 237}
console = Console()
logging.getLogger("neo4j").setLevel(logging.ERROR)


class JvmPeak:
    """Samples the RSS of every Java process under `home` (server and neo4j-admin) every 0.2 s."""

    def __init__(self, home: Path):
        self.home, self.peak, self._stop = str(home), 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            total = 0
            for proc in psutil.process_iter(["name", "cmdline", "memory_info"]):
                try:
                    if proc.info["name"] == "java" and any(self.home in arg for arg in proc.info["cmdline"] or []):
                        total += proc.info["memory_info"].rss
                except (psutil.Error, TypeError):
                    continue
            self.peak = max(self.peak, total)
            self._stop.wait(0.2)

    def __enter__(self) -> "JvmPeak":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def main(
    data: Path = typer.Option(DATA, help="Folder with triples.tsv and names.tsv (FB15k-237 layout)."),
    batch_size: int = typer.Option(20_000, help="Rows per write transaction on the Bolt path."),
    heap: str = typer.Option("2g", help="Heap of the throw-away server."),
    pagecache: str = typer.Option("1g", help="Page cache of the throw-away server."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Also write the figures as JSON here."),
) -> None:
    for name in ("triples.tsv", "names.tsv"):
        if not (data / name).is_file():
            print(
                f"error: {data / name}: not found (expected $KGDB_DATA/fb15k237 beside the repository; pass --data)",
                file=sys.stderr,
            )
            raise SystemExit(2)
    settings = load_settings()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="kgdb-bench-load-") as tmp:
        server = LocalServer(
            home=Path(tmp),
            password="kgdb-bench",
            bolt_port=free_port(),
            http_port=free_port(),
            heap=heap,
            pagecache=pagecache,
            lib_dir=server_from_settings(Settings()).lib,
        )
        server.start(log=lambda *_: None)
        bench = settings.with_overrides(
            neo4j_uri=server.bolt_uri,
            neo4j_password="kgdb-bench",
            neo4j_home=server.home,
            neo4j_bolt_port=server.bolt_port,
            neo4j_http_port=server.http_port,
        )
        try:
            with JvmPeak(server.home) as jvm:
                fig = _run(bench, server, data, batch_size)
            fig["jvm_peak_rss_mib"] = jvm.peak / 2**20
        finally:
            server.stop(log=lambda *_: None)
    fig["python_peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    fig["loadavg_before"], fig["loadavg_after"], fig["cpus"] = load_before, os.getloadavg(), os.cpu_count()
    _print(fig)
    if json_out:
        dump_json(fig, json_out)
        console.print(f"wrote {json_out}")


def _run(settings: Settings, server: LocalServer, data: Path, batch_size: int) -> dict:
    t0 = time.perf_counter()
    src = open_source(data / "triples.tsv", names=data / "names.tsv")
    read_s = time.perf_counter() - t0
    embedder = get_embedder(settings.embedding_model, settings.device, settings.embedding_batch_size)
    with Graph.connect(settings) as graph, phase_progress() as (_, report):
        bolt = write_graph(graph, src.triples, src.names, embedder=embedder, batch_size=batch_size, progress=report)
        db = counts(graph)
        # The same relationship writes again on the now-warm server (JIT compiled, page cache hot):
        # the steady state a long-running server sustains, next to the cold first load above.
        graph.run_auto("MATCH (:Entity)-[r]->(:Entity) CALL (r) { DELETE r } IN TRANSACTIONS OF 50000 ROWS")
        warm = write_graph(graph, src.triples, src.names, batch_size=batch_size, progress=report)
    for key, want in EXPECTED.items():
        assert db[key] == want, f"{key}: {db[key]} != {want}"
    assert db["entity_embeddings"] == EXPECTED["entities"] and db["relation_embeddings"] == EXPECTED["relations"]

    console.print("bulk: writing CSVs, stopping the server, neo4j-admin import, restarting ...")
    bulk = bulk_load(settings, server, src.triples, src.names, embedder=None, replace=True, log=lambda *_: None)
    with Graph.connect(settings) as graph:
        db_bulk = counts(graph)
    for key, want in EXPECTED.items():
        assert db_bulk[key] == want, f"bulk {key}: {db_bulk[key]} != {want}"

    bolt_rate = bolt.triples_in / bolt.seconds["triples"]
    warm_rate = warm.triples_created / warm.seconds["triples"]
    bulk_rate = bulk.triples_in / bulk.seconds["import"]
    names = bolt.entity_embeddings + bolt.relation_embeddings
    return {
        "triples": bolt.triples_in,
        "entities": db["entities"],
        "relation_types": db["relations"],
        "batch_size": batch_size,
        "embedding_model": embedder.name,
        "device": getattr(embedder, "device", "?"),
        "read_s": read_s,
        "bolt_seconds": bolt.seconds,
        "bolt_triples_per_s": bolt_rate,
        "bolt_warm_triples_per_s": warm_rate,
        "bolt_total_s": read_s + sum(bolt.seconds.values()),
        "bolt_total_without_embeddings_s": read_s + sum(v for k, v in bolt.seconds.items() if k != "embeddings"),
        "embedding_names": names,
        "embedding_names_per_s": names / bolt.seconds["embeddings"],
        "bulk_seconds": bulk.seconds,
        "bulk_triples_per_s": bulk_rate,
        "bulk_total_s": sum(bulk.seconds.values()),
        "bulk_over_bolt": bulk_rate / bolt_rate,
    }


def _print(fig: dict) -> None:
    t = Table(
        "figure",
        "value",
        title=f"FB15k-237 load: {fig['triples']:,} triples, {fig['entities']:,} entities, "
        f"{fig['relation_types']} relation types",
    )
    t.add_row(
        "Bolt: triples/s (relationship writes, target >= 50,000), fresh server", f"{fig['bolt_triples_per_s']:,.0f}"
    )
    t.add_row("Bolt: triples/s, same writes again on the warm server", f"{fig['bolt_warm_triples_per_s']:,.0f}")
    for phase, secs in fig["bolt_seconds"].items():
        t.add_row(f"Bolt: seconds {phase}", f"{secs:.1f}")
    t.add_row("Bolt: whole load incl. embeddings, s (target < 180)", f"{fig['bolt_total_s']:.1f}")
    t.add_row("Bolt: whole load without embeddings, s", f"{fig['bolt_total_without_embeddings_s']:.1f}")
    t.add_row(f"embedding: names/s ({fig['embedding_model']}, {fig['device']})", f"{fig['embedding_names_per_s']:,.0f}")
    t.add_row("bulk: triples/s (neo4j-admin import)", f"{fig['bulk_triples_per_s']:,.0f}")
    for phase, secs in fig["bulk_seconds"].items():
        t.add_row(f"bulk: seconds {phase}", f"{secs:.1f}")
    t.add_row("bulk / Bolt triples/s", f"{fig['bulk_over_bolt']:.2f}")
    t.add_row("peak RSS: this Python process, MiB", f"{fig['python_peak_rss_mib']:,.0f}")
    t.add_row("peak RSS: Neo4j JVMs (server + import), MiB", f"{fig['jvm_peak_rss_mib']:,.0f}")
    t.add_row(
        "load average before / after (1 min)",
        f"{fig['loadavg_before'][0]:.1f} / {fig['loadavg_after'][0]:.1f} on {fig['cpus']} CPUs",
    )
    console.print(t)


if __name__ == "__main__":
    typer.run(main)
