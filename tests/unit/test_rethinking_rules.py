"""RRP's rethinking and answering rules by hand: the scores that filter and order the paths, other
readings listed below the answers, the answering mode chosen on val, and answers tied on one path kept
in the retriever's order by the reasoner and by evaluation alike."""

from __future__ import annotations

import pytest

from kgdb.protocol import ScoredPath
from kgdb.qa.reasoners.base import Reasoning
from kgdb.qa.reasoners.extractive import Evidence
from kgdb.rrp.answering import GroundedPath, answers_of, chosen_mode, select
from kgdb.rrp.reasoner import PathReasoner, other_readings

pytestmark = pytest.mark.usefixtures("one_thread")


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
        reasoning = PathReasoner().reason(None, evidence)
        assert reasoning.answers[:3] == ["Zurich", "Basel", "Bern"], source
        # `kgdb ask` says that the evidence did not order these three
        assert reasoning.tied_first() == 3, source
        alone = Evidence(
            "q", [], ["t"], paths=[path(0.9, "Zurich", source), path(0.2, "Aarau", source)], from_paths=True
        )
        assert PathReasoner().reason(None, alone).tied_first() == 1, source


def test_answers_without_scores_are_never_called_tied():
    assert Reasoning(["Paris", "Lyon"], "ans: Paris", "openai:m", True).tied_first() == 0
    assert Reasoning([], "ans: not available", "rrp", False, refused=True).tied_first() == 0


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
        joint=[],
        constrain=list,
    )
    assert answers_of("planner", g, 0.0, 0.0) == ["Zurich", "Bern", "Basel"]
    # rethinking with λ1 = 1 scores the planner's paths alone: the same tie, Aarau below it
    assert answers_of("rethink", g, 1.0, 0.0) == ["Zurich", "Bern", "Basel", "Aarau"]
    assert asked[-1] == ["Basel", "Bern", "Zurich"]  # only the tied answers are asked about
