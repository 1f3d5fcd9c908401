"""RRP end to end on a real Neo4j: the planner (`kgdb train rrp-planner`) and the structural
reasoner (`kgdb train rrp`, λ1 and θ tuned on val) trained on tiny MetaQA-style files; then
`kgdb ask` picks RRP by default and answers without an LLM from the rethought paths, which are
written back as a run; the ablation command scores the four modes."""

from __future__ import annotations

import json

import pytest
from test_rrp_ask import TRIPLES, _answers, movie_files  # noqa: F401  (fixture)
from typer.testing import CliRunner

from kgdb.cli import app
from kgdb.data.relation_paths import TripleArrays
from kgdb.pipeline import relation_path_retriever
from kgdb.pipeline.answer_closeness import WEIGHTS
from kgdb.pipeline.answering_rules import GroundedPath, answers_of, chosen_mode, select
from kgdb.protocol import ScoredPath
from kgdb.qa.reasoners.extractive import Evidence
from kgdb.qa.reasoners.rrp import PathReasoner, other_readings

pytestmark = pytest.mark.usefixtures("one_thread")


def test_structural_reasoner_and_rethinking_answer_by_default_without_an_llm(movie_files):  # noqa: F811
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

    gold = _answers(
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


def _candidate(entities, relations, s1, s2_end, source="rrp-planner"):
    path = ScoredPath(
        s1 if source == "rrp-planner" else s2_end,
        tuple(entities),
        tuple(relations),
        (1,) * len(relations),
        source=source,
    )
    return GroundedPath(path, [(f"{a}-{b}", a, r, b) for a, r, b in zip(entities, relations, entities[1:])], s1)


def test_rethinking_scores_filters_and_orders_paths_by_hand():
    planned = [
        _candidate(["t", "x"], ["r"], 0.8, 0.2),
        _candidate(["t", "y"], ["r"], 0.8, 0.9),
        _candidate(["t", "c"], ["r"], 0.8, 0.0),
        _candidate(["t", "z"], ["q"], 0.1, 1.0),
    ]
    structural = [
        _candidate(["t", "z"], ["q"], 0.1, 1.0, source="rrp-structural"),
        _candidate(["t", "y"], ["r"], 0.8, 0.9, source="rrp-structural"),
    ]
    s2 = {"x": 0.2, "y": 0.9, "z": 1.0, "c": 0.0}
    # S = 0.6 S1 + 0.4 S2: y 0.84, x 0.56, z 0.46; c is a CVT; θ = 0.6 (of the best S: 0.504) drops z;
    # duplicates (t, y) merged
    kept = select("rethink", planned, structural, s2, ["t"], {"c"}, 0.6, 0.6)
    assert [(c.path.answer, round(c.path.score, 6)) for c in kept] == [("y", 0.84), ("x", 0.56)]
    assert [c.path.answer for c in select("rethink", planned, structural, s2, ["t"], {"c"}, 0.6, 0.5)] == [
        "y",
        "x",
        "z",
    ]
    # θ = 1: nothing is above it, the best path is still kept
    assert [c.path.answer for c in select("rethink", planned, structural, s2, ["t"], {"c"}, 0.6, 1.0)] == ["y"]
    # λ1 = 0: structure alone orders (z first)
    assert [c.path.answer for c in select("rethink", planned, structural, s2, ["t"], {"c"}, 0.0, 0.0)][:2] == ["z", "y"]
    # the ablations: structural paths alone above θ; union = the planner's best relation path + those
    assert [c.path.answer for c in select("structural", planned, structural, s2, ["t"], {"c"}, 0.6, 0.95)] == ["z"]
    assert [c.path.answer for c in select("union", planned, structural, s2, ["t"], {"c"}, 0.6, 0.95)] == [
        "x",
        "y",
        "c",
        "z",
    ]


def test_other_readings_group_relation_paths_below_the_answers():
    def path(score, relations, directions, end, source="rrp-ranker"):
        return ScoredPath(score, ("t",) + ("m",) * (len(relations) - 1) + (end,), relations, directions, source=source)

    paths = [
        path(0.6, ("born",), (1,), "Ulm"),
        path(0.25, ("nationality", "currency"), (1, 1), "Euro"),
        path(0.25, ("nationality", "currency"), (1, 1), "Franc"),
        path(0.1, ("nationality",), (1,), "Germany"),
        path(0.2, ("birthplace",), (-1,), "Ulm"),  # another route to the answer: not another reading
        path(0.01, ("died",), (1,), "Princeton"),
    ]  # under a tenth of the answers' score
    assert other_readings(paths, {"Ulm"}, top=3) == [
        {"score": 0.25, "path": "nationality → currency", "ends": ["Euro", "Franc"], "count": 2},
        {"score": 0.1, "path": "nationality", "ends": ["Germany"], "count": 1},
    ]
    assert other_readings(paths, {"Ulm"}, top=1)[0]["path"] == "nationality → currency"
    assert other_readings(paths[:1], {"Ulm"}, top=3) == []
    # rethought paths are all answer paths: nothing else to show
    assert (
        other_readings(
            [path(0.6, ("born",), (1,), "Ulm", "rethink:planner"), path(0.3, ("x",), (1,), "Y", "rethink:planner")],
            {"Ulm"},
            3,
        )
        == []
    )


def test_the_answering_mode_is_the_best_on_val():
    def scores(hit1, f1):
        return {"hit1": hit1, "macro_f1": f1}

    metaqa = {
        "ablation_val": {
            "planner": scores(98.33, 96.63),
            "structural": scores(57.67, 55.62),
            "union": scores(93.67, 92.77),
            "rethink": scores(98.00, 95.13),
        }
    }
    webqsp = {
        "ablation_val": {
            "planner": scores(56.60, 55.26),
            "structural": scores(52.36, 46.83),
            "union": scores(52.36, 52.01),
            "rethink": scores(58.02, 53.46),
        }
    }
    tie = {"ablation_val": {"planner": scores(90.0, 80.0), "rethink": scores(90.0, 80.0)}}
    assert chosen_mode(metaqa) == "planner" and chosen_mode(webqsp) == "rethink"
    assert chosen_mode(tie) == "rethink" and chosen_mode({}) == "rethink"


def test_answers_tied_on_one_path_keep_the_retrievers_order():
    """The retriever orders the ends of one relation path (closest to the question first); the
    reasoner keeps that order for ties instead of sorting them by name."""

    def path(score, end, source):
        return ScoredPath(score, ("t", end), ("r",), (1,), names=("t", end), source=source)

    for source in ("rrp-ranker", "rethink:rrp-ranker"):  # the planner alone, and rethought paths
        paths = [
            path(0.9, "Zurich", source),
            path(0.9, "Basel", source),
            path(0.9, "Bern", source),
            path(0.2, "Aarau", source),
        ]
        evidence = Evidence("q", [], ["t"], paths=paths, from_paths=True)
        answers = PathReasoner().reason(None, evidence).answers
        assert answers[:3] == ["Zurich", "Basel", "Bern"], source


def test_evaluation_breaks_ties_as_the_reasoner_does():
    """`answers_of` (eval rrp, the tuning of λ1 and θ) orders the answers tied at the best score by
    their closeness to the question, as the retriever and the reasoner do; other answers by name."""
    from types import SimpleNamespace

    asked: list[list[str]] = []

    def closeness(ids):
        asked.append(sorted(ids))
        return {"Zurich": 0.9, "Basel": 0.1, "Bern": 0.5} if len(ids) > 1 else {}

    planned = [_candidate(["t", e], ["r"], 0.8, 0.0) for e in ("Basel", "Bern", "Zurich")] + [
        _candidate(["t", "Aarau"], ["q"], 0.2, 0.0)
    ]
    g = SimpleNamespace(
        found=SimpleNamespace(ids=["t"]),
        cvt=set(),
        planned=planned,
        structural=[],
        s2={},
        names={},
        closeness=closeness,
    )
    assert answers_of("planner", g, 0.0, 0.0) == ["Zurich", "Bern", "Basel"]
    # rethinking with λ1 = 1 scores the planner's paths alone: the same tie, Aarau below it
    assert answers_of("rethink", g, 1.0, 0.0) == ["Zurich", "Bern", "Basel", "Aarau"]
    assert asked[-1] == ["Basel", "Bern", "Zurich"]  # only the tied answers are asked about
