"""Grounded relation paths weighed by how close their answers' names are to the question
(`kgdb.rrp.closeness`) on a real Neo4j with the real encoder: the question's type word
picks the path, the weight is read from a checkpoint, and the benchmark chooses it on val and stores it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from kgdb.rrp.answering import ENDS_PER_PATH
from kgdb.rrp.closeness import WEIGHTS
from kgdb.rrp.model_choice import relation_path_retriever
from kgdb.rrp.plan import PathPlanner, Plan, PlannedPath, names_of
from kgdb.rrp.retriever import RelationPathRetriever
from support import ROOT
from support.graphs import load

pytestmark = pytest.mark.usefixtures("one_thread")


PERSON = [  # an invented person
    ("Anna Lindqvist", "people.person.place_of_birth", "Uppsala"),
    ("Anna Lindqvist", "people.person.nationality", "Sweden"),
    ("Anna Lindqvist", "people.person.profession", "Architect"),
]


class _FixedPlanner(PathPlanner):
    """A planner whose relation paths and scores are given (the ranker would score them from the text)."""

    name = "fixed"

    def __init__(self, plans):
        self.plans = tuple(plans)

    def plan(self, graph, reading, topics, names) -> Plan:
        return Plan(topics, names_of(topics, names), self.plans, reading.text)


def test_the_questions_type_word_picks_the_path_on_a_real_graph(graph, neo4j_settings):
    """ "which *country* was anna lindqvist born in?": the planner prefers place of birth (Uppsala); the
    answers' closeness to the question (real MiniLM vectors read from the graph) moves nationality first."""
    load(graph, PERSON)
    planner = _FixedPlanner(
        [
            PlannedPath(("people.person.place_of_birth",), 0.6, (1,)),
            PlannedPath(("people.person.nationality",), 0.4, (1,)),
        ]
    )
    question = "which country was anna lindqvist born in?"
    answers = {}
    for weight in (0.0, 6.0):
        retriever = RelationPathRetriever(
            graph, neo4j_settings, planner=planner, write=False, mode="planner", closeness_weight=weight
        )
        res = retriever.retrieve(question, ["Anna Lindqvist"])
        answers[weight] = [e.name for e in res.entities]
        assert sum(p.score for p in res.paths) == pytest.approx(1.0)  # the grounded paths keep their total
        assert ("rethink" in res.timings) == bool(weight) and retriever.describe()["answer_closeness_weight"] == weight
        moved = [n for n in res.notes if n.startswith("what the paths reach put")]
        assert moved == (
            []
            if not weight
            else [
                "what the paths reach put people.person.nationality first, above the planner's first, "
                "people.person.place_of_birth: its answers fit the question's words better "
                "(answering.closeness_weight 6)"
            ]
        )
    assert answers[0.0] == ["Uppsala", "Sweden"] and answers[6.0] == ["Sweden", "Uppsala"]


def test_the_weight_comes_from_the_planners_checkpoint(graph, neo4j_settings, tmp_path):
    """The shipped portable ranker's `answering.closeness_weight` is what `kgdb ask` uses; a caller's value wins."""
    from kgdb.models.default import shipped_checkpoint

    load(graph, PERSON)
    settings = neo4j_settings.with_overrides(checkpoints_dir=tmp_path / "none", cache_dir=tmp_path / "cache")
    shipped = json.loads((shipped_checkpoint("rrp-ranker") / "config.json").read_text())
    assert shipped["answering"]["closeness_weight"] in WEIGHTS and shipped["answering"]["split"] == "val"
    assert (
        relation_path_retriever(graph, settings, write=False).closeness_weight
        == shipped["answering"]["closeness_weight"]
    )
    assert relation_path_retriever(graph, settings, write=False, closeness_weight=0.0).closeness_weight == 0.0


def test_benchmark_chooses_the_weight_on_val_and_stores_it(movie_files, tmp_path):
    """benchmarks/answer_closeness.py on a copy of the shipped ranker: a grid row per weight, the
    choice printed and written into the copy's config.json with the val grid; bad --graph and a file
    without val questions refused."""
    from kgdb.errors import InputError
    from kgdb.models.checkpoints import find_checkpoint
    from kgdb.models.default import shipped_checkpoint
    from kgdb.rrp.ranker_training import choose_closeness_weight

    graph, settings, files, env, base = movie_files
    copy = tmp_path / "ranker"
    shutil.copytree(shipped_checkpoint("rrp-ranker"), copy)
    script = ROOT / "benchmarks" / "answer_closeness.py"
    run_env = {**os.environ, **env, "KGDB_NEO4J_PASSWORD": settings.neo4j_password.get_secret_value()}
    spec = f"{settings.neo4j_uri},{settings.cache_dir},{files[1]}"
    out = subprocess.run(
        [sys.executable, str(script), "--checkpoint", str(copy), "--graph", spec, "--write"],
        capture_output=True,
        text=True,
        env=run_env,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    rows = [
        line.split()[0]
        for line in out.stdout.splitlines()
        if line.strip() and line.split()[0].replace(".", "").isdigit()
    ]
    assert rows == [str(w) for w in WEIGHTS], out.stdout
    chosen = float(out.stdout.split("chosen closeness weight: ")[1].split()[0])
    answering = json.loads((copy / "config.json").read_text())["answering"]
    assert answering["closeness_weight"] == chosen and answering["ends_per_path"] == ENDS_PER_PATH
    (grid,) = answering["val"].values()
    assert sorted(grid, key=float) == [str(w) for w in WEIGHTS] and all("hit1" in v for v in grid.values())
    with pytest.raises(InputError, match="no val questions to choose the answer closeness weight on"):
        choose_closeness_weight(find_checkpoint(str(copy), settings.checkpoints_dir), [(graph, files[1])], per_file=0)
    bad = subprocess.run(
        [sys.executable, str(script), "--checkpoint", str(copy), "--graph", settings.neo4j_uri],
        capture_output=True,
        text=True,
        env=run_env,
        timeout=120,
    )
    assert bad.returncode != 0 and "expected URI,CACHE_DIR,QUESTIONS" in bad.stderr + bad.stdout
    # a beam planner's weight belongs to its structural checkpoint (`kgdb train rrp`), not to this script
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "retriever": "rrp-planner"}))
    planner = subprocess.run(
        [sys.executable, str(script), "--checkpoint", str(copy), "--graph", spec],
        capture_output=True,
        text=True,
        env=run_env,
        timeout=120,
    )
    assert planner.returncode != 0 and "--checkpoint" in planner.stderr and "not an rrp-ranker" in planner.stderr, (
        planner.stderr
    )
