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
from kgdb.pipeline import relation_path_retriever
from kgdb.pipeline.relation_paths import select
from test_rrp_ask import TRIPLES, _answers, movie_files  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("one_thread")


def test_structural_reasoner_and_rethinking_answer_by_default_without_an_llm(movie_files):  # noqa: F811
    graph, settings, files, env, base = movie_files
    runner = CliRunner()
    both = [a for f in files for a in ("--questions", str(f))]
    out = runner.invoke(app, base + ["train", "rrp-planner", *both, "--max-epochs", "40", "--patience", "40", "--lr", "0.01", "--threads", "1"], env=env)
    assert out.exit_code == 0, out.output
    out = runner.invoke(app, base + ["train", "rrp", *both, "--hops", "2", "--max-epochs", "60", "--patience", "60", "--lr", "0.01", "--threads", "1"],
                        env=env)
    assert out.exit_code == 0, out.output
    print(out.output)
    assert "val Hit@1" in out.output and "chosen on val" in out.output
    config = json.loads((settings.checkpoints_dir / "rrp-structural-metaqa-1hop+metaqa-2hop" / "config.json").read_text())
    tuned = config["rethinking"]
    assert config["retriever"] == "rrp-structural" and tuned["split"] == "val"
    assert 0.0 <= tuned["lambda1"] <= 1.0 and tuned["lambda2"] == pytest.approx(1 - tuned["lambda1"]) and 0.0 <= tuned["theta"] < 1.0
    assert config["metrics"]["val_hit@1"] > 0.5

    gold = _answers(TripleArrays.from_triples(TRIPLES), "Lise Meitner", (("movie.starred_actors", -1), ("movie.directed_by", 1)))
    out = runner.invoke(app, base + ["ask", "who directed the films starring Lise Meitner", "--topic", "Lise Meitner", "--json"], env=env)
    assert out.exit_code == 0, out.output
    payload = json.loads(out.output)
    print(json.dumps(payload["answers"][:5], indent=1), payload["evidence"][:10])
    dbg = relation_path_retriever(graph, settings, write=False).gather("who directed the films starring Lise Meitner", ["Lise Meitner"])
    print([(c.path.relations, c.path.directions, c.s1) for c in dbg.planned][:3], sorted(dbg.s2.items(), key=lambda kv: -kv[1]))
    print([(c.path.entities, c.path.score, c.s1) for c in dbg.structural])
    assert payload["retriever"] == "relation-paths" and payload["reasoner"] == "rrp" and payload["llm_used"] is False
    assert payload["answers"][0]["answer"] in gold and payload["run"]
    assert "structural" in payload["timings_ms"] and "rethink" in payload["timings_ms"]

    retriever = relation_path_retriever(graph, settings, write=True)
    assert retriever.mode == "rethink" and retriever.lambda1 == tuned["lambda1"] and retriever.theta == tuned["theta"]
    res = retriever.retrieve("who directed the films starring Lise Meitner", ["Lise Meitner"])
    assert res.paths and all(p.source.startswith("rethink:") for p in res.paths)
    assert [p.score for p in res.paths] == sorted((p.score for p in res.paths), reverse=True)
    assert all(p.score > retriever.theta for p in res.paths) or len(res.paths) == 1
    # the kept paths are what the run holds: every written triple lies on a kept path
    assert res.run
    kept = {(t.head_id, t.relation, t.tail_id) for t in res.triples}
    on_paths = set()
    for p in res.paths:
        for a, r, b, d in zip(p.entities, p.relations, p.entities[1:], p.directions):
            on_paths.add((a, r, b) if d > 0 else (b, r, a))
    assert kept <= on_paths

    # the four ablation modes from one gather, and the command that prints them
    g = retriever.gather("who directed the films starring Lise Meitner", ["Lise Meitner"])
    assert g.planned and g.structural and max(g.s2.values()) == pytest.approx(1.0)
    assert {c.path.answer for c in select("union", g.planned, g.structural, g.s2, g.found.ids, g.cvt, 0.5, 0.0)} & set(gold)
    out = runner.invoke(app, base + ["eval", "rrp", "--questions", str(files[1]), "--split", "val"], env=env)
    assert out.exit_code == 0, out.output
    for mode in ("planner", "structural", "union", "rethink"):
        assert mode in out.output
