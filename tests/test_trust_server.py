"""Server safety: a throw-away local server on free ports, started the way
users start theirs, checked for where Browser points, where the password shows up, who may read
the home, what it refuses, and its lifecycle. Never touches another server."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
import urllib.request

import psutil
import pytest

from kgdb.config import Settings
from kgdb.errors import KgdbError
from kgdb.server import DEFAULT_PASSWORD, LocalServer, free_port, server_from_settings

# Quotes, a backslash and spaces: what an argument file must carry intact.
PASSWORD = 'tr"ust me\\ 12'


def kgdb(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`kgdb ARGS` as a user runs it; an env value of None removes that variable."""
    merged = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "kgdb", *args],
        capture_output=True,
        text=True,
        env={k: v for k, v in merged.items() if v is not None},
        timeout=300,
    )


def _lib() -> "os.PathLike":
    shared = server_from_settings(Settings())
    shared.install_jars(log=lambda *_: None)
    return shared.lib


@pytest.fixture(scope="module")
def local_server(tmp_path_factory):
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
        lib_dir=_lib(),
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


def test_readiness_polls_the_listen_address_and_concurrent_starts_are_one(local_server):
    server, results, logs, _ = local_server
    # before: start polled 127.0.0.1 and "failed" after 180 s; two starts both reported success
    assert sorted(r for r in results if isinstance(r, bool)) == [False, True], results
    assert any("already running" in line for line in logs)
    assert (
        len([p for p in psutil.process_iter(["cmdline"]) if f"--home-dir={server.home}" in (p.info["cmdline"] or [])])
        == 1
    )


def test_password_is_never_on_a_command_line_nor_in_the_jvm_environment(local_server):
    server, _, _, seen = local_server
    assert seen == []
    environ = psutil.Process(server.pid()).environ()
    assert "KGDB_NEO4J_PASSWORD" not in environ
    assert server.password_works() is True  # the quoted argument file carried it intact


def test_home_is_owner_only(local_server):
    server, *_ = local_server
    assert stat.S_IMODE(server.home.stat().st_mode) == 0o700


def test_browser_discovery_advertises_this_servers_bolt_port(local_server):
    server, *_ = local_server
    with urllib.request.urlopen(f"http://127.0.0.2:{server.http_port}/", timeout=5) as resp:
        discovery = json.load(resp)
    assert discovery["bolt_direct"] == f"bolt://127.0.0.2:{server.bolt_port}"
    assert f"connectURL=bolt%3A%2F%2F127.0.0.2%3A{server.bolt_port}" in server.browser_link


def test_a_different_password_at_a_later_start_is_not_ignored_silently(local_server):
    server, *_ = local_server
    other = LocalServer(
        home=server.home,
        password="another-password",
        bolt_port=server.bolt_port,
        http_port=server.http_port,
        listen_address="127.0.0.2",
        lib_dir=server.lib,
    )
    logs: list[str] = []
    assert other.start(log=logs.append) is False
    assert any("set only at the first" in line and "ALTER CURRENT USER" in line for line in logs), logs


def test_a_copied_pid_file_does_not_make_another_home_stop_this_server(local_server, tmp_path):
    server, *_ = local_server
    copy = LocalServer(home=tmp_path / "copy", password=PASSWORD, lib_dir=server.lib)
    copy.pid_file.parent.mkdir(parents=True)
    shutil.copy(server.pid_file, copy.pid_file)
    assert copy.pid() is None and copy.running() is False
    assert copy.stop(log=lambda *_: None) is False
    assert server.running()


def test_neo4j_status_exits_non_zero_when_the_server_is_down(local_server, tmp_path):
    server, *_ = local_server
    up = kgdb(
        "neo4j",
        "status",
        "--home",
        str(server.home),
        env={"KGDB_NEO4J_HTTP_PORT": str(server.http_port), "KGDB_NEO4J_BOLT_PORT": str(server.bolt_port)},
    )
    assert up.returncode == 0 and "running" in up.stdout, up.stderr
    down = kgdb("neo4j", "status", "--home", str(tmp_path / "nothing-here"))
    assert down.returncode == 3 and "not installed" in down.stdout


def test_install_leaves_a_running_servers_conf_alone(local_server):
    server, *_ = local_server
    conf = server.conf_dir / "neo4j.conf"
    before = conf.read_text()
    mtime = conf.stat().st_mtime_ns
    out = kgdb("neo4j", "install", "--home", str(server.home), "--bolt-port", "7687", "--http-port", "7474")
    assert out.returncode == 0, out.stderr
    assert "left its neo4j.conf" in out.stdout
    assert conf.read_text() == before and conf.stat().st_mtime_ns == mtime


def test_non_loopback_listen_with_the_default_password_is_refused(tmp_path):
    server = LocalServer(
        home=tmp_path / "exposed",
        password=DEFAULT_PASSWORD,
        listen_address="0.0.0.0",
        bolt_port=free_port(),
        http_port=free_port(),
        lib_dir=_lib(),
    )
    with pytest.raises(KgdbError, match="default password"):
        server.start(log=lambda *_: None)
    assert not (tmp_path / "exposed" / "run" / "kgdb-neo4j.pid").exists()
    logs: list[str] = []
    LocalServer(home=tmp_path / "x", password="own-password", listen_address="0.0.0.0").check_exposure(logs.append)
    assert any("not encrypted" in line for line in logs)


def test_setting_the_bolt_port_changes_the_uri_kgdb_connects_to(tmp_path):
    empty = tmp_path / "kgdb.toml"  # no kgdb.toml of the working directory decides the URI
    empty.write_text("")
    out = kgdb(
        "config", "show", env={"KGDB_NEO4J_BOLT_PORT": "7999", "KGDB_NEO4J_URI": None, "KGDB_CONFIG": str(empty)}
    )
    assert out.returncode == 0 and "bolt://localhost:7999" in out.stdout, out.stdout
    explicit = kgdb("config", "show", env={"KGDB_NEO4J_BOLT_PORT": "7999", "KGDB_NEO4J_URI": "bolt://db:7000"})
    assert "bolt://db:7000" in explicit.stdout


def test_jars_resolve_into_a_shared_cache_not_a_home(tmp_path):
    home = tmp_path / "fresh-home"
    server = server_from_settings(Settings(neo4j_home=home))
    assert not str(server.lib).startswith(str(home))


def test_install_jars_only_creates_no_server_home(tmp_path):
    home = tmp_path / "untouched"
    out = kgdb("neo4j", "install", "--jars-only", "--home", str(home))
    assert out.returncode == 0, out.stderr
    assert not home.exists()


def test_dense_threshold_reaches_the_conf_neo4j_admin_import_reads(tmp_path):
    server = server_from_settings(Settings(neo4j_home=tmp_path / "h", neo4j_dense_threshold=1234))
    assert "db.relationship_grouping_threshold=1234\n" in server.write_conf().read_text()
    with pytest.raises(KgdbError, match="(neo4j_dense_threshold|KGDB_NEO4J_DENSE_THRESHOLD) must be at least 1, got 0"):
        server_from_settings(Settings(neo4j_home=tmp_path / "g", neo4j_dense_threshold=0)).write_conf()


def test_ipv6_loopback_addresses_are_bracketed_in_every_uri_printed(tmp_path):
    from neo4j import GraphDatabase

    server = LocalServer(home=tmp_path / "h", password=PASSWORD, bolt_port=7822, http_port=7522, listen_address="::1")
    assert server.bolt_uri == "bolt://[::1]:7822"
    assert server.browser_url == "http://[::1]:7522/browser/"
    assert server.browser_link == "http://[::1]:7522/browser/?connectURL=bolt%3A%2F%2F%5B%3A%3A1%5D%3A7822"
    GraphDatabase.driver(server.bolt_uri, auth=("neo4j", "x")).close()  # the driver accepts it (no connection made)
    conf = server.write_conf().read_text()
    assert "server.bolt.advertised_address=[::1]:7822" in conf and "server.http.advertised_address=[::1]:7522" in conf


def test_a_home_that_is_not_a_kgdb_home_is_refused_and_left_untouched(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "someone-elses.txt").write_text("x")
    os.chmod(shared, 0o1777)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "target")
    (tmp_path / "target").mkdir()
    for home, needle in ((shared, "not a kgdb Neo4j home"), (link, "symbolic link"), ("", "empty")):
        with pytest.raises(KgdbError, match=needle):
            LocalServer(home=home, password=PASSWORD).write_conf()
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    assert sorted(p.name for p in shared.iterdir()) == ["someone-elses.txt"]
    assert list((tmp_path / "target").iterdir()) == []
    fresh = LocalServer(home=tmp_path / "new", password=PASSWORD)
    fresh.write_conf()
    LocalServer(home=tmp_path / "new", password=PASSWORD).write_conf()  # its own home: accepted again


def test_an_empty_kgdb_neo4j_home_is_one_clear_error_not_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KGDB_NEO4J_HOME", "")
    with pytest.raises(KgdbError, match="KGDB_NEO4J_HOME / --home is empty"):
        server_from_settings(Settings()).install(log=lambda *_: None)
    assert list(tmp_path.iterdir()) == []


# Two processes that install the jars of a fresh machine at once, as two `kgdb neo4j start`s do.
_INSTALL = """
import sys
from pathlib import Path
from kgdb.server import LocalServer, jar_cache
server = LocalServer(home=Path(sys.argv[2]), password="x", lib_dir=jar_cache(Path(sys.argv[1])))
server.install_jars(log=print)
"""


def test_concurrent_fresh_jar_installs_wait_for_one_another(tmp_path):
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _INSTALL, str(tmp_path / "cache"), str(tmp_path / f"home{i}")],
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(2)
    ]
    outs = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    for rc, out, err in outs:
        assert rc == 0 and "Traceback" not in err, out + err
    assert any("waiting for it to finish" in out for _, out, _ in outs), outs
    lib = tmp_path / "cache" / "neo4j-lib"
    (installed,) = [p for p in lib.iterdir() if p.is_dir() and not p.name.endswith((".maven", ".partial"))]
    assert (installed / ".kgdb-complete").is_file() and len(list(installed.glob("*.jar"))) > 100


@pytest.mark.db
@pytest.mark.slow  # five starts of a throw-away server (~2 min idle, ~10 min on a busy 2-core machine)
def test_a_home_that_still_has_the_default_password_never_listens_beyond_loopback(tmp_path):
    import dataclasses

    from neo4j import GraphDatabase

    first = LocalServer(
        home=tmp_path / "home",
        password=DEFAULT_PASSWORD,
        bolt_port=free_port(),
        http_port=free_port(),
        heap="512m",
        pagecache="128m",
        lib_dir=_lib(),
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
