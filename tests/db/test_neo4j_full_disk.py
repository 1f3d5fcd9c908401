"""`kgdb neo4j start` on a full disk: a server whose data folder sits on a real, nearly full tmpfs.

With room for the `system` database's transaction log but not for `neo4j`'s, Neo4j answers on Bolt
and HTTP while the database stays offline; with almost no room it exits during start-up. Either way
`start` must not say the server is up, and must name the full disk and its folder."""

from __future__ import annotations

import pytest

from kgdb.errors import KgdbError
from kgdb.server import LocalServer, free_port
from kgdb.server_disk import disk_problem
from support.server import PASSWORD, shared_lib


def _server(tmp_path, data) -> LocalServer:
    return LocalServer(
        home=tmp_path / "home",
        password=PASSWORD,
        bolt_port=free_port(),
        http_port=free_port(),
        heap="512m",
        pagecache="64m",
        lib_dir=shared_lib(),
        extra_conf={"server.directories.data": str(data)},
    )


def _start(server: LocalServer) -> tuple[str, list[str]]:
    said: list[str] = []
    try:
        with pytest.raises(KgdbError) as failed:
            server.start(log=said.append, timeout=240)
    finally:
        server.stop(log=lambda *_: None)
    return " ".join(str(failed.value).split()), said


def test_a_database_left_offline_by_a_full_disk_is_no_start(tmp_path, small_fs):
    # The system database preallocates its 256 MiB transaction log; the neo4j database finds ~30 MB.
    data = small_fs("400m", leave_free=300_000_000)
    server = _server(tmp_path, data)
    error, said = _start(server)
    assert not any("Neo4j is up" in line for line in said), said
    assert "Neo4j started, but database 'neo4j' is not available (offline" in error
    assert f"the disk holding {data} is full" in error and "MiB free of 400 MiB" in error
    assert "No space left on device" in error  # Neo4j's own words, from its debug.log
    assert "stopped it again" in error and not server.running()


def test_a_server_that_exits_on_a_full_disk_names_the_disk(tmp_path, small_fs):
    data = small_fs("64m", leave_free=1_000_000)  # not even the system database starts
    error, said = _start(_server(tmp_path, data))
    assert "Neo4j exited during start-up" in error
    assert f"the disk holding {data} is full" in error and "No space left on device" in error


def test_the_running_test_server_has_its_databases_online_and_no_disk_problem(local_server, tmp_path):
    assert local_server.databases_down(wait_s=5) == []
    quiet = tmp_path / "debug.log"
    quiet.write_text("2026-01-01 00:00:00.000+0000 INFO  [o.n.k.d.Database] Started.\n", encoding="utf-8")
    assert disk_problem(tmp_path, [(quiet, 0)]) is None  # plenty of room, and a log saying nothing of it
