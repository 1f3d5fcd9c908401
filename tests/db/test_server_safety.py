"""Server safety: a throw-away local server on free ports, started the way
users start theirs, checked for where Browser points, where the password shows up, who may read
the home, what it refuses, and its lifecycle. Never touches another server."""

from __future__ import annotations

import json
import os
import shutil
import stat
import threading
import time
import urllib.request

import psutil
import pytest

from kgdb.errors import KgdbError
from kgdb.server import DEFAULT_PASSWORD, LocalServer
from kgdb.server_home import free_port
from support import head_start
from support.cli import run_kgdb
from support.server import PASSWORD, SHORT_LIVED_JVM, shared_lib
from support.spare_servers import jars


@pytest.fixture(scope="module")
def loopback_server(tmp_path_factory):
    """A server on 127.0.0.2 (loopback, but not 127.0.0.1), started by two concurrent `start()`s
    while a watcher looks for the password on any process's command line."""
    home = tmp_path_factory.mktemp("trust") / "home"
    server = LocalServer(
        home=home,
        password=PASSWORD,
        bolt_port=free_port(),
        http_port=free_port(),
        listen_address="127.0.0.2",
        heap="512m",
        pagecache="128m",
        lib_dir=shared_lib(),
        jvm_options=SHORT_LIVED_JVM,
    )
    seen: list[str] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for p in psutil.process_iter(["cmdline"]):
                if any(PASSWORD in arg or 'tr"ust' in arg for arg in (p.info["cmdline"] or [])):
                    seen.append(" ".join(p.info["cmdline"]))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    results: list[bool | Exception] = []
    logs: list[str] = []

    def start() -> None:
        try:
            results.append(server.start(log=logs.append, timeout=240))
        except Exception as exc:  # noqa: BLE001 - recorded for the assertions
            results.append(exc)

    env_before = os.environ.get("KGDB_NEO4J_PASSWORD")
    os.environ["KGDB_NEO4J_PASSWORD"] = PASSWORD  # what users export; the JVM must not inherit it
    try:
        threads = [threading.Thread(target=start) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        stop.set()
        watcher.join()
        if env_before is None:
            os.environ.pop("KGDB_NEO4J_PASSWORD", None)
        else:
            os.environ["KGDB_NEO4J_PASSWORD"] = env_before
    try:
        yield server, results, logs, seen
    finally:
        server.stop(log=lambda *_: None)


def test_readiness_polls_the_listen_address_and_concurrent_starts_are_one(loopback_server):
    server, results, logs, _ = loopback_server
    # before: start polled 127.0.0.1 and "failed" after 180 s; two starts both reported success
    assert sorted(r for r in results if isinstance(r, bool)) == [False, True], results
    assert any("already running" in line for line in logs)
    assert (
        len([p for p in psutil.process_iter(["cmdline"]) if f"--home-dir={server.home}" in (p.info["cmdline"] or [])])
        == 1
    )


def test_password_is_never_on_a_command_line_nor_in_the_jvm_environment(loopback_server):
    server, _, _, seen = loopback_server
    assert seen == []
    environ = psutil.Process(server.pid()).environ()
    assert "KGDB_NEO4J_PASSWORD" not in environ
    assert server.password_works() is True  # the quoted argument file carried it intact


def test_home_is_owner_only(loopback_server):
    server, *_ = loopback_server
    assert stat.S_IMODE(server.home.stat().st_mode) == 0o700


def test_browser_discovery_advertises_this_servers_bolt_port(loopback_server):
    server, *_ = loopback_server
    with urllib.request.urlopen(f"http://127.0.0.2:{server.http_port}/", timeout=5) as resp:
        discovery = json.load(resp)
    assert discovery["bolt_direct"] == f"bolt://127.0.0.2:{server.bolt_port}"
    assert f"connectURL=bolt%3A%2F%2F127.0.0.2%3A{server.bolt_port}" in server.browser_link


def test_a_different_password_at_a_later_start_is_not_ignored_silently(loopback_server):
    server, *_ = loopback_server
    other = LocalServer(
        home=server.home,
        password="another-password",
        bolt_port=server.bolt_port,
        http_port=server.http_port,
        listen_address="127.0.0.2",
        lib_dir=server.lib,
        jvm_options=SHORT_LIVED_JVM,
    )
    logs: list[str] = []
    assert other.start(log=logs.append) is False
    assert any("set only at the first" in line and "ALTER CURRENT USER" in line for line in logs), logs


def test_the_servers_jvm_runs_with_the_options_it_was_given(loopback_server):
    server, *_ = loopback_server
    command = psutil.Process(server.pid()).cmdline()
    assert [flag for flag in command if flag in SHORT_LIVED_JVM] == list(SHORT_LIVED_JVM), command


def test_a_copied_pid_file_does_not_make_another_home_stop_this_server(loopback_server, tmp_path):
    server, *_ = loopback_server
    copy = LocalServer(home=tmp_path / "copy", password=PASSWORD, lib_dir=server.lib)
    copy.pid_file.parent.mkdir(parents=True)
    shutil.copy(server.pid_file, copy.pid_file)
    assert copy.pid() is None and copy.running() is False
    assert copy.stop(log=lambda *_: None) is False
    assert server.running()


def test_neo4j_status_exits_non_zero_when_the_server_is_down(loopback_server, tmp_path):
    server, *_ = loopback_server
    up = run_kgdb(
        "neo4j",
        "status",
        "--home",
        str(server.home),
        env={"KGDB_NEO4J_HTTP_PORT": str(server.http_port), "KGDB_NEO4J_BOLT_PORT": str(server.bolt_port)},
    )
    assert up.returncode == 0 and "running" in up.stdout, up.stderr
    down = run_kgdb("neo4j", "status", "--home", str(tmp_path / "nothing-here"))
    assert down.returncode == 3 and "not installed" in down.stdout


def test_install_leaves_a_running_servers_conf_alone(loopback_server):
    server, *_ = loopback_server
    conf = server.conf_dir / "neo4j.conf"
    before = conf.read_text()
    mtime = conf.stat().st_mtime_ns
    out = run_kgdb("neo4j", "install", "--home", str(server.home), "--bolt-port", "7687", "--http-port", "7474")
    assert out.returncode == 0, out.stderr
    assert "left its neo4j.conf" in out.stdout
    assert conf.read_text() == before and conf.stat().st_mtime_ns == mtime


def _default_password_then_changed(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A home started once with the documented default password: refused beyond loopback, whatever
    KGDB_NEO4J_PASSWORD says; once the password is changed in Neo4j, it may listen there."""
    import dataclasses

    from neo4j import GraphDatabase

    first = LocalServer(
        home=tmp_path_factory.mktemp("default-password") / "home",
        password=DEFAULT_PASSWORD,
        bolt_port=free_port(),
        http_port=free_port(),
        heap="512m",
        pagecache="128m",
        lib_dir=jars(),
        jvm_options=SHORT_LIVED_JVM,
    )
    later = dataclasses.replace(first, password="a-new-password", listen_address="0.0.0.0")
    try:
        first.start(log=lambda *_: None, timeout=240)
        first.stop(log=lambda *_: None)
        with pytest.raises(KgdbError, match="still has the documented default password"):
            later.start(log=lambda *_: None, timeout=240)  # KGDB_NEO4J_PASSWORD says otherwise; the server does not
        assert not later.running()
        first.start(log=lambda *_: None, timeout=240)
        with GraphDatabase.driver(first.bolt_uri, auth=("neo4j", DEFAULT_PASSWORD)) as driver:
            driver.execute_query(
                "ALTER CURRENT USER SET PASSWORD FROM $old TO $new",
                old=DEFAULT_PASSWORD,
                new="a-new-password",
                database_="system",
            )
        first.stop(log=lambda *_: None)
        assert later.start(log=lambda *_: None, timeout=240) is True  # changed: it may listen beyond loopback
        assert later.password_works() is True and later.password_works(DEFAULT_PASSWORD) is False
    finally:
        later.stop(log=lambda *_: None)


@pytest.mark.slow  # five starts of a throw-away server (~2 min idle, ~10 min on a busy 2-core machine), begun early
@pytest.mark.head_start.with_args(_default_password_then_changed)
def test_a_home_that_still_has_the_default_password_never_listens_beyond_loopback(tmp_path_factory):
    head_start.result(_default_password_then_changed, tmp_path_factory)
