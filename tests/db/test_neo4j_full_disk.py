"""`kgdb neo4j start` on a full disk: a server whose data folder sits on a real, nearly full tmpfs.

With room for the `system` database's transaction log but not for `neo4j`'s, Neo4j answers on Bolt
and HTTP while the database stays offline; with almost no room it exits during start-up. Either way
`start` must not say the server is up, and must name the full disk and its folder."""

from __future__ import annotations

import pytest

from kgdb.errors import KgdbError
from kgdb.server import LocalServer
from kgdb.server_disk import disk_problem
from kgdb.server_home import free_port
from support import head_start
from support.server import PASSWORD, SHORT_LIVED_JVM
from support.small_fs import mount, unmount
from support.spare_servers import jars


def _server(home, data) -> LocalServer:
    return LocalServer(
        home=home,
        password=PASSWORD,
        bolt_port=free_port(),
        http_port=free_port(),
        heap="512m",
        pagecache="64m",
        lib_dir=jars(),
        jvm_options=SHORT_LIVED_JVM,
        extra_conf={"server.directories.data": str(data)},
    )


def _start_on_a_full_disk(tmp_path_factory: pytest.TempPathFactory, size: str, leave_free: int):
    """A start with the data folder on a tmpfs of `size` holding `leave_free` bytes free: the error, what
    the start said, the data folder, and whether the server still ran afterwards."""
    tmp = tmp_path_factory.mktemp("full-disk")
    data = mount(tmp, size, leave_free=leave_free)
    server = _server(tmp / "home", data)
    said: list[str] = []
    try:
        with pytest.raises(KgdbError) as failed:
            server.start(log=said.append, timeout=240)
        running = server.running()
    finally:
        server.stop(log=lambda *_: None)
        unmount(data)
    return " ".join(str(failed.value).split()), said, data, running


def _room_for_the_system_database_only(tmp_path_factory):
    # The system database preallocates its 256 MiB transaction log; the neo4j database finds ~30 MB.
    return _start_on_a_full_disk(tmp_path_factory, "400m", 300_000_000)


def _room_for_nothing(tmp_path_factory):
    return _start_on_a_full_disk(tmp_path_factory, "64m", 1_000_000)  # not even the system database starts


@pytest.mark.head_start.with_args(_room_for_the_system_database_only)
def test_a_database_left_offline_by_a_full_disk_is_no_start(tmp_path_factory):
    error, said, data, running = head_start.result(_room_for_the_system_database_only, tmp_path_factory)
    assert not any("Neo4j is up" in line for line in said), said
    assert "Neo4j started, but database 'neo4j' is not available (offline" in error
    assert f"the disk holding {data} is full" in error and "MiB free of 400 MiB" in error
    assert "No space left on device" in error  # Neo4j's own words, from its debug.log
    assert "stopped it again" in error and not running


@pytest.mark.head_start.with_args(_room_for_nothing)
def test_a_server_that_exits_on_a_full_disk_names_the_disk(tmp_path_factory):
    error, _said, data, _running = head_start.result(_room_for_nothing, tmp_path_factory)
    assert "Neo4j exited during start-up" in error
    assert f"the disk holding {data} is full" in error and "No space left on device" in error


def test_the_running_test_server_has_its_databases_online_and_no_disk_problem(local_server, tmp_path):
    assert local_server.databases_down(wait_s=5) == []
    quiet = tmp_path / "debug.log"
    quiet.write_text("2026-01-01 00:00:00.000+0000 INFO  [o.n.k.d.Database] Started.\n", encoding="utf-8")
    assert disk_problem(tmp_path, [(quiet, 0)]) is None  # plenty of room, and a log saying nothing of it
