"""`kgdb` run as a user runs it: a subprocess of the installed command (or `python -m kgdb`), or
typer's runner, with the test server's connection settings; and what a fresh interpreter imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgdb.config import Settings

KGDB = (
    [sys.executable, "-m", "kgdb.cli"]
    if not Path(sys.executable).with_name("kgdb").exists()
    else [str(Path(sys.executable).with_name("kgdb"))]
)


def env_for(settings: Settings, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "COLUMNS": "400",
        "KGDB_NEO4J_URI": settings.neo4j_uri,
        "KGDB_NEO4J_USER": settings.neo4j_user,
        "KGDB_NEO4J_PASSWORD": settings.neo4j_password.get_secret_value(),
        **extra,
    }


def kgdb(settings: Settings, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([*KGDB, *args], capture_output=True, text=True, env=env_for(settings, **env), timeout=300)


def invoke(settings: Settings, *args: str, env: dict[str, str] | None = None):
    """`kgdb ARGS` through typer's runner, in this process, with the settings' server and folders and no LLM
    unless `env` names one (an empty value unsets a variable)."""
    from kgdb.cli import app

    base = {
        "KGDB_NEO4J_URI": settings.neo4j_uri,
        "KGDB_NEO4J_PASSWORD": settings.neo4j_password.get_secret_value(),
        "KGDB_CACHE_DIR": str(settings.cache_dir),
        "KGDB_CHECKPOINTS_DIR": str(settings.checkpoints_dir),
        "KGDB_RUNS_DIR": str(settings.runs_dir),
        "KGDB_LLM_MODEL": "",
        "KGDB_LLM_BASE_URL": "",
        **(env or {}),
    }
    with pytest.MonkeyPatch.context() as mp:
        for key in ("KGDB_LLM_MODEL", "KGDB_LLM_BASE_URL", "KGDB_LLM_API_KEY"):
            mp.delenv(key, raising=False)
        return CliRunner().invoke(
            app, list(args), env={k: v for k, v in base.items() if v != ""}, catch_exceptions=True
        )


def one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def run_kgdb(*args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    """`python -m kgdb ARGS` with no connection settings of its own; an env value of None removes that
    variable."""
    merged = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "kgdb", *args],
        capture_output=True,
        text=True,
        env={k: v for k, v in merged.items() if v is not None},
        timeout=timeout,
    )


# What must stay out of the commands people run most often: each costs 0.1-3 s of start-up. Not pyarrow:
# the neo4j driver (6.x) imports it, with numpy, whenever it is installed, before any kgdb code runs.
START_UP_HEAVY = ("torch", "sentence_transformers", "transformers", "pydantic", "pyarrow.compute")


def heavy_modules_after(*args: str, env: dict | None = None, code: int = 0) -> list[str]:
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


# What the torch-free route of a cold `kgdb ask` must not import.
MODEL_SIDE = ("torch", "torch_geometric", "sentence_transformers", "transformers", "sklearn")


def run_python(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env={**os.environ, **env}
    )
