"""Prompt templates: structure from the papers, own worked example (never an evaluation question)."""

from __future__ import annotations

import json

import pytest

from kgdb.errors import InputError
from kgdb.qa.answers import parse_answers
from kgdb.qa.prompts import FORMATS, build_prompt, load_template, path_line, render_path, render_triple, step_line


@pytest.mark.parametrize("fmt", FORMATS)
def test_messages_are_system_example_then_question(fmt):
    lines = (
        ["(France,location.country.capital,Paris)"]
        if fmt == "triples"
        else ["France → [location.country.capital] → Paris"]
    )
    p = build_prompt(fmt, "  what is the capital of   France ", lines)
    assert p.template == f"{fmt}_v1" and p.evidence_lines == 1
    assert [m["role"] for m in p.messages] == ["system", "user", "assistant", "user"]
    assert "ans:" in p.messages[0]["content"] and "not available" in p.messages[0]["content"]
    user = p.messages[-1]["content"]
    assert user.endswith("Question:\nwhat is the capital of France?")
    assert lines[0] in user and "$" not in user
    # the worked example answers in the format the parser reads
    assert parse_answers(p.messages[2]["content"]).answers == [
        "Pritzker Architecture Prize",
        "Royal Gold Medal",
        "Alvar Aalto Medal",
    ]


def test_headers_follow_the_papers():
    assert (
        build_prompt("triples", "q", ["(a,r,b)"]).messages[-1]["content"].startswith("Triples:\n(a,r,b)\n\nQuestion:")
    )
    chains = build_prompt("chains", "q", ["a → [r] → b", "a → [s] → c"]).messages[-1]["content"]
    assert chains.startswith("Evidence Chains:\nChain 1. a → [r] → b\nChain 2. a → [s] → c\n")
    paths = build_prompt("paths", "q", ["a → r → b"]).messages
    assert (
        paths[-1]["content"].startswith("Reasoning Paths:\na → r → b") and "order of importance" in paths[0]["content"]
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_version_2_has_no_worked_example_to_copy(fmt):
    p = build_prompt(fmt, "what is the capital of France", ["(France,location.country.capital,Paris)"], version=2)
    assert p.template == f"{fmt}_v2" and [m["role"] for m in p.messages] == ["system", "user"]
    assert "exactly as they are written" in p.messages[0]["content"]
    assert "Pritzker" not in p.text()


def test_a_prompt_is_rebuilt_with_fewer_lines_or_without_its_example():
    lines = ["(France,location.country.capital,Paris)", "(France,location.location.contains,Lyon)"]
    p = build_prompt("triples", "what is the capital of France", lines)
    cut = p.rebuilt(lines=1)
    assert cut.evidence_lines == 1 and "Lyon" not in cut.messages[-1]["content"] and cut.has_example
    bare = p.rebuilt(example=False)
    assert [m["role"] for m in bare.messages] == ["system", "user"] and bare.messages[-1] == p.messages[-1]


def test_a_reversed_relation_reads_against_its_arrow_without_stray_brackets():
    line = "Barack Obama → [people.person.parents] (reversed) → Malia Obama → [people.person.gender] → Female"
    assert path_line(line) == "Barack Obama ← people.person.parents ← Malia Obama → people.person.gender → Female"
    assert (
        step_line("France", [("location.country.capital", 1)], "Paris") == "France → location.country.capital → Paris"
    )
    assert step_line("A", [("r", -1), ("s", 1)], "C") == "A ← r ← … → s → C"


def test_candidates_template_lists_candidates_without_an_example():
    p = build_prompt(
        "candidates", "what is the capital of France", ["1. Paris (via France → location.country.capital → Paris)"]
    )
    assert [m["role"] for m in p.messages] == ["system", "user"]
    assert p.messages[-1]["content"].startswith("Candidates:\n1. Paris (via France")


def test_empty_evidence_is_said_not_left_blank():
    assert "(none retrieved)" in build_prompt("triples", "q", []).messages[-1]["content"]


def test_renderers():
    assert (
        render_triple("Sydney", "location.location.containedby", "Australia")
        == "(Sydney,location.location.containedby,Australia)"
    )
    assert render_path(["a", "b", "c"], ["r1", "r2"]) == "a → r1 → b → r2 → c"


def test_unknown_format_is_an_input_error():
    with pytest.raises(InputError, match="--format.*unknown prompt format 'xml'"):
        load_template("xml")
    with pytest.raises(InputError, match="no prompt template triples_v99"):
        load_template("triples", 99)


def test_example_question_is_not_an_evaluation_question(shared_data):
    texts = set()
    for line in (shared_data / "webqsp" / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        texts.add(json.loads(line)["question"].lower().strip(" ?"))
    for hop in (1, 2, 3):
        for line in (shared_data / "metaqa" / f"{hop}-hop" / "qa.txt").read_text(encoding="utf-8").splitlines():
            texts.add(line.split("\t")[0].replace("[", "").replace("]", "").lower().strip(" ?"))
    for fmt in FORMATS:
        example = load_template(fmt).example_question.lower().strip(" ?")
        assert example and example not in texts
        assert not any("opera house" in t and "architect" in t for t in texts)
