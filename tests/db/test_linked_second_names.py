"""A question typed without topics is read from each name it names (kgdb.rrp.retriever.topics_to_join),
linked by the real linker in a real Neo4j: a one-word name counts when the question writes it with a capital,
a misspelt name of several words when it spells the name closely."""

from __future__ import annotations

import pytest

from kgdb.reading import read_question
from kgdb.reading.topics import topics_to_join
from kgdb.rrp.retriever import RelationPathRetriever

pytestmark = pytest.mark.usefixtures("one_thread")

FILM, CHARACTER = "film.actor.film", "film.film.character"
TRIPLES = [
    *[("Charlie Hunnam", FILM, f) for f in ("Green Street", "Children of Men", "Pacific Rim", "Cold Mountain")],
    *[("Charlie Hunnam", "people.person.profession", p) for p in ("Actor", "Screenwriter")],
    # well connected, so that the second name links further below him than a namesake competes
    *[("Charlie Hunnam", "tv.tv_actor.episode", f"Episode {i}") for i in range(40)],
    ("Green Street", CHARACTER, "Ricky"),
    ("Green Street", "film.film.country", "United Kingdom"),
    ("Children of Men", "film.film.country", "United Kingdom"),
    ("Taylor Swift", FILM, "Valentine's Day"),
    ("Taylor Swift", FILM, "The Lorax"),
    ("Katherine Fugate", "film.writer.film", "Valentine's Day"),
]


def _joined(retriever, question):
    reading = read_question(question)
    found, names = retriever._link(reading, None, None)
    return set(topics_to_join(reading.linked(found, names)))


def test_a_capitalised_one_word_name_and_a_misspelt_name_are_read_as_second_topics(kept_graph):
    graph = kept_graph(TRIPLES)
    r = RelationPathRetriever(graph, graph.settings, write=False)
    question = "What film with character named Ricky has Charlie Hunnam been in?"
    assert _joined(r, question) == {"Charlie Hunnam", "Ricky"}
    assert r.retrieve(question).entities[0].id == "Green Street"
    # the same words in lower case: "ricky" could be the question's wording, and is not read
    assert _joined(r, question.lower()) == {"Charlie Hunnam"}
    assert _joined(r, "What movie, written by Katerine Fugate, featured Taylor Swift?") == {
        "Taylor Swift",
        "Katherine Fugate",
    }


def test_a_linked_question_s_run_names_every_topic_its_answers_were_read_from(kept_graph):
    from kgdb.cypher.writeback import show_run

    graph = kept_graph(TRIPLES)
    r = RelationPathRetriever(graph, graph.settings)
    question = "What film with character named Ricky has Charlie Hunnam been in?"
    g = r.gather(question)
    assert len(g.found.ids) == 1 and {c.path.entities[0] for c in g.joint} == {"Charlie Hunnam", "Ricky"}
    res = r.retrieve(question)
    # the topic it was linked to first, then the one its joint reading read too
    assert res.topics == [*g.found.ids, *({"Charlie Hunnam", "Ricky"} - set(g.found.ids))]
    assert [e.id for e in res.entities] == ["Green Street"]
    written = show_run(graph, res.run)
    assert written["topics"] == ["Charlie Hunnam", "Ricky"]
    assert {(t["h"], t["t"]) for t in written["triples"]} == {
        ("Charlie Hunnam", "Green Street"),
        ("Green Street", "Ricky"),
    }


def test_names_with_no_answer_in_common_are_read_together_as_topics_given_are(kept_graph):
    graph = kept_graph(TRIPLES)
    r = RelationPathRetriever(graph, graph.settings, write=False)
    question = "What film has Charlie Hunnam made with Taylor Swift?"  # none: no answer joins them
    assert _joined(r, question) == {"Charlie Hunnam", "Taylor Swift"}
    g = r.gather(question)
    assert not g.joint and set(g.found.ids) == {"Charlie Hunnam", "Taylor Swift"}
    assert g.found.source == "linked" and g.found.linked  # still linked, its candidates kept
    assert {"link", "plan", "joint", "together"} <= set(g.timings)  # both readings timed
    answers = {c.path.answer for c in g.planned}
    assert {"Green Street", "The Lorax"} <= answers  # each name's films
    # in lower case the names are not written as names: the question is read from the one topic chosen
    assert len(r.gather(question.lower()).found.ids) == 1


def test_the_joint_reading_takes_the_first_reading_as_its_topics_own(kept_graph, monkeypatch):
    graph = kept_graph(TRIPLES)
    r = RelationPathRetriever(graph, graph.settings, write=False)
    readings = []
    gather_one = r._gather
    monkeypatch.setattr(
        r,
        "_gather",
        lambda question, found, *a, **kw: readings.append(found.ids) or gather_one(question, found, *a, **kw),
    )
    question = "What film with character named Ricky has Charlie Hunnam been in?"
    g = r.gather(question)
    assert g.found.ids == ["Charlie Hunnam"] and "joint" in g.timings
    assert readings == [["Charlie Hunnam"], ["Ricky"]]  # Charlie Hunnam's own reading is not gathered again
    assert {c.path.answer for c in g.joint} == {"Green Street"}
