"""`kgdb serve`'s app on a real uvicorn server in a thread, on a free loopback port, for the service tests."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator

import uvicorn

from kgdb.api import Kgdb
from kgdb.cypher import Graph
from kgdb.server_home import free_port
from kgdb.service.app import create_app
from kgdb.service.options import ServiceOptions
from support.graphs import load, wipe

# The tiny graph the service tests ask about (the one the Python API tests use).
TRIPLES = [
    ("France", "location.country.capital", "Paris"),
    ("France", "location.country.official_language", "French"),
    ("France", "location.location.containedby", "Europe"),
    ("Paris", "location.location.containedby", "France"),
    ("Paris", "travel.travel_destination.tourist_attractions", "Eiffel Tower"),
    ("Jamaica", "location.country.capital", "Kingston"),
]
QUESTION = "What is the capital of France?"


@contextmanager
def france_kg(neo4j_settings, tmp) -> Iterator[Kgdb]:
    """One `Kgdb` over the tiny France graph (wiped and loaded), without an LLM, caches under `tmp`."""
    settings = neo4j_settings.with_overrides(
        cache_dir=tmp / "cache", checkpoints_dir=tmp / "ckpt", runs_dir=tmp / "runs", llm_model=None, llm_base_url=None
    )
    graph = Graph.connect(settings)
    wipe(graph)
    load(graph, TRIPLES)
    with Kgdb(graph) as kg:
        yield kg


@contextmanager
def serving(kg, **options) -> Iterator[str]:
    """The service for `kg` with `options` (ServiceOptions fields) listening; yields its base URL."""
    opts = ServiceOptions(port=free_port(), **options)
    server = uvicorn.Server(uvicorn.Config(create_app(kg, opts), host=opts.host, port=opts.port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the service did not start")
        time.sleep(0.02)
    try:
        yield opts.url
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def retrieval_nodes(kg) -> int:
    return kg.graph.run_text("MATCH (r:Retrieval) RETURN count(r) AS n")[0]["n"]
