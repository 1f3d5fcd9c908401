"""Benchmarks read their datasets from KGDB_DATA, and fail with one line, from any working directory,
when the data is missing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support import ROOT

# -- benchmark paths -------------------------------------------------------------------
BENCH = ROOT / "benchmarks"


@pytest.mark.parametrize(
    "script, args",
    [
        ("subgraph.py", ["webqsp", "--questions"]),
        ("retrieve.py", ["--questions"]),
        ("load.py", ["--data"]),
    ],
)
def test_benchmarks_fail_with_one_line_when_data_is_missing_from_any_working_directory(tmp_path, script, args):
    missing = tmp_path / "nowhere" / "questions.jsonl"
    out = subprocess.run(
        [sys.executable, str(BENCH / script), *args, str(missing)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1 and "not found" in lines[0] and "Traceback" not in out.stderr, (
        out.stderr
    )


def test_benchmark_data_location_is_read_from_kgdb_data():
    for script in ("subgraph.py", "retrieve.py"):
        text = (BENCH / script).read_text()
        assert 'os.environ.get("KGDB_DATA"' in text
