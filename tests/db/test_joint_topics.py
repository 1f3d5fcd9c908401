"""A question that names several topics is answered by what each topic reaches: every topic's own plan
grounded and joined on the answer (kgdb/pipeline/joint_topics.py), written back, and off when asked."""

from __future__ import annotations

import pytest

from kgdb.cypher.writeback import show_run
from kgdb.pipeline import RelationPathRetriever
from kgdb.pipeline.plan import PathPlanner, Plan, PlannedPath, names_of
from kgdb.pipeline.structural import answers_of
from support.graphs import load

pytestmark = pytest.mark.usefixtures("one_thread")

ADJOINS, CURRENCY = "location.location.adjoins", "location.country.currency_used"
TRIPLES = [
    ("France", ADJOINS, "Germany"),
    ("France", ADJOINS, "Spain"),
    ("France", ADJOINS, "Belgium"),
    ("France", CURRENCY, "Euro"),
    ("Germany", CURRENCY, "Euro"),
    ("Spain", CURRENCY, "Peseta"),
    ("Belgium", CURRENCY, "Belgian franc"),
    ("Italy", CURRENCY, "Euro"),
]
QUESTION = "which country borders france and uses the euro?"


class TopicPlanner(PathPlanner):
    """Plans by topic set, as a ranker would: from both topics at once the borders reading wins; from
    the euro alone, the countries using it."""

    name = "by-topic"

    def plan(self, graph, question, topics, names) -> Plan:
        if topics.ids == ["Euro"]:
            paths = (PlannedPath((CURRENCY,), 0.8, (-1,)),)
        else:
            paths = (PlannedPath((ADJOINS,), 0.9, (1,)), PlannedPath((CURRENCY,), 0.5, (1,)))
        return Plan(topics, names_of(topics, names), paths, question)


def test_the_answer_reached_from_every_topic_comes_first_and_is_written_back(graph):
    load(graph, TRIPLES)
    r = RelationPathRetriever(graph, graph.settings, planner=TopicPlanner(), k=10)
    g = r.gather(QUESTION, ["France", "Euro"])
    assert {c.path.answer for c in g.joint} == {"Germany"}
    assert {c.path.entities[0] for c in g.joint} == {"France", "Euro"}  # one path from each topic
    assert answers_of("planner", g, 0.5, 0.0) == ["Germany"] and "joint" in g.timings

    res = r.retrieve(QUESTION, ["France", "Euro"], qid="q-joint")
    assert [e.id for e in res.entities] == ["Germany"]
    assert {p.source for p in res.paths} == {"joint-topics"}
    written = show_run(graph, res.run)
    assert {(t["h"], t["rel"], t["t"]) for t in written["triples"]} == {
        ("France", ADJOINS, "Germany"),
        ("Germany", CURRENCY, "Euro"),
    }


def test_without_a_shared_answer_or_with_the_joint_reading_off_the_plan_answers_as_before(graph):
    load(graph, TRIPLES)
    off = RelationPathRetriever(graph, graph.settings, planner=TopicPlanner(), write=False, joint_paths=0)
    g = off.gather(QUESTION, ["France", "Euro"])
    assert g.joint == [] and "joint" not in g.timings
    assert sorted(answers_of("planner", g, 0.5, 0.0)) == ["Belgium", "Germany", "Spain"]

    on = RelationPathRetriever(graph, graph.settings, planner=TopicPlanner(), write=False)
    lone = on.gather("which countries use the peseta?", ["Peseta", "Belgian franc"])
    assert lone.joint == []  # no country uses both: nothing is reached from two topics
    assert on.gather(QUESTION, ["France"]).joint == []  # one topic: nothing to join
