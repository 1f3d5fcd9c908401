"""The "Extending kgdb" page works as written: its Python blocks run in order, and the reasoner, planner
and question-level retriever they register answer a question on a real Neo4j, by name, as `kgdb ask`
builds them."""

from __future__ import annotations

import re

import pytest

from kgdb.qa.ask import answering_pipeline
from kgdb.qa.planners import PLANNERS
from kgdb.qa.question_retrievers import QUESTION_RETRIEVERS
from kgdb.qa.reasoners import REASONERS
from support import ROOT
from support.graphs import load

PAGE = ROOT / "docs" / "guide" / "extending.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
TRIPLES = [
    ("France", "location.country.capital", "Paris"),
    ("France", "location.country.official_language", "French"),
    ("Paris", "location.location.containedby", "France"),
    ("Jamaica", "location.country.capital", "Kingston"),
]


@pytest.fixture
def page_plugins(monkeypatch):
    """The page's blocks run, what they register forgotten after the test."""
    for registry in (REASONERS, PLANNERS, QUESTION_RETRIEVERS):
        registry.load()
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))
    blocks = BLOCK.findall(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) == 3
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(PAGE), "exec"), namespace)
    return namespace


def test_the_pages_plugins_answer_by_name(graph, page_plugins):
    load(graph, TRIPLES)
    settings = graph.settings.with_overrides(llm_model=None)
    assert REASONERS.summary("my-far-end") == "the far end of the best triple"
    assert "my-words (one-hop relation paths whose words the question uses)" in PLANNERS.summaries()

    question = "what is the capital of france?"
    pipe = answering_pipeline(graph, settings, retriever="my-neighbours", reasoner="my-far-end", write=False)
    res = pipe.ask(question, ["France"])
    assert (res.retriever, res.reasoning.reasoner) == ("my-neighbours", "my-far-end")
    assert [a.answer for a in res.answers] == ["Paris"] and res.answers[0].grounded

    planned = answering_pipeline(graph, settings, planner="my-words", reasoner="rrp", write=False)
    res = planned.ask(question, ["France"])
    assert (res.retriever, planned.plan.planner) == ("relation-paths", "my-words")
    assert res.retrieval["planner"] == "my-words"
    assert [a.answer for a in res.answers][:1] == ["Paris"]
