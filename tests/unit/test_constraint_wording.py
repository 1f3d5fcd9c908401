"""What the question's wording asks of the core answer (kgdb/pipeline/constraints.py): year bounds,
first / last, and the answer cue (the noun after "what", never a verb)."""

from __future__ import annotations

import pytest

from kgdb.pipeline.constraints import (
    Constraints,
    YearBound,
    answer_cue,
    parse_constraints,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("When was the last time the Giants won the Super Bowl?", Constraints((), "latest", "when")),
        (
            "Which film directed by X was released after 2000?",
            Constraints((YearBound("after", 2000),), None, "which film"),
        ),
        (
            "For what magazine did Poe work before 1841?",
            Constraints((YearBound("before", 1841),), None, "what magazine"),
        ),
        ("who was the first wife of X, married in 1990?", Constraints((YearBound("in", 1990),), "earliest", "who")),
        ("where was the wife of barack obama born?", Constraints((), None, "where")),
    ],
)
def test_question_wording_gives_year_bounds_extremes_and_the_answer_cue(text, expected):
    assert parse_constraints(text) == expected


def test_answer_cue_keeps_the_noun_after_what_but_not_a_verb():
    assert answer_cue("What college did he attend?") == "what college"
    assert answer_cue("What is the capital?") == "what"
    assert answer_cue("Whose wife is she?") == "who"
    assert answer_cue("Name the capital.") == ""
