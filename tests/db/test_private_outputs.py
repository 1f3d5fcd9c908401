"""What kgdb writes while it answers and evaluates is the user's own: the cached embedding tables, the
results of `kgdb eval retrieval` and `kgdb eval qa` are 0600 in folders it creates 0700, under the
usual umask (022) that would otherwise leave them readable by every user of the machine."""

from __future__ import annotations

import json
import os
import stat

import pytest
from typer.testing import CliRunner

from kgdb.cli import app
from kgdb.cypher.tables import open_tables
from support.jamaica import QUESTIONS, TRIPLES

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(autouse=True)
def usual_umask(monkeypatch):
    monkeypatch.delenv("KGDB_FILE_MODE", raising=False)
    before = os.umask(0o022)
    yield
    os.umask(before)


def _not_private(root) -> dict[str, str]:
    """Whatever under `root` (itself included) is not 0700 (folder) or 0600 (file), with its mode."""
    found = {}
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode != (0o700 if path.is_dir() else 0o600):
            found[str(path.relative_to(root.parent))] = oct(mode)
    return found


@pytest.fixture
def cli(kept_graph, tmp_path):
    graph = kept_graph(TRIPLES)
    env = {
        "KGDB_CACHE_DIR": str(tmp_path / "cache"),
        "KGDB_CHECKPOINTS_DIR": str(tmp_path / "ckpt"),
        "KGDB_RUNS_DIR": str(tmp_path / "runs"),
    }
    base = ["--uri", graph.settings.neo4j_uri, "--password", graph.settings.neo4j_password.get_secret_value()]
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS[:2]), encoding="utf-8")

    def run(*args: str):
        out = CliRunner().invoke(app, base + list(args), env=env)
        assert out.exit_code == 0, out.output
        return out

    return run, tmp_path, str(questions)


def test_cached_embedding_tables_are_private(kept_graph, tmp_path):
    graph = kept_graph(TRIPLES)
    tables = open_tables(graph, tmp_path / "cache")
    assert tables.folder is not None and (tables.folder / "entity.npy").is_file()
    assert (tables.folder / "relation.npy").is_file() and (tables.folder / "relation_names.json").is_file()
    assert _not_private(tmp_path / "cache") == {}


def test_eval_retrieval_results_are_private(cli):
    run, tmp, questions = cli
    run("eval", "retrieval", "--questions", questions, "--retriever", "cosine", "--no-write")
    assert any((tmp / "runs").rglob("*.json*"))
    assert _not_private(tmp / "runs") == {}


def test_eval_qa_results_are_private(cli):
    run, tmp, questions = cli
    run("eval", "qa", "--questions", questions, "--retriever", "cosine", "--reasoner", "extractive")
    assert {p.name for p in (tmp / "runs").rglob("*")} >= {"results.jsonl", "settings.json", "metrics.json"}
    assert _not_private(tmp / "runs") == {}
