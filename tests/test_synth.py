"""benchmarks/synth.py: the Freebase-shaped generator is deterministic for a seed, and its planted
questions' answers are exactly what following their relations from the topic reaches."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "synth.py"


def _run(out: Path, seed: int, shared: Path) -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--triples", "3000", "--seed", str(seed), "--questions", "30", "--out", str(out),
         "--shared", str(shared)],
        capture_output=True, text=True, check=True,
    )
    return done.stdout


def _files(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in ("triples.tsv", "names.tsv", "questions.jsonl")}


def test_same_seed_same_bytes_other_seed_other_graph(tmp_path: Path, shared_data: Path):
    _run(tmp_path / "a", 7, shared_data)
    _run(tmp_path / "b", 7, shared_data)
    _run(tmp_path / "c", 8, shared_data)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert _files(tmp_path / "a")["triples.tsv"] != _files(tmp_path / "c")["triples.tsv"]


def test_planted_answers_are_exactly_what_the_relations_reach(tmp_path: Path, shared_data: Path):
    printed = _run(tmp_path, 1, shared_data)
    assert "fitted" in printed and "generated" in printed
    edges: dict[tuple[str, str], set[str]] = defaultdict(set)
    lines = (tmp_path / "triples.tsv").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3000
    for line in lines:
        h, r, t = line.split("\t")
        edges[h, r].add(t)
    names = dict(line.split("\t") for line in (tmp_path / "names.tsv").read_text(encoding="utf-8").splitlines())
    questions = [json.loads(x) for x in (tmp_path / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [q["hop"] for q in questions[:6]] == [1, 2, 3, 1, 2, 3]
    for q in questions:
        reached = set(q["q_entity"])
        for relation in q["relations"]:
            reached = set().union(*(edges.get((e, relation), set()) for e in reached))
        assert reached == set(q["a_entity"]), q["id"]
        assert [names[a] for a in q["a_entity"]] == q["answer"]
        assert names[q["q_entity"][0]] in q["question"]
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["shape"]["generated"]["triples"] == 3000
