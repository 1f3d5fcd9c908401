"""`kgdb status`, `kgdb runs list` and `kgdb neo4j start` against the test server, run as a user would
(a subprocess of `kgdb`): a wrong password, the counts, a server already running, and what status imports."""

import os

import pytest

from kgdb.config import Settings
from kgdb.server_home import HOME_MARKER
from support.cli import heavy_modules_after, run_kgdb


def test_wrong_password_is_one_clear_line(neo4j_settings: Settings):
    out = run_kgdb("--uri", neo4j_settings.neo4j_uri, "--password", "not-the-password", "status")
    assert out.returncode == 1
    assert "wrong password" in out.stderr and "Traceback" not in out.stderr


def test_status_counts_the_database(neo4j_settings: Settings, graph):
    out = run_kgdb(
        "--uri", neo4j_settings.neo4j_uri, "--password", neo4j_settings.neo4j_password.get_secret_value(), "status"
    )
    assert out.returncode == 0, out.stderr
    assert "entities" in out.stdout


def test_start_on_running_server_says_so_and_busy_port_is_explained(neo4j_settings: Settings, tmp_path):
    home = str(neo4j_settings.neo4j_home)
    env = {"KGDB_NEO4J_PASSWORD": neo4j_settings.neo4j_password.get_secret_value()}
    if not os.path.isdir(home) or "neo4j" not in os.path.basename(home):
        pytest.skip("the test server is external or a container: there is no local home to start")
    ports = ["--bolt-port", str(neo4j_settings.neo4j_bolt_port), "--http-port", str(neo4j_settings.neo4j_http_port)]
    again = run_kgdb("neo4j", "start", "--home", home, *ports, env=env)
    assert again.returncode == 0 and "already running" in again.stdout
    # A fresh home whose ports are taken by the running test server.
    shared_lib = Settings().neo4j_home / "lib"
    fresh = tmp_path / "other"
    fresh.mkdir()
    (fresh / HOME_MARKER).touch()  # a kgdb home whose jars are the shared ones: nothing to install
    os.symlink(shared_lib, fresh / "lib")
    out = run_kgdb("neo4j", "start", "--home", str(fresh), *ports, env=env)
    assert out.returncode == 1
    assert "already in use" in out.stderr and "--bolt-port" in out.stderr


def test_status_and_runs_list_start_light(neo4j_settings: Settings, graph):
    conn = ("--uri", neo4j_settings.neo4j_uri, "--password", neo4j_settings.neo4j_password.get_secret_value())
    assert heavy_modules_after(*conn, "status") == []
    assert heavy_modules_after(*conn, "runs", "list") == []
