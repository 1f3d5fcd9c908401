"""The question-level protocol with a retriever that plans relation paths and grounds them in
Cypher (`ground_step.cypher`), then feeds `kgdb ask`'s paths prompt."""

from __future__ import annotations

import pytest

from kgdb.cypher.writeback import show_run
from kgdb.protocol import QuestionRetriever
from kgdb.qa.ask import AskPipeline
from kgdb.rrp.retriever import RelationPathRetriever
from support.graphs import load
from support.jamaica import TRIPLES
from support.plugins import FixedPlanner

pytestmark = pytest.mark.usefixtures("one_thread")


def test_planned_relation_paths_are_grounded_scored_and_written(kept_graph):
    graph = kept_graph(TRIPLES)
    planner = FixedPlanner(
        ("location.country.capital",), ("location.location.containedby", "location.citytown.postal_codes")
    )
    r = RelationPathRetriever(graph, graph.settings, planner=planner, k=10)
    assert isinstance(r, QuestionRetriever)
    res = r.retrieve("what is the capital of jamaica?", ["Jamaica"], qid="q-cap")
    best = res.paths[0]
    assert (
        best.entities == ("Jamaica", "Kingston")
        and best.relations == ("location.country.capital",)
        and best.directions == (1,)
    )
    # The two-hop path runs against the containedby edge (Kingston -> Jamaica), then along postal_codes.
    two = [p for p in res.paths if len(p.relations) == 2]
    assert two and two[0].entities == ("Jamaica", "Kingston", "m.0abc1") and two[0].directions == (-1, 1)
    assert [e.id for e in res.entities][:1] == ["Kingston"]
    assert res.triples[0].tail == "Kingston" and res.triples[0].rank == 1
    run = show_run(graph, res.run)
    assert run["retriever"] == "relation-paths" and {t["rel"] for t in run["triples"]} >= {"location.country.capital"}


def test_cosine_planner_finds_the_capital_relation(kept_graph):
    graph = kept_graph(TRIPLES)
    r = RelationPathRetriever(graph, graph.settings, write=False)
    res = r.retrieve("what is the capital of jamaica?", ["Jamaica"])
    assert res.run is None and res.paths
    assert ("location.country.capital",) in [p.relations for p in res.paths[:3]]


def test_paths_prompt_takes_the_retrievers_ordered_paths(kept_graph):
    graph = kept_graph(TRIPLES)
    r = RelationPathRetriever(graph, graph.settings, planner=FixedPlanner(("location.country.capital",)), k=10)
    asked = AskPipeline(graph, graph.settings, retriever=r, fmt="paths", reasoner="extractive").ask(
        "what is the capital of jamaica?", ["Jamaica"]
    )
    assert asked.retriever == "relation-paths"
    assert any("Jamaica → location.country.capital → Kingston" in line for line in asked.evidence_lines)
    assert [a.answer for a in asked.answers][:1] == ["Kingston"]


def test_unknown_relation_grounds_to_nothing_and_says_why(kept_graph):
    graph = kept_graph(TRIPLES)
    res = RelationPathRetriever(
        graph, graph.settings, planner=FixedPlanner(("no.such.relation",)), write=False
    ).retrieve("what is the capital of jamaica?", ["Jamaica"])
    assert res.paths == [] and res.triples == [] and res.entities == []
    assert any("'no.such.relation', not a relation of this graph" in n for n in res.notes)


def test_ends_of_one_relation_path_come_closest_to_the_question_first(graph):
    """Every end of one relation path scores the same; the question's words left after its topic say
    which it asks for. Ids would put the high school first for both questions."""
    load(
        graph,
        [
            ("Kevin Love", "people.person.education", "Lake Oswego High School"),
            ("Kevin Love", "people.person.education", "University of California, Los Angeles"),
        ],
    )
    r = RelationPathRetriever(
        graph, graph.settings, planner=FixedPlanner(("people.person.education",)), k=10, write=False
    )
    college = r.retrieve("which university did kevin love go to?", ["Kevin Love"])
    school = r.retrieve("which high school did kevin love go to?", ["Kevin Love"])
    assert [p.answer for p in college.paths] == ["University of California, Los Angeles", "Lake Oswego High School"]
    assert [e.id for e in college.entities] == ["University of California, Los Angeles", "Lake Oswego High School"]
    assert [p.answer for p in school.paths] == ["Lake Oswego High School", "University of California, Los Angeles"]
    assert {p.score for p in college.paths} == {1.0}  # a tie on the score: only the order moved
    asked = AskPipeline(graph, graph.settings, retriever=r, reasoner="rrp", write=False).ask(
        "which university did kevin love go to?", ["Kevin Love"]
    )
    assert [a.answer for a in asked.answers] == ["University of California, Los Angeles", "Lake Oswego High School"]
