"""Test fixtures. Every database test runs against a real Neo4j 5.26, found in this order:

1. an already running server named by KGDB_TEST_NEO4J_URI (+ KGDB_TEST_NEO4J_USER/PASSWORD);
   the tests wipe that database, so never point it at data you keep;
2. a testcontainers `neo4j:5.26-community` container where a Docker engine answers;
3. otherwise a throw-away local server on free ports, on the jars `kgdb neo4j install` resolves.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kgdb.config import Settings
from kgdb.cypher import Graph

# The public datasets the slow tests read (see the guide's "Getting the data"); unset: those tests skip.
DATA = Path(os.environ["KGDB_DATA"]) if os.environ.get("KGDB_DATA") else None
TEST_PASSWORD = "kgdb-test-password"


def _docker_available() -> bool:
    try:
        import docker

        docker.from_env(timeout=3).ping()
        return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def neo4j_settings(tmp_path_factory: pytest.TempPathFactory):
    base = Settings()
    if uri := os.environ.get("KGDB_TEST_NEO4J_URI"):
        yield base.with_overrides(
            neo4j_uri=uri,
            neo4j_user=os.environ.get("KGDB_TEST_NEO4J_USER", "neo4j"),
            neo4j_password=os.environ.get("KGDB_TEST_NEO4J_PASSWORD", TEST_PASSWORD),
        )
        return
    if _docker_available():
        from testcontainers.neo4j import Neo4jContainer

        container = Neo4jContainer("neo4j:5.26-community", password=TEST_PASSWORD)
        container.start()
        try:
            yield base.with_overrides(neo4j_uri=container.get_connection_url(), neo4j_password=TEST_PASSWORD)
        finally:
            container.stop()
        return

    from kgdb.server import LocalServer, free_port, server_from_settings

    shared = server_from_settings(base)
    shared.install_jars(log=lambda *_: None)
    server = LocalServer(
        home=tmp_path_factory.mktemp("neo4j"),
        password=TEST_PASSWORD,
        bolt_port=free_port(),
        http_port=free_port(),
        heap="1g",
        pagecache="512m",
        lib_dir=shared.lib,
    )
    server.start(log=lambda *_: None)
    try:
        yield base.with_overrides(
            neo4j_uri=server.bolt_uri,
            neo4j_password=TEST_PASSWORD,
            neo4j_home=server.home,
            neo4j_bolt_port=server.bolt_port,
            neo4j_http_port=server.http_port,
        )
    finally:
        server.stop(log=lambda *_: None)


def wipe(graph: Graph) -> None:
    graph.run_auto("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS")


@pytest.fixture
def graph(neo4j_settings: Settings):
    """A connection to an empty database (schema indexes are kept between tests)."""
    g = Graph.connect(neo4j_settings)
    wipe(g)
    try:
        yield g
    finally:
        g.close()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if DATA is None or not DATA.is_dir():
        pytest.skip(f"the datasets are not there (KGDB_DATA={os.environ.get('KGDB_DATA', '')!r})")
    return DATA


@pytest.fixture
def one_thread():
    """Tiny matmuls: one torch thread avoids OpenMP spin-waits on a shared 2-core machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tiers by what a test really needs: `db` (a real Neo4j: any fixture that depends on
    `neo4j_settings`, or a module's own `local_server`) and `slow` (reads the datasets under KGDB_DATA).
    `-m "not db"` is the fast unit tier."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & {"neo4j_settings", "local_server"}:
            item.add_marker(pytest.mark.db)
        if "shared_data" in names:
            item.add_marker(pytest.mark.slow)
