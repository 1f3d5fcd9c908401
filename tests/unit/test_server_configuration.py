"""Server settings checked without starting a server: the default password never listens beyond
loopback, the Bolt port decides the URI, jars resolve into a shared cache and `--jars-only` makes no
home, the conf neo4j-admin import reads, IPv6 loopback URIs, and homes that are not kgdb's."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from kgdb.config import Settings
from kgdb.errors import KgdbError
from kgdb.server import DEFAULT_PASSWORD, LocalServer, server_from_settings
from kgdb.server_home import free_port
from support.cli import run_kgdb
from support.server import PASSWORD, shared_lib


def test_non_loopback_listen_with_the_default_password_is_refused(tmp_path):
    server = LocalServer(
        home=tmp_path / "exposed",
        password=DEFAULT_PASSWORD,
        listen_address="0.0.0.0",
        bolt_port=free_port(),
        http_port=free_port(),
        lib_dir=shared_lib(),
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
    out = run_kgdb(
        "config", "show", env={"KGDB_NEO4J_BOLT_PORT": "7999", "KGDB_NEO4J_URI": None, "KGDB_CONFIG": str(empty)}
    )
    assert out.returncode == 0 and "bolt://localhost:7999" in out.stdout, out.stdout
    explicit = run_kgdb("config", "show", env={"KGDB_NEO4J_BOLT_PORT": "7999", "KGDB_NEO4J_URI": "bolt://db:7000"})
    assert "bolt://db:7000" in explicit.stdout


def test_jars_resolve_into_a_shared_cache_not_a_home(tmp_path):
    home = tmp_path / "fresh-home"
    server = server_from_settings(Settings(neo4j_home=home))
    assert not str(server.lib).startswith(str(home))


def test_install_jars_only_creates_no_server_home(tmp_path):
    home = tmp_path / "untouched"
    out = run_kgdb("neo4j", "install", "--jars-only", "--home", str(home))
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
from kgdb.server import LocalServer
from kgdb.server_jars import jar_cache
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
