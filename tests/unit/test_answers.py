"""The answer parser: `ans:` lines, refusals, duplicates, mids."""

from __future__ import annotations

from kgdb.qa.answers import parse_answers


def test_ans_lines_and_explanation():
    reply = "To answer, find the team.\nans: 2014 (2014 World Series)\n ANS: 2012 World Series\nSo that is it."
    out = parse_answers(reply)
    assert out.answers == ["2014 (2014 World Series)", "2012 World Series"]
    assert not out.refused and not out.malformed


def test_bullets_numbering_markdown_and_quotes():
    reply = '- ans: Paris\n2. ans: Lyon\n**ans:** Nice\n* **Ans**: "Lille"\n`ans: Metz`'
    assert parse_answers(reply).answers == ["Paris", "Lyon", "Nice", "Lille", "Metz"]


def test_duplicates_kept_once_first_position_wins():
    out = parse_answers("ans: Paris\nans: paris\nans:  PARIS \nans: Lyon\nans: Paris")
    assert out.answers == ["Paris", "Lyon"]
    assert len(out.dropped) == 3


def test_refusals():
    for text in (
        "ans: not available",
        "ans: Not available.",
        "ans: no information available",
        "ans: None",
        "ans: unknown",
    ):
        out = parse_answers(text)
        assert out.answers == [] and out.refused and not out.malformed, text
    mixed = parse_answers("ans: not available\nans: Paris")
    assert mixed.answers == ["Paris"] and not mixed.refused
    # "None" inside a real answer is kept
    assert parse_answers("ans: Nonesuch Records").answers == ["Nonesuch Records"]


def test_malformed_replies():
    for reply in ("", None, "Paris is the capital.", "answer: Paris"):
        out = parse_answers(reply)
        assert out.malformed and out.answers == [] and not out.refused


def test_mids_become_names_when_known():
    names = {"m.05qtj": "Paris", "g.11b6d": "Lyon"}
    out = parse_answers("ans: m.05qtj\nans: g.11b6d\nans: m.0unknown\nans: Paris", names)
    assert out.answers == ["Paris", "Lyon", "m.0unknown"]
