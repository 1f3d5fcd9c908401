"""The answer model's features (kgdb/rrp/answer_features.py) on a hand-made gathering: one row per candidate
in the ranker's order, each column read by its name in FEATURES."""

from __future__ import annotations

import numpy as np
import pytest

from kgdb.protocol import ScoredPath
from kgdb.reading import Topics, read_question
from kgdb.rrp.answer_features import FEATURES, MAX_CANDIDATES, answer_features, is_value
from kgdb.rrp.answering import Gathered, GroundedPath

NAMES = {"t1": "Adele", "t2": "London", "a1": "United Kingdom", "a2": "1988", "a3": "England", "a4": "Tottenham"}
CLOSE = {"a1": 0.3, "a2": 0.1, "a3": 0.6}  # a4: the closeness reader knows nothing of it


@pytest.mark.parametrize("name", ["1998", "2004-05-01", "3.5", "1,200", " 1998 ", "2004-05-01T10:00:00"])
def test_numbers_and_dates_are_values(name):
    assert is_value(name)


@pytest.mark.parametrize("name", ["Paris", "Windows 95", "1998 FIFA World Cup", "", "-"])
def test_names_are_not_values(name):
    assert not is_value(name)


def _path(score: float, entities: tuple[str, ...], relations: tuple[str, ...]) -> GroundedPath:
    return GroundedPath(ScoredPath(score, entities, relations, (1,) * len(relations)), [], score)


PATHS = [
    _path(0.5, ("t1", "a1"), ("person.country_of_birth",)),  # writes the asked noun "country"
    _path(0.5, ("t2", "a1"), ("location.containedby",)),  # a1 is reached from both topics
    _path(0.5, ("t1", "m.cvt", "a3"), ("people.person.places_lived", "location")),  # two hops through a CVT node
    _path(0.2, ("t1", "a2"), ("people.person.date_of_birth",)),
    _path(0.9, ("t1", "t2"), ("people.person.home",)),  # ends at a topic: never an answer path
]


def _gathered(question: str = "which country was Adele born in?", **extra) -> Gathered:
    topics = Topics(["t1", "t2"], "given", [], [])
    reading = read_question(question).linked(topics, {"t1": "Adele", "t2": "London"})
    return Gathered(
        topics,
        dict(NAMES),
        {"m.cvt"},
        list(PATHS),
        [],
        {},
        {},
        [],
        lambda ids: {a: CLOSE[a] for a in ids if a in CLOSE},
        reading=reading,
        **extra,
    )


def _column(x: np.ndarray, name: str) -> list[float]:
    return x[:, FEATURES.index(name)].tolist()


def test_one_row_per_candidate_in_the_given_order():
    x = answer_features(_gathered(), ["a3", "a1", "a2", "a4"], PATHS)
    assert x.shape == (4, len(FEATURES)) and x.dtype == np.float64
    assert _column(x, "first") == [1.0, 0.0, 0.0, 0.0]
    assert _column(x, "position") == pytest.approx([1.0, 1 / 2, 1 / 3, 1 / 4])
    # the question's columns are the same on every row
    assert _column(x, "answers") == pytest.approx([np.log1p(4)] * 4)
    assert _column(x, "topics") == [2.0] * 4


def test_answer_columns_read_the_paths_that_reach_each_candidate():
    x = answer_features(_gathered(), ["a1", "a3", "a2", "a4"], PATHS)
    # three paths share the best usable score (0.5; the 0.9 path ends at a topic): two end at a1, one at a3
    assert _column(x, "best_share") == pytest.approx([2 / 3, 1 / 3, 0.0, 0.0])
    assert _column(x, "top_score") == pytest.approx([0.5] * 4)
    assert _column(x, "hops") == [1.0, 2.0, 1.0, 0.0]
    assert _column(x, "topic_share") == [1.0, 0.5, 0.5, 0.0]
    assert _column(x, "through_cvt") == [0.0, 1.0, 0.0, 0.0]
    assert _column(x, "answer_readings") == pytest.approx([np.log1p(2), np.log1p(1), np.log1p(1), 0.0])
    # the question's words, topic names aside, are {country, born}: a1's path writes "country" only
    assert _column(x, "path_words") == pytest.approx([0.5, 0.0, 0.0, 0.0])


def test_margin_is_the_best_score_less_the_best_outside_the_candidates():
    assert _column(answer_features(_gathered(), ["a1", "a3", "a2"], PATHS), "margin")[0] == pytest.approx(0.5)
    assert _column(answer_features(_gathered(), ["a1", "a3"], PATHS), "margin")[0] == pytest.approx(0.5 - 0.2)
    assert _column(answer_features(_gathered(), ["a1"], PATHS), "margin")[0] == pytest.approx(0.0)  # a3 ties


def test_the_asked_noun_in_a_path_and_in_the_answer_types():
    types = {"a3": frozenset({"in:location.country.capital"}), "a2": frozenset({"out:people.person.spouse"})}
    x = answer_features(_gathered(answer_types=types), ["a1", "a3", "a2", "a4"], PATHS)
    assert _column(x, "cue_in_path") == [1.0, 0.0, 0.0, 0.0]  # a1's best path writes "country"
    assert _column(x, "cue_in_types") == [0.0, 1.0, 0.0, 0.0]
    # without an asked noun ("who ...") neither cue is set
    plain = answer_features(_gathered("who is Adele married to?", answer_types=types), ["a1", "a3"], PATHS)
    assert _column(plain, "cue_in_path") == [0.0, 0.0] and _column(plain, "cue_in_types") == [0.0, 0.0]


def test_values_and_what_the_question_asks_for():
    x = answer_features(_gathered(), ["a1", "a2"], PATHS)
    assert _column(x, "value") == [0.0, 1.0]  # "1988"
    assert _column(x, "value_when_time") == [0.0, 0.0] and _column(x, "asks_time") == [0.0, 0.0]
    when = answer_features(_gathered("when was Adele born?"), ["a1", "a2"], PATHS)
    assert _column(when, "asks_time") == [1.0, 1.0] and _column(when, "value_when_time") == [0.0, 1.0]
    who = answer_features(_gathered("who is Adele married to?"), ["a1", "a2"], PATHS)
    assert _column(who, "asks_entity") == [1.0, 1.0] and _column(who, "value_when_entity") == [0.0, 1.0]


def test_closeness_is_read_once_for_the_candidates_and_relative_to_the_best():
    asked: list[list[str]] = []
    g = _gathered()

    def closeness(ids):
        asked.append(list(ids))
        return {a: CLOSE[a] for a in ids if a in CLOSE}

    g.closeness = closeness
    x = answer_features(g, ["a1", "a3", "a2", "a4"], PATHS)
    assert asked == [["a1", "a2", "a3", "a4"]]
    assert _column(x, "closeness_raw") == pytest.approx([0.3, 0.6, 0.1, 0.0])
    assert _column(x, "closeness") == pytest.approx([-0.3, 0.0, -0.5, 0.0])


def test_at_most_max_candidates_rows():
    answers = ["a1", "a3", "a2"] + [f"x{i}" for i in range(MAX_CANDIDATES + 7)]
    x = answer_features(_gathered(), answers, PATHS)
    assert x.shape == (MAX_CANDIDATES, len(FEATURES))
    assert _column(x, "answers") == pytest.approx([np.log1p(MAX_CANDIDATES)] * MAX_CANDIDATES)
    assert _column(x, "position")[-1] == pytest.approx(1 / MAX_CANDIDATES)


def test_no_candidates_gives_an_empty_table():
    assert answer_features(_gathered(), [], PATHS).shape == (0, len(FEATURES))
