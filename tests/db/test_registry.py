"""A retriever defined outside kgdb (tests/support/plugins.py) is trained, evaluated and asked with
through the CLI by nothing more than its registration: no edit anywhere else in kgdb."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kgdb.cli import app
from support.jamaica import QUESTIONS, TRIPLES
from support.plugins import ToyRetriever  # noqa: F401  (registers toy-test)

pytestmark = pytest.mark.usefixtures("one_thread")


def test_toy_retriever_trains_evaluates_and_answers_through_the_cli(kept_graph, tmp_path):
    graph = kept_graph(TRIPLES)
    path = tmp_path / "toy.jsonl"  # dataset key "toy": 7 train, 2 val, 1 test questions by the hash rule
    path.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    settings = graph.settings
    env = {
        "KGDB_CACHE_DIR": str(tmp_path / "cache"),
        "KGDB_CHECKPOINTS_DIR": str(tmp_path / "ckpt"),
        "KGDB_RUNS_DIR": str(tmp_path / "runs"),
    }
    base = ["--uri", settings.neo4j_uri, "--password", settings.neo4j_password.get_secret_value()]
    runner = CliRunner()

    listed = runner.invoke(app, ["retrievers"], env=env)
    assert listed.exit_code == 0 and "toy-test" in listed.output

    trained = runner.invoke(
        app,
        base
        + ["train", "toy-test", "--questions", str(path), "--max-epochs", "3", "--set", "scale=2.0", "--name", "toy"],
        env=env,
    )
    assert trained.exit_code == 0, trained.output
    config = json.loads((tmp_path / "ckpt" / "toy" / "config.json").read_text())
    assert config["retriever"] == "toy-test" and config["model"] == {"scale": 2.0}
    assert (tmp_path / "ckpt" / "toy" / "model.safetensors").is_file()
    assert len(config["result"]["epochs"]) == 3

    evaluated = runner.invoke(
        app,
        base
        + ["eval", "retrieval", "--questions", str(path), "--split", "all", "--retriever", "toy-test", "--no-write"],
        env=env,
    )
    assert evaluated.exit_code == 0, evaluated.output
    (result,) = (tmp_path / "ckpt" / "toy").glob("eval-toy-*-all-toy-test-cap*-hops*.json")
    report = json.loads(result.read_text())
    assert report["retriever"] == "toy-test" and report["checkpoint"] == "toy" and report["evaluated"] == len(QUESTIONS)

    # No --checkpoint: ask finds the toy checkpoint trained on this graph by itself.
    asked = runner.invoke(
        app,
        base
        + ["ask", "what is the capital of jamaica?", "--retriever", "toy-test", "--reasoner", "extractive", "--json"],
        env=env,
    )
    assert asked.exit_code == 0, asked.output
    payload = json.loads(asked.output)
    assert payload["retriever"] == "toy-test" and payload["retriever_note"] is None
    assert payload["topics"] == ["Jamaica"] and payload["answers"]


def test_a_trainable_retriever_without_checkpoint_is_a_typed_error(kept_graph, tmp_path):
    from kgdb.models.checkpoints import NoCheckpointError
    from kgdb.pipeline import RetrievePipeline

    graph = kept_graph(TRIPLES)
    settings = graph.settings.with_overrides(cache_dir=tmp_path / "cache", checkpoints_dir=tmp_path / "none")
    with pytest.raises(NoCheckpointError) as info:
        RetrievePipeline(graph, settings, "toy-test")
    assert info.value.retriever == "toy-test" and "kgdb train toy-test" in str(info.value)
