"""`kgdb eval rrp` on a real Neo4j prints Hit, Hit@1, Macro-F1, reachable and seconds per question for
a whole hand-written question file."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kgdb.cli import app
from support.graphs import LOU_SEAL


def test_eval_rrp_prints_hit_hit1_f1_reachable_and_seconds_on_a_whole_handwritten_file(kept_graph, tmp_path):
    graph = kept_graph(LOU_SEAL)
    questions = tmp_path / "lou_seal_questions.jsonl"
    rows = [
        {
            "id": "ws",
            "question": "what championships did the team of lou seal win?",
            "q_entity": ["Lou Seal"],
            "answer": ["2010 World Series", "2012 World Series", "2014 World Series"],
        },
        {
            "id": "park",
            "question": "where does the team of lou seal play?",
            "q_entity": ["Lou Seal"],
            "answer": ["AT&T Park"],
        },
    ]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = graph.settings
    env = {"KGDB_CHECKPOINTS_DIR": str(tmp_path / "none"), "KGDB_RUNS_DIR": str(tmp_path / "runs"), "COLUMNS": "200"}
    out = CliRunner().invoke(
        app,
        [
            "--uri",
            s.neo4j_uri,
            "--password",
            s.neo4j_password.get_secret_value(),
            "eval",
            "rrp",
            "--questions",
            str(questions),
            "--checkpoint",
            "kgdb/models/default/rrp-ranker-portable",
            "--out",
            str(tmp_path / "out.json"),
        ],
        env=env,
    )
    assert out.exit_code == 0, out.output
    assert "the whole file is evaluated (--split all)" in " ".join(out.output.split())
    for column in ("Hit", "Hit@1", "Macro-F1", "reachable %", "s/question"):
        assert column in out.output
    saved = json.loads((tmp_path / "out.json").read_text())
    row = saved["rows"]["planner"]
    assert saved["split"] == "all" and row["n"] == 2 and row["failed"] == 0
    assert row["reachable"] == pytest.approx(100.0) and row["hit"] >= row["hit1"] and row["seconds_mean"] > 0
