"""RAPL through the pipeline on a real Neo4j: `kgdb ask --retriever rapl` on a graph with no RAPL
checkpoint of its own uses the RAPL checkpoint shipped with kgdb (trained on WebQSP), passes the
triples of its paths (an adaptive number), returns the paths and writes them back as a run; other
retrievers without a checkpoint fall back to the shipped default retriever, cosine-dde."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kgdb.cli import app
from kgdb.cypher.writeback import show_run
from kgdb.models.default import shipped_checkpoint
from kgdb.qa.ask import AskPipeline

pytestmark = pytest.mark.usefixtures("one_thread")

TRIPLES = [
    ("Jamaica", "location.country.capital", "Kingston"),
    ("Jamaica", "location.country.official_language", "Jamaican English"),
    ("Jamaica", "location.location.containedby", "Caribbean"),
    ("Kingston", "location.location.containedby", "Jamaica"),
    ("Usain Bolt", "people.person.nationality", "Jamaica"),
    ("Usain Bolt", "people.person.place_of_birth", "Sherwood Content"),
    ("France", "location.country.capital", "Paris"),
    ("John Bradfield", "award.award_winner.awards_won", "m.0aw1"),
    ("m.0aw1", "award.award_honor.award", "Telford Medal"),
]


@pytest.fixture
def loaded(kept_graph, tmp_path):
    graph = kept_graph(TRIPLES)
    settings = graph.settings.with_overrides(
        cache_dir=tmp_path / "cache", checkpoints_dir=tmp_path / "ckpt", runs_dir=tmp_path / "runs", llm_model=None
    )
    return graph, settings


def test_ask_rapl_without_a_checkpoint_uses_the_shipped_one_and_others_fall_back_to_the_default(loaded):
    graph, settings = loaded
    other = AskPipeline(graph, settings, retriever="subgraphrag", k=20, fmt="paths")
    assert other.retrieval.name == "cosine-dde" and "cosine-dde checkpoint shipped with kgdb" in other.retriever_note
    pipe = AskPipeline(graph, settings, retriever="rapl", k=20, fmt="paths")
    assert pipe.retrieval.name == "rapl"
    assert "shipped with kgdb" in pipe.retriever_note and "webqsp" in pipe.retriever_note
    res = pipe.ask("what is the capital of jamaica?")
    assert res.topics == ["Jamaica"]
    retrieval = pipe.retrieval.retrieve("what is the capital of jamaica?")
    assert retrieval.paths and retrieval.paths[0].entities[0] == "Jamaica"
    on_paths = {(h, r, t) for p in retrieval.paths for h, r, t in _triples_of(p)}
    passed = {(t.head_id, t.relation, t.tail_id) for t in retrieval.triples}
    assert passed == on_paths and retrieval.k == len(passed) < 20  # the triples of its paths, not K
    run = show_run(graph, retrieval.run)
    assert run["k"] == retrieval.k and len(run["triples"]) == retrieval.k


def _triples_of(path):
    for i, (rel, d) in enumerate(zip(path.relations, path.directions)):
        a, b = path.entities[i], path.entities[i + 1]
        yield (a, rel, b) if d > 0 else (b, rel, a)


def test_cli_retrieve_rapl_with_the_shipped_checkpoint(loaded):
    graph, settings = loaded
    env = {
        "KGDB_NEO4J_URI": settings.neo4j_uri,
        "KGDB_NEO4J_PASSWORD": settings.neo4j_password.get_secret_value(),
        "KGDB_CACHE_DIR": str(settings.cache_dir),
        "KGDB_CHECKPOINTS_DIR": str(settings.checkpoints_dir),
        "KGDB_RUNS_DIR": str(settings.runs_dir),
    }
    out = CliRunner().invoke(
        app,
        [
            "retrieve",
            "where was usain bolt born?",
            "--retriever",
            "rapl",
            "--checkpoint",
            str(shipped_checkpoint("rapl")),
            "--json",
        ],
        env=env,
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output[out.output.index("{") :])
    assert data["retriever"] == "rapl" and data["paths"] and data["k"] == len(data["top"])
    assert data["paths"][0]["text"].startswith("Usain Bolt")
