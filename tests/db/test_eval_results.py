"""Evaluation results a user can trust: the method asked for is the method
evaluated, one topic policy, result files that never overwrite each other, and the split said aloud."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kgdb.cli import app
from support.jamaica import QUESTIONS, TRIPLES

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def cli(kept_graph, tmp_path):
    graph = kept_graph(TRIPLES)
    env = {
        "KGDB_CACHE_DIR": str(tmp_path / "cache"),
        "KGDB_CHECKPOINTS_DIR": str(tmp_path / "ckpt"),
        "KGDB_RUNS_DIR": str(tmp_path / "runs"),
    }
    base = ["--uri", graph.settings.neo4j_uri, "--password", graph.settings.neo4j_password.get_secret_value()]
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(app, base + list(args), env=env)

    return run, tmp_path


def _questions(path, rows) -> str:
    path.write_text("".join(json.dumps(q) + "\n" for q in rows), encoding="utf-8")
    return str(path)


def test_eval_qa_never_swaps_the_method(cli):
    """No checkpoint for this graph stops `eval qa` (ask alone falls back, and says so)."""
    run, tmp = cli
    path = _questions(tmp / "mine.jsonl", QUESTIONS[:3])
    out = run("eval", "qa", "--questions", path, "--retriever", "subgraphrag", "--reasoner", "extractive")
    assert out.exit_code == 1
    assert "no subgraphrag checkpoint" in str(out.exception) and "kgdb train subgraphrag" in str(out.exception)
    assert not (tmp / "runs" / "qa").exists()


def test_a_checkpoint_from_another_graph_runs_with_a_recorded_warning(cli):
    run, tmp = cli
    from kgdb.models.checkpoints import save_checkpoint
    from kgdb.models.retrievers.subgraphrag import SubgraphRAG, SubgraphRAGConfig

    save_checkpoint(
        SubgraphRAG(SubgraphRAGConfig(hidden=8), 384),
        tmp / "ckpt" / "elsewhere",
        {
            "graph_fingerprint": "f" * 64,
            "dataset": "other",
            "embedding_model": "all-MiniLM-L6-v2",
            "embedding_dim": 384,
        },
    )
    path = _questions(tmp / "mine.jsonl", QUESTIONS[:2])
    out = run(
        "eval",
        "qa",
        "--questions",
        path,
        "--retriever",
        "subgraphrag",
        "--checkpoint",
        "elsewhere",
        "--reasoner",
        "extractive",
    )
    assert out.exit_code == 0, out.output
    assert "warning:" in out.output and "trained on another graph" in out.output
    (settings_file,) = (tmp / "runs" / "qa").glob("*/settings.json")
    recorded = json.loads(settings_file.read_text())
    assert recorded["checkpoint"] == "elsewhere" and recorded["checkpoint_graph"] == "f" * 12
    assert any("another graph" in n for n in recorded["notes"])


def test_one_topic_policy_missing_topics_are_dropped_and_counted(cli):
    """A question with one missing and one present topic is answered from the present one."""
    run, tmp = cli
    rows = [
        {
            "id": "A",
            "question": "what is the capital of jamaica?",
            "q_entity": ["Jamaica", "Atlantis"],
            "answer": ["Kingston"],
        },
        {"id": "B", "question": "what is the capital of atlantis?", "q_entity": ["Atlantis"], "answer": ["Poseidonis"]},
    ]
    path = _questions(tmp / "topics.jsonl", rows)
    out = run("eval", "qa", "--questions", path, "--retriever", "cosine", "--reasoner", "extractive")
    assert out.exit_code == 0, out.output
    (metrics_file,) = (tmp / "runs" / "qa").glob("*/metrics.json")
    metrics = json.loads(metrics_file.read_text())
    assert metrics["errors"]["questions_with_dropped_topics"] == 1 and metrics["errors"]["no_topic_in_graph"] == 1
    records = {
        r["qid"]: r
        for r in map(json.loads, next((tmp / "runs" / "qa").glob("*/results.jsonl")).read_text().splitlines())
    }
    assert records["A"]["missing_topics"] == ["Atlantis"] and records["A"]["answers"][:1] == ["Kingston"]
    assert records["B"]["stage"] == "no_topic_in_graph"


def test_results_are_named_by_file_and_a_new_file_is_evaluated_whole(cli):
    """Items 15 and 17: two question files never share a dataset key or a results folder; a file
    without a split in splits/ is evaluated whole, and the command says so before it starts."""
    run, tmp = cli
    first = _questions(tmp / "first.jsonl", QUESTIONS[:2])
    second = _questions(tmp / "second.jsonl", QUESTIONS[2:5])
    for path, n in ((first, 2), (second, 3)):
        out = run("eval", "qa", "--questions", path, "--retriever", "cosine", "--reasoner", "extractive")
        assert out.exit_code == 0, out.output
        assert f"{n} all questions of" in out.output
    folders = sorted(p.name for p in (tmp / "runs" / "qa").iterdir())
    assert len(folders) == 2 and folders[0].startswith("first-") and folders[1].startswith("second-")
    out = run("eval", "retrieval", "--questions", second, "--retriever", "cosine", "--no-write")
    assert out.exit_code == 0, out.output
    assert "evaluating split all: 3 questions" in out.output
