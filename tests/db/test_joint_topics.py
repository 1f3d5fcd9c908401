"""A question that names several topics is answered by what each topic reaches: every topic's own plan
grounded and joined on the answer (kgdb/pipeline/joint_topics.py), else the planned answers next to the other
topics; written back, and off when asked."""

from __future__ import annotations

import pytest

from kgdb.cypher.writeback import show_run
from kgdb.rrp.plan import PathPlanner, Plan, PlannedPath, names_of
from kgdb.rrp.retriever import RelationPathRetriever
from kgdb.rrp.structural import answers_of

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

    def plan(self, graph, reading, topics, names) -> Plan:
        if topics.ids == ["Euro"]:
            paths = (PlannedPath((CURRENCY,), 0.8, (-1,)),)
        else:
            paths = (PlannedPath((ADJOINS,), 0.9, (1,)), PlannedPath((CURRENCY,), 0.5, (1,)))
        return Plan(topics, names_of(topics, names), paths, reading.text)


def test_the_answer_reached_from_every_topic_comes_first_and_is_written_back(kept_graph):
    graph = kept_graph(TRIPLES)
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


def test_without_a_shared_answer_or_with_the_joint_reading_off_the_plan_answers_as_before(kept_graph):
    graph = kept_graph(TRIPLES)
    off = RelationPathRetriever(graph, graph.settings, planner=TopicPlanner(), write=False, joint_paths=0)
    g = off.gather(QUESTION, ["France", "Euro"])
    assert g.joint == [] and "joint" not in g.timings
    assert sorted(answers_of("planner", g, 0.5, 0.0)) == ["Belgium", "Germany", "Spain"]

    on = RelationPathRetriever(graph, graph.settings, planner=TopicPlanner(), write=False)
    lone = on.gather("which countries use the peseta?", ["Peseta", "Belgian franc"])
    assert lone.joint == []  # no country uses both: nothing is reached from two topics
    assert on.gather(QUESTION, ["France"]).joint == []  # one topic: nothing to join


DATED, PROFESSION, FILM = "base.popstra.celebrity.dated", "people.person.profession", "film.actor.film"
STARRING, CHARACTER = "film.film.starring", "film.performance.character"
NEXT_TO = [
    ("Tupac Shakur", DATED, "Jada Pinkett Smith"),
    ("Tupac Shakur", DATED, "Kidada Jones"),
    ("Tupac Shakur", PROFESSION, "Rapper"),
    ("Jada Pinkett Smith", PROFESSION, "Singer-songwriter"),
    ("Kidada Jones", PROFESSION, "Model"),
    ("Adam Sandler", FILM, "Big Daddy"),
    ("Adam Sandler", FILM, "Click"),
    ("Click", STARRING, "m.0perf1"),
    ("m.0perf1", CHARACTER, "Ginger"),
    ("Big Daddy", STARRING, "m.0perf2"),
    ("m.0perf2", CHARACTER, "Sonny"),
]


class FirstTopicPlanner(PathPlanner):
    """Plans the core question's path from the first topic; from any other topic alone, a path that reaches
    nothing, as a ranker reads a topic that only types the answer with the whole question's words."""

    name = "first-topic"

    def plan(self, graph, reading, topics, names) -> Plan:
        if topics.ids in (["Tupac Shakur"], ["Adam Sandler"]) or len(topics.ids) > 1:
            paths = (PlannedPath((DATED,), 0.9, (1,)), PlannedPath((FILM,), 0.8, (1,)))
        else:
            paths = (PlannedPath(("people.person.nationality",), 0.7, (-1,)),)
        return Plan(topics, names_of(topics, names), paths, reading.text)


def test_with_no_shared_answer_the_answers_next_to_the_other_topic_come_first_and_are_written_back(kept_graph):
    graph = kept_graph(NEXT_TO)
    r = RelationPathRetriever(graph, graph.settings, planner=FirstTopicPlanner(), k=10)
    question = "who is the singer-songwriter that went out with tupac shakur?"
    g = r.gather(question, ["Tupac Shakur", "Singer-songwriter"])
    assert answers_of("planner", g, 0.5, 0.0) == ["Jada Pinkett Smith"] and "next_to" in g.timings
    assert {tuple(c.path.entities) for c in g.joint} == {
        ("Tupac Shakur", "Jada Pinkett Smith"),
        ("Singer-songwriter", "Jada Pinkett Smith"),
    }
    assert any("'Singer-songwriter' by one relation" in n for n in g.notes)

    res = r.retrieve(question, ["Tupac Shakur", "Singer-songwriter"], qid="q-next-to")
    assert [e.id for e in res.entities] == ["Jada Pinkett Smith"]
    written = show_run(graph, res.run)
    assert {(t["h"], t["rel"], t["t"]) for t in written["triples"]} == {
        ("Tupac Shakur", DATED, "Jada Pinkett Smith"),
        ("Jada Pinkett Smith", PROFESSION, "Singer-songwriter"),
    }


def test_an_answer_joined_to_the_other_topic_through_a_cvt_node_comes_first(kept_graph):
    graph = kept_graph(NEXT_TO)
    r = RelationPathRetriever(graph, graph.settings, planner=FirstTopicPlanner(), write=False)
    g = r.gather("what film with the character ginger did adam sandler play in?", ["Adam Sandler", "Ginger"])
    assert answers_of("planner", g, 0.5, 0.0) == ["Click"]
    joining = [c for c in g.joint if c.path.entities[0] == "Ginger"]
    assert [c.path.entities for c in joining] == [("Ginger", "m.0perf1", "Click")]
    assert joining[0].path.relations == (CHARACTER, STARRING) and joining[0].path.directions == (-1, -1)


def test_an_answer_next_only_to_the_topic_its_path_starts_from_changes_nothing(kept_graph):
    graph = kept_graph(NEXT_TO)
    r = RelationPathRetriever(graph, graph.settings, planner=FirstTopicPlanner(), write=False)
    # both answers are next to Tupac Shakur, where their path starts; neither is next to Rapper
    g = r.gather("who did the rapper tupac shakur date?", ["Tupac Shakur", "Rapper"])
    assert g.joint == [] and "next_to" in g.timings and g.notes == []
    assert sorted(answers_of("planner", g, 0.5, 0.0)) == ["Jada Pinkett Smith", "Kidada Jones"]


ANTHEM, JURISDICTION = "location.country.national_anthem", "government.government_office_or_title.jurisdiction"
OFFICIALS, HOLDER = (
    "government.governmental_jurisdiction.governing_officials",
    "government.government_position_held.office_holder",
)
TITLE = "government.government_position_held.office_position_or_title"
LEADERS = [
    ("Freedonia", ANTHEM, "Hail Freedonia"),
    ("Prime Minister of Freedonia", JURISDICTION, "Freedonia"),
    ("Freedonia", OFFICIALS, "m.0post1"),
    ("m.0post1", HOLDER, "Rufus"),
    ("m.0post1", TITLE, "Prime Minister of Freedonia"),
    ("Freedonia", OFFICIALS, "m.0post2"),
    ("m.0post2", HOLDER, "Chicolini"),
    ("m.0post2", TITLE, "Minister of War"),
]


class ComposingPlanner(PathPlanner):
    """From the anthem alone, a composed reading as the path ranker makes one ("the leader of [the country
    that has the anthem]": the country, then its officials); from the title alone, its country."""

    name = "composing"

    def plan(self, graph, reading, topics, names) -> Plan:
        if topics.ids == ["Prime Minister of Freedonia"]:
            return Plan(topics, names_of(topics, names), (PlannedPath((JURISDICTION,), 0.8, (1,)),), reading.text)
        composed = (PlannedPath((ANTHEM, OFFICIALS, HOLDER), 0.9, (-1, 1, 1)), PlannedPath((ANTHEM,), 0.3, (-1,)))
        note = "read as a composition: 'the country that has national anthem hail freedonia' is Freedonia"
        return Plan(topics, names_of(topics, names), composed, reading.text, notes=(note,), composed=note)


def test_a_joint_answer_in_the_middle_of_a_composed_reading_gives_way_to_that_reading(kept_graph):
    graph = kept_graph(LEADERS)
    r = RelationPathRetriever(graph, graph.settings, planner=ComposingPlanner(), write=False)
    # both topics reach Freedonia, but the question asks for its leader: the composed reading of the anthem
    # answers, and the leader next to the other topic (through the position's CVT node) comes first
    g = r.gather(
        "who is the leader of the country that has national anthem hail freedonia?",
        ["Hail Freedonia", "Prime Minister of Freedonia"],
    )
    assert "composed" in g.timings and g.found.ids == ["Hail Freedonia"]
    assert any(
        n.startswith("reached from two topics: Freedonia, what the description around 'Hail Freedonia' names")
        for n in g.notes
    )
    assert not any("no answer is reached from two topics" in n for n in g.notes)
    assert answers_of("planner", g, 0.5, 0.0) == ["Rufus"]
    assert ("Prime Minister of Freedonia", "m.0post1", "Rufus") in {c.path.entities for c in g.joint}
