"""`kgdb ask` and `kgdb eval retrieval` against a real Neo4j with a cache folder that is full or
read-only (KGDB_CACHE_DIR on a real small tmpfs, where the machine allows mounting one): both go on
without the cache, with one warning, no traceback and no temporary files left behind."""

from __future__ import annotations

import subprocess

import pytest

from support.cli import KGDB, env_for


@pytest.mark.parametrize("kind", ["full", "read-only"])
def test_ask_and_eval_go_on_without_a_cache_with_one_warning(kept_graph, small_fs, tmp_path, kind):
    from support.graphs import LOU_SEAL

    graph = kept_graph(LOU_SEAL)
    folder = small_fs("1m", leave_free=8_192) if kind == "full" else small_fs("1m", read_only=True)
    env = env_for(graph.settings, KGDB_CACHE_DIR=str(folder / "kgdb"), KGDB_RUNS_DIR=str(tmp_path / "runs"))
    ask = subprocess.run(
        [*KGDB, "ask", "what is Lou Seal?", "--topic", "Lou Seal", "--retriever", "cosine"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert ask.returncode == 0, ask.stderr
    assert "Traceback" not in ask.stderr and ask.stderr.count("warning") == 1 and "going on without it" in ask.stderr
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "Q1", "question": "what is Lou Seal?", "q_entity": ["Lou Seal"], "answer": ["x"]}\n')
    ev = subprocess.run(
        [
            *KGDB,
            "eval",
            "retrieval",
            "--questions",
            str(questions),
            "--retriever",
            "cosine",
            "--no-write",
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert ev.returncode == 0, ev.stderr
    assert "Traceback" not in ev.stderr and ev.stderr.count("warning") == 1, ev.stderr
    assert not [p for p in folder.rglob("*") if ".tmp" in p.name]
