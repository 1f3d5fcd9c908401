"""The retrieve pipeline end to end on a real Neo4j: cosine and a trained SubgraphRAG checkpoint,
the split cache (second run skips the DB), write-back, `kgdb retrieve` and `kgdb eval retrieval`."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

pytestmark = pytest.mark.usefixtures("one_thread")
from typer.testing import CliRunner

from kgdb.cli import app
from kgdb.cypher.tables import graph_fingerprint
from kgdb.cypher.writeback import show_run
from kgdb.data.questions import read_questions
from kgdb.embeddings import get_embedder
from kgdb.errors import KgdbError
from kgdb.models.checkpoints import CONFIG, save_checkpoint
from kgdb.models.default import SHIPPED_FOLDER
from kgdb.models.retrievers.subgraphrag import SubgraphRAG, SubgraphRAGConfig
from kgdb.pipeline import QuestionInput, RetrievePipeline, prepare_split
from kgdb.pipeline.vectors import entity_vectors, with_local_entities
from kgdb.training.trainer import TrainConfig, train
from support.jamaica import QUESTIONS, TRIPLES


@pytest.fixture
def loaded(kept_graph, tmp_path):
    graph = kept_graph(TRIPLES)
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    settings = graph.settings.with_overrides(
        cache_dir=tmp_path / "cache", checkpoints_dir=tmp_path / "ckpt", runs_dir=tmp_path / "runs"
    )
    return graph, settings, path


def _split(graph, settings, path, questions):
    fp, info = graph_fingerprint(graph)
    embedder = get_embedder(info["model"])
    return prepare_split(
        graph,
        cache_dir=settings.cache_dir,
        dataset="webqsp",
        split="all",
        source=path,
        questions=questions,
        embed=embedder.encode,
        graph_fingerprint=fp,
        embedding_model=info["model"],
        hops=2,
        cap=None,
    )


def test_cosine_pipeline_writes_back(loaded):
    graph, settings, _ = loaded
    pipe = RetrievePipeline(graph, settings, "cosine", k=3)
    res = pipe.retrieve("what is the capital of jamaica?", ["Jamaica"], qid="q1")
    assert res.subgraph.num_triples == 10  # everything within 2 hops of Jamaica
    assert [t.rank for t in res.top] == [1, 2, 3]
    assert [t.score for t in res.top] == sorted((t.score for t in res.top), reverse=True)
    assert res.top[0].score == pytest.approx(float(res.scores.max()))
    assert set(res.timings) >= {"embed", "link", "fetch", "featurise", "score", "write"}
    shown = show_run(graph, res.run)
    assert shown  # the run exists in the graph
    # Linking path: no topics given.
    linked = pipe.retrieve("what is the capital of france?")
    assert "France" in linked.topics
    with pytest.raises(KgdbError):
        pipe.retrieve("   ")
    with pytest.raises(KgdbError, match="no subgraphrag checkpoint"):
        RetrievePipeline(graph, settings, "subgraphrag")


def test_a_checkpoint_serves_at_its_validation_chosen_cap_unless_told_otherwise(loaded):
    graph, settings, _ = loaded
    folder = settings.checkpoints_dir / "served"
    shutil.copytree(SHIPPED_FOLDER / "cosine-dde-webqsp", folder)
    config = json.loads((folder / CONFIG).read_text())

    def served(fetch: dict, **kw) -> RetrievePipeline:
        (folder / CONFIG).write_text(json.dumps({**config, "fetch": fetch}))
        return RetrievePipeline(graph, settings, "cosine-dde", "served", k=50, write=False, **kw)

    def triples(pipe: RetrievePipeline) -> int:
        return pipe.retrieve("what is the capital of jamaica?", ["Jamaica"]).subgraph.num_triples

    trained = served({"hops": 2, "cap": 500})
    assert trained.cap == 500
    chosen = served({"hops": 2, "cap": 500, "inference_cap": 1})
    assert chosen.cap == 1 and triples(chosen) < triples(trained)  # the fetch really is capped
    assert served({"hops": 2, "cap": 500, "inference_cap": 1}, cap=3).cap == 3  # an explicit cap wins


def test_train_checkpoint_pipeline_and_cache(loaded):
    graph, settings, path = loaded
    qs = read_questions(path).questions
    first = _split(graph, settings, path, qs)
    assert not first.from_disk and len(first.items) == len(qs)
    assert sum(it.labels.any() for it in first.items) >= 9
    second = _split(graph, settings, path, qs)
    assert second.from_disk  # the database is not queried again
    for a, b in zip(first.items, second.items):
        assert np.array_equal(a.labels, b.labels) and np.array_equal(a.head, b.head)

    vectors, _ = entity_vectors(graph, settings)  # the rows the split touches, renumbered into a compact table
    tables, local = vectors.tensor_tables([it.entity_idx for it in first.items])
    items = with_local_entities(first.items, local)
    model = SubgraphRAG(SubgraphRAGConfig(hidden=64), tables.dim)
    model, result = train(model, items, items, tables, TrainConfig(lr=5e-3, max_epochs=40, patience=10, select_k=3))
    assert result.best_val_triple_recall > 0.9
    save_checkpoint(
        model,
        settings.checkpoints_dir / "tiny",
        {
            "embedding_model": get_embedder().name,
            "embedding_dim": tables.dim,
            "graph_fingerprint": vectors.fingerprint,
        },
    )
    pipe = RetrievePipeline(graph, settings, "subgraphrag", k=2)  # found by graph fingerprint
    assert pipe.checkpoint.name == "tiny"
    res = pipe.retrieve("where was usain bolt born?", ["Usain Bolt"], qid="Q-2")
    assert res.top[0].tail == "Sherwood Content"
    assert np.array_equal(res.scores, pipe.retrieve("where was usain bolt born?", ["Usain Bolt"]).scores)
    # Batch mode: one disjoint-union forward pass; a bad topic fails alone.
    batch = list(
        pipe.run_batch(
            [
                QuestionInput("where was usain bolt born?", ["Usain Bolt"], "Q-2"),
                QuestionInput("who is nobody?", ["Nobody At All"], "Q-x"),
                QuestionInput("what is the capital of france?", ["France"], "Q-3"),
            ]
        )
    )
    assert isinstance(batch[1], KgdbError)
    assert np.allclose(res.scores, batch[0].scores, atol=1e-5)
    alone = pipe.retrieve("what is the capital of france?", ["France"])
    assert np.allclose(alone.scores, batch[2].scores, atol=1e-5) and batch[2].run

    runner = CliRunner()
    env = {
        "KGDB_CACHE_DIR": str(settings.cache_dir),
        "KGDB_CHECKPOINTS_DIR": str(settings.checkpoints_dir),
        "KGDB_RUNS_DIR": str(settings.runs_dir),
    }
    base = ["--uri", settings.neo4j_uri, "--password", settings.neo4j_password.get_secret_value()]
    out = runner.invoke(
        app, base + ["retrieve", "where was usain bolt born?", "--topic", "Usain Bolt", "--k", "2", "--json"], env=env
    )
    assert out.exit_code == 0, out.output
    payload = json.loads(out.output)
    assert payload["top"][0]["tail"] == "Sherwood Content" and payload["run"]
    out = runner.invoke(
        app,
        base
        + [
            "eval",
            "retrieval",
            "--questions",
            str(path),
            "--split",
            "all",
            "--retriever",
            "cosine",
            "--retriever",
            "subgraphrag",
            "--no-write",
        ],
        env=env,
    )
    assert out.exit_code == 0, out.output
    # named by dataset, file sha, split, retriever, cap and radius
    (path,) = (settings.checkpoints_dir / "tiny").glob("eval-*-all-subgraphrag-cap*.json")
    report = json.loads(path.read_text())
    assert report["evaluated"] == len(qs)
    assert report["recall"]["all"]["answer_recall@50"]["mean"] == 1.0  # k >= subgraph size keeps all
