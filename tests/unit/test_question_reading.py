"""A question read once (`kgdb.reading.read_question`), on questions of the kinds WebQSP, CWQ and MetaQA ask:
the mentions linking looks up, the words written as names, the literal constraints and the answer-type cue,
a composition around a topic's name, and the encodings made of it."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from kgdb.reading import LinkedEntity, Topics, read_question


@pytest.mark.parametrize(
    "question, first_grams, derived, short",
    [
        ("where was the director of avatar born?", ("director of avatar", "director", "avatar"), {}, ()),
        ('who wrote the song "Speak Now"?', ("speak now", "wrote the song speak now"), {}, ("now",)),  # quoted first
        ("where is the nra headquarters located?", ("nra",), {}, ("nra",)),  # read as initials too
        ("what language do egyptians speak?", ("egyptians",), {"egyptians": "egypt"}, ()),  # a demonym's base
        ("where do they speak german?", ("german",), {}, ()),  # after a verb of speaking: the language
        (
            "what county is st paul in?",
            ("county is st paul", "county is st", "st paul"),
            {"st paul": "saint paul"},
            ("st",),
        ),
        # a short word right after a word of a name qualifies it: "nc" is not read as initials
        ("what county is st pauls nc in?", ("county is st pauls nc",), {"st pauls": "saint pauls"}, ("st",)),
        ("who was president during WW2?", ("president during ww2",), {}, ("ww2",)),  # a numbered name's abbreviation
        ("how many people live in new york city?", ("new york city", "new york", "york city"), {}, ("new",)),
        (
            "who is wayne gretzky's wife?",
            ("wayne gretzky's wife", "wayne gretzky wife", "wayne gretzky's", "wayne gretzky"),
            {},
            (),
        ),
    ],
)
def test_the_mentions_linking_looks_up(question, first_grams, derived, short):
    m = read_question(question).mentions
    assert m.grams[: len(first_grams)] == first_grams
    forms = dict(m.derived)
    assert set(forms) >= set(derived) and all(base in forms[g] for g, base in derived.items())
    assert not set(forms) & {"german", "nc"}
    assert m.short == short
    written = question.lower().replace('"', "").rstrip("?")
    assert m.said == f" {written} "  # the words, where a name of several words is written whole


def test_the_words_written_as_names():
    ricky = read_question("What film with character named Ricky has Charlie Hunnam's brother been in?")
    assert ricky.capitalised == {"ricky", "charlie", "hunnam"} and ricky.quoted == ()
    assert ricky.written_as_name("charlie hunnam") and ricky.written_as_name("charlie hunnam's")
    assert not ricky.written_as_name("film") and not ricky.written_as_name("character named ricky")
    song = read_question('who wrote the song "Speak Now"?')
    assert song.quoted == ("speak now",) and song.written_as_name("speak now") and not song.written_as_name("song")
    office = read_question("Who held the Governor of Arizona office?")
    assert office.written_as_name("governor of arizona") and not office.written_as_name("of")
    assert not office.written_as_name("arizona office")
    # capitals throughout, or on every word, mark nothing
    for shouted in ("WHERE WAS THE WIFE OF BARACK OBAMA BORN?", "Where Was The Wife Of Barack Obama Born?"):
        assert read_question(shouted).capitalised == frozenset()
        assert not read_question(shouted).written_as_name("barack obama")


@pytest.mark.parametrize(
    "question, bounds, extreme, cue",
    [
        ("which films did tom hanks star in before 2000?", [("before", 2000)], None, "which films"),
        ("what team did michael jordan play for after 1990?", [("after", 1990)], None, "what team"),
        ("who won the world series in 1995?", [("in", 1995)], None, "who"),
        ("whose songs did he cover since the year 1985?", [("after", 1985)], None, "who"),
        (
            "which country did the italians colonise before 1900 and after 1880?",
            [("before", 1900), ("after", 1880)],
            None,
            "which country",
        ),
        ("when was the last time the knicks won the championship?", [], "latest", "when"),
        ("who is the most recent governor of texas?", [], "latest", "who"),
        ("what was the first movie directed by steven spielberg?", [], "earliest", "what"),
        ("what state is the grand canyon in?", [], None, "what state"),
        ("which college did barack obama attend?", [], None, "which college"),
        ("where was the director of avatar born?", [], None, "where"),
    ],
)
def test_the_constraints_and_the_answer_cue(question, bounds, extreme, cue):
    r = read_question(question)
    assert [(b.op, b.year) for b in r.constraints.bounds] == bounds
    assert r.constraints.extreme == extreme and r.constraints.literal == bool(bounds or extreme)
    assert r.cue == cue and r.asked_noun == cue.split()[1:]
    assert r.constraints.asks_a_time == (cue == "when")


def test_the_stems_of_its_words():
    r = read_question("where was the director of avatar born?")
    assert r.stems == {"where", "was", "the", "direc", "avata", "born"}  # words of fewer than three letters aside
    assert read_question("what state is the grand canyon in?").cue_stems == {"what", "state"}
    assert "2000" in read_question("which films did tom hanks star in before 2000?").stems


def test_a_composition_around_a_topics_name_is_read_once():
    r = read_question("where was the director of avatar born?")
    c = r.composition("Avatar")
    assert (c.phrase, c.inner, c.outer("james cameron")) == (
        "the director of avatar",
        "what is the director of avatar?",
        "where was james cameron born?",
    )
    assert r.composition("Avatar") is c and r.composition("Titanic") is None
    assert read_question("what is the capital of france?").composition("France") is None  # the whole question
    # shown around the first topic's name, once linked
    shown = r.linked(Topics(["m.av"], "given", [], []), {"m.av": "Avatar"}).to_json()["composition"]
    assert shown == {"description": "the director of avatar", "inner_question": "what is the director of avatar?"}


def test_the_reading_is_frozen_and_linking_makes_another():
    r = read_question("what movies did katie holmes and tom cruise star in?")
    for field, value in (("text", "another"), ("topics", None), ("capitalised", frozenset())):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(r, field, value)
    shown = r.to_json()
    assert set(shown) == {"cue", "constraints", "written_as_names", "quoted", "composition", "topics"}
    assert shown["topics"] is None and shown["composition"] is None
    assert shown["cue"] == "what movies" and shown["constraints"] == {"years": [], "extreme": None}
    found = Topics(
        ["m.kh"],
        "linked",
        [
            LinkedEntity("m.kh", "Katie Holmes", 3.1, "katie holmes"),
            LinkedEntity("m.tc", "Tom Cruise", 3.0, "tom cruise"),
        ],
        [],
    )
    linked = r.linked(found, {"m.kh": "Katie Holmes"})
    assert r.topics is None and linked.topics is found and linked.mentions == r.mentions
    topics = json.loads(json.dumps(linked.to_json()))["topics"]
    assert topics["source"] == "linked" and topics["chosen"] == [{"id": "m.kh", "name": "Katie Holmes"}]
    assert [c["mention"] for c in topics["candidates"]] == ["katie holmes", "tom cruise"]
    bounded = read_question('Which films did "Tom Hanks" star in before 2000?').to_json()
    assert bounded["constraints"]["years"] == [{"op": "before", "year": 2000}]
    assert bounded["quoted"] == ["tom hanks"] and bounded["written_as_names"] == ["hanks", "tom"]


def test_each_view_is_encoded_once_and_without_the_names():
    read: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        read.append(list(texts))
        return np.full((len(texts), 3), float(len(read)), np.float32)

    r = read_question("where was the director of Avatar born?")
    whole = r.encoded(encode, ["Avatar"])
    assert (whole.text, whole.asks_for_an_entity) == ("where was the director of born?", True)
    assert r.encoded(encode, ["Avatar"]) is whole and len(read) == 1
    assert np.array_equal(whole.vector, np.full(3, 1.0, np.float32))
    c = r.composition("Avatar")
    inner = r.encoded(encode, ["Avatar"], part=c)
    outer = r.encoded(encode, ["James Cameron"], part=c, answer="james cameron")
    assert (inner.text, outer.text) == ("what is the director of ?", "where was born?")
    assert not inner.asks_for_an_entity and outer.asks_for_an_entity
    assert r.encoded(encode, ["James Cameron"], part=c, answer="james cameron") is outer
    assert r.encoded(encode, ["Avatar"], part=c) is inner
    assert read == [["where was the director of born?"], ["what is the director of ?"], ["where was born?"]]
    # the names and all: what linking compares names to, also made once; another encoder reads it again
    assert r.vector(encode) is r.vector(encode) and read[-1] == ["where was the director of Avatar born?"]
    assert len(read) == 4
    r.encoded(lambda texts: encode(texts), ["Avatar"])
    assert len(read) == 5
    # no name left to strip: the question as written
    assert read_question("when did george orwell die?").encoded(encode, []).text == "when did george orwell die?"
