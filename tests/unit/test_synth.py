"""benchmarks/synth.py: the Freebase-shaped generator is deterministic for a seed, and its planted
questions' answers are exactly what following their relations from the topic reaches."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from support import ROOT

SCRIPT = ROOT / "benchmarks" / "synth.py"


@pytest.fixture(scope="module")
def synth():
    spec = importlib.util.spec_from_file_location("synth", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["synth"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def profile(synth, shared_data: Path):
    return synth.fit(shared_data)


def _files(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in ("triples.tsv", "names.tsv", "questions.jsonl")}


def test_same_seed_same_bytes_other_seed_other_graph(tmp_path: Path, synth, profile):
    for folder, seed in (("a", 7), ("b", 7), ("c", 8)):
        synth.generate(3000, seed, tmp_path / folder, profile, questions=30)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert _files(tmp_path / "a")["triples.tsv"] != _files(tmp_path / "c")["triples.tsv"]


def test_planted_answers_are_exactly_what_the_relations_reach(tmp_path: Path, synth, profile):
    shape = synth.generate(3000, 1, tmp_path, profile, questions=30)
    assert shape.triples == 3000
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


def test_the_command_prints_real_fitted_and_generated_columns_and_refuses_bad_input(tmp_path: Path, shared_data: Path):
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--triples",
            "500",
            "--questions",
            "6",
            "--out",
            str(tmp_path),
            "--shared",
            str(shared_data),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    header = next(line for line in done.stdout.splitlines() if line.startswith("statistic"))
    assert header.split() == ["statistic", "webqsp", "fb15k237", "fitted", "generated"]
    assert json.loads((tmp_path / "stats.json").read_text())["shape"]["generated"]["triples"] == 500
    bad = subprocess.run(
        [sys.executable, str(SCRIPT), "--triples", "500", "--out", str(tmp_path), "--shared", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0 and "--shared" in bad.stderr and "Traceback" not in bad.stderr
