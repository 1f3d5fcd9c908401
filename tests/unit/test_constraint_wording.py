"""What the question's wording asks of the core answer (kgdb/pipeline/constraints.py): year bounds,
first / last, the answer cue (the noun after "what", never a verb), and the attribute it names."""

from __future__ import annotations

import pytest

from kgdb.reading.constraints import Constraints, YearBound, answer_cue, parse_constraints, word_stems
from kgdb.rrp.constraints import apply_attributes, apply_literal, literal_choice, relation_words


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


def test_answers_whose_relations_name_the_asked_attribute_come_first():
    assert relation_words("out:education.university.number_of_postgraduates") == {"numbe", "postg"}
    asked = word_stems("Which university with the fewest postgraduates did Ada Lovel attend?")
    relations = {
        "Old College": ["out:education.educational_institution.students_graduates"],
        "New School": [
            "out:education.educational_institution.students_graduates",
            "out:education.university.number_of_postgraduates",
        ],
        "Tech": ["out:education.educational_institution.students_graduates"],
    }
    assert apply_attributes(["Old College", "New School", "Tech"], relations, asked) == [
        "New School",
        "Old College",
        "Tech",
    ]
    # an attribute every candidate has tells nothing: the order stays as given
    both = {c: [*r, "out:education.university.number_of_postgraduates"] for c, r in relations.items()}
    assert apply_attributes(["Old College", "New School", "Tech"], both, asked) == ["Old College", "New School", "Tech"]
    # nor does a question that asks no attribute
    plain = word_stems("Which school did Ada Lovel attend?")
    assert apply_attributes(["Old College", "New School", "Tech"], relations, plain) == [
        "Old College",
        "New School",
        "Tech",
    ]


def test_the_literal_choice_is_what_the_constraint_moves_ahead():
    years = {"Old": [1994], "Mid": [2000, 2003], "New": [2006], "Undated": []}
    films = ["Undated", "Old", "New", "Mid"]
    for text, chosen in [
        ("what was his last film?", ["New"]),
        ("what was his first film?", ["Old"]),
        ("which film did he make after 1999?", ["New", "Mid"]),
        ("what was his first film after 1999?", ["Mid"]),
        ("what was his first film after 2010?", ["Old"]),  # no film meets the bound: the extreme of all
        ("which film did he make after 2010?", []),
        ("which film did he make?", []),
    ]:
        c = parse_constraints(text)
        assert literal_choice(films, years, c) == chosen, text
        assert apply_literal(films, years, c)[: len(chosen)] == chosen, text
    assert literal_choice(films, {}, parse_constraints("what was his last film?")) == []
