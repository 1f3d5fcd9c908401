"""RRP end to end on a real Neo4j: the planner (`kgdb train rrp-planner`) and the structural
reasoner (`kgdb train rrp`, λ1 and θ tuned on val) trained on tiny MetaQA-style files; then
`kgdb ask` picks RRP by default and answers without an LLM from the rethought paths, which are
written back as a run; the ablation command scores the four modes."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kgdb.cli import app
from kgdb.data.relation_paths import TripleArrays
from kgdb.rrp.answering import chosen_mode, select
from kgdb.rrp.closeness import WEIGHTS
from kgdb.rrp.model_choice import relation_path_retriever
from support.movies import TRIPLES, path_answers

pytestmark = pytest.mark.usefixtures("one_thread")


def test_structural_reasoner_and_rethinking_answer_by_default_without_an_llm(movie_files):
    graph, settings, files, env, base = movie_files
    runner = CliRunner()
    both = [a for f in files for a in ("--questions", str(f))]
    out = runner.invoke(
        app,
        base
        + ["train", "rrp-planner", *both, "--max-epochs", "40", "--patience", "40", "--lr", "0.01", "--threads", "1"],
        env=env,
    )
    assert out.exit_code == 0, out.output
    out = runner.invoke(
        app,
        base
        + [
            "train",
            "rrp",
            *both,
            "--hops",
            "2",
            "--max-epochs",
            "60",
            "--patience",
            "60",
            "--lr",
            "0.01",
            "--threads",
            "1",
        ],
        env=env,
    )
    assert out.exit_code == 0, out.output
    assert "val Hit@1" in out.output and "chosen on val" in out.output
    config = json.loads(
        (settings.checkpoints_dir / "rrp-structural-metaqa-1hop+metaqa-2hop" / "config.json").read_text()
    )
    tuned = config["rethinking"]
    assert config["retriever"] == "rrp-structural" and tuned["split"] == "val"
    assert (
        0.0 <= tuned["lambda1"] <= 1.0
        and tuned["lambda2"] == pytest.approx(1 - tuned["lambda1"])
        and 0.0 <= tuned["theta"] < 1.0
    )
    assert config["metrics"]["val_hit@1"] > 0.5
    # the answers' closeness weight is chosen in the chosen mode and read from the same checkpoint as λ1 and θ
    answering = config["answering"]
    assert answering["closeness_weight"] in WEIGHTS and sorted(answering["val"]) == sorted(str(f) for f in files)
    assert "answer closeness weight" in out.output
    assert relation_path_retriever(graph, settings, write=False).closeness_weight == answering["closeness_weight"]

    gold = path_answers(
        TripleArrays.from_triples(TRIPLES), "Lise Meitner", (("movie.starred_actors", -1), ("movie.directed_by", 1))
    )
    out = runner.invoke(
        app,
        base + ["ask", "who directed the films starring Lise Meitner", "--topic", "Lise Meitner", "--json"],
        env=env,
    )
    assert out.exit_code == 0, out.output
    payload = json.loads(out.output)
    assert payload["retriever"] == "relation-paths" and payload["reasoner"] == "rrp" and payload["llm_used"] is False
    # the tiny structural model may rank co-stars first; the directors must be among the kept paths' ends
    assert set(gold) <= {a["answer"] for a in payload["answers"]} and payload["run"]
    # ask answers in the mode that won on val (stored with λ1 and θ); the modules it ran say which
    assert tuned["mode"] == chosen_mode(tuned) and tuned["mode"] in ("planner", "structural", "union", "rethink")
    assert ("structural" in payload["timings_ms"]) == (tuned["mode"] != "planner")

    retriever = relation_path_retriever(graph, settings, write=True, mode="rethink")
    assert retriever.mode == "rethink" and retriever.lambda1 == tuned["lambda1"] and retriever.theta == tuned["theta"]
    res = retriever.retrieve("who directed the films starring Lise Meitner", ["Lise Meitner"])
    assert res.paths and all(p.source.startswith("rethink:") for p in res.paths)
    assert [p.score for p in res.paths] == sorted((p.score for p in res.paths), reverse=True)
    assert all(p.score > retriever.theta * res.paths[0].score for p in res.paths) or len(res.paths) == 1
    # the kept paths are what the run holds: every written triple lies on a kept path
    assert res.run
    kept = {(t.head_id, t.relation, t.tail_id) for t in res.triples}
    on_paths = set()
    for p in res.paths:
        for a, r, b, d in zip(p.entities, p.relations, p.entities[1:], p.directions):
            on_paths.add((a, r, b) if d > 0 else (b, r, a))
    assert kept <= on_paths

    # λ1 = 1 orders by the planner's path probability alone: the directors first
    planner_first = relation_path_retriever(graph, settings, write=False, lambda1=1.0, theta=0.0)
    res = planner_first.retrieve("who directed the films starring Lise Meitner", ["Lise Meitner"])
    assert res.paths[0].relations == ("movie.starred_actors", "movie.directed_by") and res.paths[0].answer in gold

    # the four ablation modes from one gather, and the command that prints them
    g = retriever.gather("who directed the films starring Lise Meitner", ["Lise Meitner"])
    assert g.planned and g.structural and max(g.s2.values()) == pytest.approx(1.0)
    assert {c.path.answer for c in select("union", g.planned, g.structural, g.s2, g.found.ids, g.cvt, 0.5, 0.0)} & set(
        gold
    )
    out = runner.invoke(app, base + ["eval", "rrp", "--questions", str(files[1]), "--split", "val"], env=env)
    assert out.exit_code == 0, out.output
    for mode in ("planner", "structural", "union", "rethink"):
        assert mode in out.output
