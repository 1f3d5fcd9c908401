"""Grounded relation paths weighed by how close their answers' names are to the question
(`kgdb.rrp.closeness`), by hand on candidates: the new order keeps the best path's length and
the total, only a path's first answers are read (never topics or CVT nodes), and a weight copies a gathering."""

from __future__ import annotations

import math

import pytest

from kgdb.protocol import ScoredPath
from kgdb.rrp.answering import ENDS_PER_PATH, Gathered, GroundedPath, weigh_by_answer_closeness, with_weight

pytestmark = pytest.mark.usefixtures("one_thread")


def _candidate(relations: tuple[str, ...], score: float, end: str) -> GroundedPath:
    nodes = ("topic",) + tuple(f"mid-{r}" for r in relations[:-1]) + (end,)
    path = ScoredPath(score, nodes, relations, (1,) * len(relations), source="rrp-ranker")
    return GroundedPath(path, [(f"{a}-{b}", a, r, b) for a, r, b in zip(nodes, relations, nodes[1:])], score)


def _scores(planned) -> dict[tuple, float]:
    return {c.path.relations: c.path.score for c in planned}


def test_weighing_reorders_paths_as_long_as_the_best_one_and_keeps_their_total():
    close = {"Uppsala": 0.2, "Sweden": 0.35, "Stockholm": 0.1, "Lund": 0.5}
    asked: list[list[str]] = []

    def closeness(ids):
        asked.append(list(ids))
        return {e: close[e] for e in ids if e in close} if len(ids) > 1 else {}

    planned = [
        _candidate(("place_of_birth",), 0.6, "Uppsala"),
        _candidate(("nationality",), 0.3, "Sweden"),
        _candidate(("places_lived", "location"), 0.1, "Lund"),
    ]
    assert (
        weigh_by_answer_closeness(planned, closeness, 0.0, set()) is planned and not asked
    )  # weight 0: nothing read, nothing changed

    weighed = _scores(weigh_by_answer_closeness(planned, closeness, 6.0, set()))
    birth, nation = 0.6 * math.exp(6 * 0.2), 0.3 * math.exp(6 * 0.35)
    lived = 0.1 * math.exp(6 * 0.2)  # another length: the best path's factor, however close its answer is
    scale = 1.0 / (birth + nation + lived)
    assert weighed[("nationality",)] == pytest.approx(nation * scale) and weighed[("place_of_birth",)] == pytest.approx(
        birth * scale
    )
    assert weighed[("places_lived", "location")] == pytest.approx(lived * scale)
    assert max(weighed, key=weighed.get) == ("nationality",) and sum(weighed.values()) == pytest.approx(1.0)
    assert asked[-1] == ["Sweden", "Uppsala"]  # the other length's answers are not read (no encoding on a lazy graph)
    assert [c.s1 for c in weigh_by_answer_closeness(planned, closeness, 6.0, set())] == [
        c.path.score for c in weigh_by_answer_closeness(planned, closeness, 6.0, set())
    ]
    assert [c.path.score for c in planned] == [0.6, 0.3, 0.1]  # the input is not changed


def test_weighing_reads_the_first_answers_of_a_path_and_never_topics_or_cvt_nodes():
    asked: list[list[str]] = []

    def closeness(ids):
        asked.append(list(ids))
        return {e: 0.5 for e in ids}

    ends = [f"e{i:02d}" for i in range(12, 0, -1)]  # grounded in any order
    planned = [_candidate(("r",), 0.5, e) for e in ends] + [
        _candidate(("r",), 0.5, "topic"),
        _candidate(("r",), 0.5, "m.cvt"),
        _candidate(("s",), 0.5, "m.cvt"),
    ]
    weighed = weigh_by_answer_closeness(planned, closeness, 4.0, {"topic", "m.cvt"})
    assert asked == [sorted(ends)[:ENDS_PER_PATH]]  # the first ENDS_PER_PATH by id; s reaches only excluded nodes
    # s's answers are unknown: its mean closeness counts as 0, so r (0.5 each) moves above it
    scores = _scores(weighed)
    assert scores[("r",)] / scores[("s",)] == pytest.approx(math.exp(4.0 * 0.5))


def test_with_weight_copies_a_gathering():
    from types import SimpleNamespace

    planned = [_candidate(("a",), 0.6, "x"), _candidate(("b",), 0.4, "y")]
    g = Gathered(
        SimpleNamespace(ids=["topic"]), {}, set(), planned, [], {}, {}, [], lambda ids: {"x": 0.0, "y": 0.5}, None
    )
    assert with_weight(g, 0.0) is g and with_weight(None, 6.0) is None
    copy = with_weight(g, 6.0)
    assert copy is not g and g.planned is planned and copy.planned[1].path.score > copy.planned[0].path.score
