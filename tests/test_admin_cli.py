"""The server and configuration commands, run as a user would (a subprocess of `kgdb`)."""

import os
import socket
import subprocess
import sys

import pytest

from kgdb.config import Settings
from kgdb.server import HOME_MARKER


def kgdb(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kgdb", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_config_show_masks_password():
    out = kgdb("config", "show", env={"KGDB_NEO4J_PASSWORD": "s3cret-value", "KGDB_NEO4J_URI": "bolt://example:1234"})
    assert out.returncode == 0
    assert "s3cret-value" not in out.stdout and "********" in out.stdout
    assert "bolt://example:1234" in out.stdout


def test_config_flag_overrides_env():
    out = kgdb("--uri", "bolt://flag:9", "config", "show", env={"KGDB_NEO4J_URI": "bolt://env:1"})
    assert "bolt://flag:9" in out.stdout and "bolt://env:1" not in out.stdout


def test_toml_file_is_read(tmp_path):
    toml = tmp_path / "kgdb.toml"
    toml.write_text('neo4j_database = "fromtoml"\nembedding_batch_size = 17\n')
    out = kgdb("config", "show", env={"KGDB_CONFIG": str(toml)})
    assert "fromtoml" in out.stdout and "17" in out.stdout


def test_unknown_and_retired_settings_are_named(tmp_path):
    toml = tmp_path / "kgdb.toml"
    toml.write_text('neo4j_databse = "typo"\n')
    out = kgdb("config", "show", env={"KGDB_CONFIG": str(toml)})
    assert (
        out.returncode != 0
        and "neo4j_databse" in out.stderr
        and str(toml) in out.stderr
        and "Traceback" not in out.stderr
    )
    toml.write_text("fetch_max_hubs = 8\n")
    out = kgdb("config", "show", env={"KGDB_CONFIG": str(toml)})
    assert out.returncode != 0 and "KGDB_FETCH_HUB_SCAN" in out.stderr
    out = kgdb("config", "show", env={"KGDB_FETCH_MAX_HUBS": "8", "KGDB_CONFIG": "/nonexistent.toml"})
    assert (
        out.returncode != 0 and "KGDB_FETCH_MAX_HUBS is no longer read" in out.stderr and "Traceback" not in out.stderr
    )


def test_wrong_password_is_one_clear_line(neo4j_settings: Settings):
    out = kgdb("--uri", neo4j_settings.neo4j_uri, "--password", "not-the-password", "status")
    assert out.returncode == 1
    assert "wrong password" in out.stderr and "Traceback" not in out.stderr


def test_unreachable_server_is_one_clear_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = kgdb("--uri", f"bolt://127.0.0.1:{port}", "status")
    assert out.returncode == 1
    assert "cannot reach Neo4j" in out.stderr and "Traceback" not in out.stderr


def test_status_counts_the_database(neo4j_settings: Settings, graph):
    out = kgdb(
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
    again = kgdb("neo4j", "start", "--home", home, *ports, env=env)
    assert again.returncode == 0 and "already running" in again.stdout
    # A fresh home whose ports are taken by the running test server.
    shared_lib = Settings().neo4j_home / "lib"
    fresh = tmp_path / "other"
    fresh.mkdir()
    (fresh / HOME_MARKER).touch()  # a kgdb home whose jars are the shared ones: nothing to install
    os.symlink(shared_lib, fresh / "lib")
    out = kgdb("neo4j", "start", "--home", str(fresh), *ports, env=env)
    assert out.returncode == 1
    assert "already in use" in out.stderr and "--bolt-port" in out.stderr


# What must stay out of the commands people run most often: each costs 0.1-3 s of start-up. Not pyarrow:
# the neo4j driver (6.x) imports it, with numpy, whenever it is installed, before any kgdb code runs.
START_UP_HEAVY = ("torch", "sentence_transformers", "transformers", "pydantic")


def _heavy_modules_after(*args: str, env: dict | None = None, code: int = 0) -> list[str]:
    """Runs `kgdb ARGS` in a fresh interpreter; the heavy modules it imported on the way."""
    script = (
        "import sys\nfrom kgdb.cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    print('EXIT', e.code or 0)\n"
        f"print('HEAVY', sorted(m for m in {START_UP_HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {}), "COLUMNS": "200"},
        timeout=120,
    )
    assert f"EXIT {code}" in out.stdout and "Traceback" not in out.stderr, out.stdout + out.stderr
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("HEAVY ")
    return eval(last.removeprefix("HEAVY "))


def test_help_and_server_status_start_light(tmp_path):
    assert _heavy_modules_after("--help") == []
    # Exit 3: not installed in an empty home (the LSB code for "not running").
    assert _heavy_modules_after("neo4j", "status", env={"KGDB_NEO4J_HOME": str(tmp_path)}, code=3) == []


def test_status_and_runs_list_start_light(neo4j_settings: Settings, graph):
    conn = ("--uri", neo4j_settings.neo4j_uri, "--password", neo4j_settings.neo4j_password.get_secret_value())
    assert _heavy_modules_after(*conn, "status") == []
    assert _heavy_modules_after(*conn, "runs", "list") == []


def test_bad_setting_in_the_environment_is_one_clear_line():
    out = kgdb("config", "show", env={"KGDB_NEO4J_BOLT_PORT": "seventy"})
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "KGDB_NEO4J_BOLT_PORT must be an integer, got 'seventy'" in out.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["train", "rapl", "--cap"],
        ["train", "rapl", "--hops"],
        ["train", "rapl", "--max-val"],
        ["label", "--cap"],
        ["label", "--hops"],
        ["label", "--limit"],
    ],
)
def test_a_count_below_one_is_refused_before_anything_runs(args, tmp_path):
    # `cap or default` read 0 as "unset" and trained or labelled with the default instead
    from typer.testing import CliRunner

    from kgdb.cli import app

    questions = tmp_path / "q.jsonl"
    questions.write_text("")
    result = CliRunner().invoke(app, [*args[:-1], "--questions", str(questions), args[-1], "0"])
    assert result.exit_code == 2 and "not in the range x>=1" in result.output, result.output


def test_tune_per_file_zero_skips_the_tuning_and_a_negative_count_is_refused(tmp_path):
    # 0 means "no tuning" (rrp-ranker, rrp), as documented; a lower bound of 1 would make it unusable
    from typer.testing import CliRunner

    from kgdb.cli import app

    questions = tmp_path / "q.jsonl"
    questions.write_text("")
    refused = CliRunner().invoke(app, ["train", "rrp-ranker", "--questions", str(questions), "--tune-per-file", "-1"])
    assert refused.exit_code == 2 and "not in the range x>=0" in refused.output, refused.output
    accepted = CliRunner().invoke(
        app,
        ["--uri", "bolt://localhost:1", "train", "rrp-ranker", "--questions", str(questions), "--tune-per-file", "0"],
    )
    # past option parsing: it fails later, on the unreachable server
    assert accepted.exit_code == 1 and "cannot reach Neo4j at bolt://localhost:1" in str(accepted.exception), (
        accepted.output
    )
