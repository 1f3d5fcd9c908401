"""Test fixtures. Every database test runs against a real Neo4j 5.26, found in this order:

1. an already running server named by KGDB_TEST_NEO4J_URI (+ KGDB_TEST_NEO4J_USER/PASSWORD);
   the tests wipe that database, so never point it at data you keep;
2. a testcontainers `neo4j:5.26-community` container where a Docker engine answers;
3. otherwise a throw-away local server on free ports, on the jars `kgdb neo4j install` resolves.

The folder is the tier: tests/unit needs neither a database nor a real model, tests/db needs the real
Neo4j, tests/llm a real chat model (.ci/llm-tier installs one). The markers follow the folder (see
`pytest_collection_modifyitems`), so `-m "not db and not llm"` selects what tests/unit holds.
Shared builders and data are in tests/support; fixtures shared by one folder are in its conftest.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kgdb.config import Settings
from kgdb.cypher import Graph
from support.graphs import load_kept, wipe
from support.server import SHORT_LIVED_JVM
from support.small_fs import mount as small_fs_mount
from support.small_fs import unmount

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

    from kgdb.server import LocalServer, server_from_settings
    from kgdb.server_home import free_port

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
        jvm_options=SHORT_LIVED_JVM,
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


@pytest.fixture
def graph(neo4j_settings: Settings):
    """A connection to an empty database (schema indexes are kept between tests)."""
    g = Graph.connect(neo4j_settings)
    wipe(g)
    try:
        yield g
    finally:
        g.close()


@pytest.fixture
def kept_graph(neo4j_settings: Settings):
    """load(triples, embed=True, then=None) -> a connection to a database holding exactly those triples,
    reloaded only where a test before changed it (`support.graphs.load_kept`): for tests that read one graph."""
    g = Graph.connect(neo4j_settings)

    def loaded(triples, *, embed: bool = True, then=None) -> Graph:
        load_kept(g, triples, embed=embed, then=then)
        return g

    try:
        yield loaded
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


@pytest.fixture
def small_fs(tmp_path):
    """mount(size, read_only=False, leave_free=None) -> a fresh tmpfs folder, unmounted afterwards
    (`support.small_fs.mount`)."""
    mounted: list[Path] = []

    def mount(size: str = "1m", *, read_only: bool = False, leave_free: int | None = None) -> Path:
        path = small_fs_mount(tmp_path, size, read_only=read_only, leave_free=leave_free)
        mounted.append(path)
        return path

    yield mount
    for path in mounted:
        unmount(path)


HERE = Path(__file__).parent
TIER_MARKERS = {"db": pytest.mark.db, "llm": pytest.mark.llm, "browser": pytest.mark.browser}  # folder -> marker
USES_THE_SERVER = {"neo4j_settings", "local_server"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "head_start(work): slow work this test awaits, begun in the background as the session starts"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Markers from the folder: `db` on every test under tests/db, `llm` on every test under tests/llm,
    `browser` on every test under tests/browser (and `db` as well where one of those uses the server), `slow` on any test that reads the datasets under
    KGDB_DATA. A test elsewhere that uses the server is refused: it belongs under tests/db."""
    misplaced = []
    for item in items:
        parts = item.path.relative_to(HERE).parts if item.path.is_relative_to(HERE) else ()
        tier = parts[0] if len(parts) > 1 else None
        names = set(getattr(item, "fixturenames", ()))
        if tier in TIER_MARKERS:
            item.add_marker(TIER_MARKERS[tier])
        if names & USES_THE_SERVER:
            if tier in ("llm", "browser"):
                item.add_marker(pytest.mark.db)
            elif tier != "db":
                misplaced.append(item.nodeid)
        if "shared_data" in names:
            item.add_marker(pytest.mark.slow)
    if misplaced:
        raise pytest.UsageError(
            "these tests use the Neo4j server, so they belong under tests/db: " + ", ".join(misplaced)
        )
