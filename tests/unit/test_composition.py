"""Compositional questions: the descriptions `split_composition` finds around a topic's mention, and the
rule by which `RankedPathPlanner.compose` takes the composed reading (hand-made candidates and
scores; the database and the model are faked here)."""

from __future__ import annotations

import numpy as np
import pytest

from kgdb.cypher.path_candidates import RelationPathCandidate
from kgdb.reading import Topics, read_question
from kgdb.reading.composition import Composition, split_composition
from kgdb.reading.words import strip_mentions
from kgdb.rrp.path_ranker import COMPOSED_ENDS, RankedPathPlanner
from kgdb.rrp.planners import PlannedPath

DIRECTED, BORN, RELEASED = (
    ("film.film.directed_by", 1),
    ("people.person.place_of_birth", 1),
    ("film.film.release_date", 1),
)
EDITED = ("film.film.edited_by", 1)


@pytest.mark.parametrize(
    "question, topic, phrase, outer",
    [
        ("where was the director of avatar born?", "Avatar", "the director of avatar", "where was {} born?"),
        (
            "what is the capital of lionel messi's country?",
            "Lionel Messi",
            "lionel messi's country",
            "what is the capital of {}?",
        ),
        (
            "what languages are spoken in the country whose capital is nairobi?",
            "Nairobi",
            "the country whose capital is nairobi",
            "what languages are spoken in {}?",
        ),
        (
            "what is the capital of the country where Pele was born?",
            "Pele",
            "the country where pele was born",
            "what is the capital of {}?",
        ),
        (
            "Where was the Director of The Godfather  born?",
            "The Godfather",
            "the director of the godfather",
            "where was {} born?",
        ),
        ("where was step brothers' director born?", "Step Brothers", "step brothers' director", "where was {} born?"),
        ("who is the father of brad pitt's wife?", "Brad Pitt", "brad pitt's wife", "who is the father of {}?"),
        (
            "where was the man who directed the untouchables born?",
            "The Untouchables",
            "the man who directed the untouchables",
            "where was {} born?",
        ),
        (
            "What religion does the actor that played the character Senator Jasper Irving follow?",
            "Senator Jasper Irving",
            "the actor that played the character senator jasper irving",
            "what religion does {} follow?",
        ),
        (
            "What degree is held by a notable person who was educated at Menteng 01?",
            "Menteng 01",
            "a notable person who was educated at menteng 01",
            "what degree is held by {}?",
        ),
        (
            "What languages are spoken in the jurisdiction that has a governmental office holder named Ada Lovel?",
            "Ada Lovel",
            "the jurisdiction that has a governmental office holder named ada lovel",
            "what languages are spoken in {}?",
        ),
        (
            "In the film with the character named Winged Monkey #7, who played Dorothy?",
            "Winged Monkey #7",
            "the film with the character named winged monkey #7",
            "in {}, who played dorothy?",
        ),
        (
            'What was the profession of the person who said "Mysteries are due to secrecy."?',
            "Mysteries are due to secrecy.",
            'the person who said "mysteries are due to secrecy."',
            "what was the profession of {}?",
        ),
        (
            "In the area where the newspaper Berlingske is circulated, what languages are spoken?",
            "Berlingske",
            "the area where the newspaper berlingske is circulated",
            "in {}, what languages are spoken?",
        ),
        (
            "What year did the MLB franchise owned by Bill Neukom win the world series?",
            "Bill Neukom",
            "the mlb franchise owned by bill neukom",
            "what year did {} win the world series?",
        ),
        (
            "Where did the headliner of the Jay Z 2009 Concert Tour grow up?",
            "Jay Z 2009 Concert Tour",
            "the headliner of the jay z 2009 concert tour",
            "where did {} grow up?",
        ),
        (
            'When did the sports team whose fight song is "The Baltimore Fight Song" win the Super Bowl?',
            "The Baltimore Fight Song",
            'the sports team whose fight song is "the baltimore fight song"',
            "when did {} win the super bowl?",
        ),
        (
            "What currency is used in the country in which Atef Sedki held office in 2013?",
            "Atef Sedki",
            "the country in which atef sedki held office in 2013",
            "what currency is used in {}?",
        ),
        (
            "What style of painting is used by the illustrator of the book Blue Kites?",
            "Blue Kites",
            "the illustrator of the book blue kites",
            "what style of painting is used by {}?",
        ),
        (
            'What illness does the actor nominated for awards for "The Lamp Show" have?',
            "The Lamp Show",
            'the actor nominated for awards for "the lamp show"',
            "what illness does {} have?",
        ),
        (
            "What was chemist Ada Lovel's academic advisor's discovery?",
            "Ada Lovel",
            "ada lovel's academic advisor",
            "what was chemist {}'s discovery?",
        ),
    ],
)
def test_descriptions_around_the_mention_split_the_question(question, topic, phrase, outer):
    composition = split_composition(question, topic)
    before, after = outer.split("{}")
    assert composition == Composition(phrase, f"what is {phrase}?", before, after)
    assert composition.outer("james cameron") == outer.replace("{}", "james cameron")


@pytest.mark.parametrize(
    "question, topic, phrase",
    [
        # the name written without its accents, or misspelt in a name of several words
        (
            "what currency did the country whose national anthem is tien quan ca use?",
            "Tiến Quân Ca",
            "the country whose national anthem is tien quan ca",
        ),
        (
            "what was directed by the actor who played corneila wallace?",
            "Cornelia Wallace",
            "the actor who played corneila wallace",
        ),
        ("where was the director of avatár born?", "Avatar", "the director of avatár"),
        # the first words of a long name, misspelt too
        (
            "Where did the famous person who went to Horace Mann School for the Deaf die?",
            "Horace Mann School for the Deaf and Hard of Hearing",
            "the famous person who went to horace mann school for the deaf",
        ),
        (
            "What currency is used in the country with Nobel Patria, tu hermosa as its national anthem?",
            "Noble patria, tu hermosa bandera",
            "the country with nobel patria, tu hermosa",
        ),
    ],
)
def test_a_description_names_the_topic_as_the_question_spells_it(question, topic, phrase):
    composition = split_composition(question, topic)
    assert composition is not None and composition.phrase == phrase
    assert composition.outer("x") == " ".join(question.lower().split()).replace(phrase, "x")


def test_capitalised_words_right_after_the_name_belong_to_it():
    question = "Who was the vice president of the President who attended Ramble Elementary School?"
    composition = split_composition(question, "Ramble Elementary")
    assert composition is not None and composition.phrase == "the president who attended ramble elementary school"
    assert composition.after == "?"
    # capitals throughout mark nothing: the name is the topic's
    shouted = split_composition(question.upper(), "Ramble Elementary")
    assert shouted is not None and shouted.after == " school?"


def test_a_misspelt_name_of_one_word_is_not_the_topic():
    # one word spelt alike is most often another word
    assert split_composition("where was the director of avatr born?", "Avatar") is None


@pytest.mark.parametrize(
    "question",
    [
        "where was the director of avatar born }?",
        "where was the director of avatar {born}?",
        "where was the director of avatar born in {0}?",
        'where was "the director of avatar" born {0}?',
    ],
)
def test_braces_and_quotes_in_a_question_are_words_not_a_template(question):
    composition = split_composition(question, "Avatar")
    assert composition is not None and composition.phrase == "the director of avatar"
    # the inner answer's name takes the phrase's place; every other character stays as the user wrote it
    asked = composition.outer("james cameron")
    assert asked == " ".join(question.lower().split()).replace("the director of avatar", "james cameron")


@pytest.mark.parametrize(
    "question, topic",
    [
        ("what is the capital of france?", "France"),  # the description is the whole question
        ("who is the king of cambodia now?", "Cambodia"),  # a time word adds nothing to ask
        ("who is the prime minister of spain 2011?", "Spain"),
        ("who's the director of Zodiac", "Zodiac"),
        ("what is the name of sonia gandhi daughter?", "Sonia Gandhi"),  # "the name of" describes nothing
        ("where are ike and tina turner's children?", "Tina Turner"),  # a mention inside a coordination
        ("what was the currency used in france before the euro?", "France"),  # participles are the ranker's
        ("who is the actor who played darth vader?", "Darth Vader"),  # the description is the whole question
        # a description inside a participle one: the outer words are two hops (MetaQA's 3-hop questions)
        ("who directed the films written by the writer of green dragon", "Green Dragon"),
        ("the movies written by the screenwriter of blood work were directed by who", "Blood Work"),
        # a name before the plural that ends the question qualifies it: "the films starred by [X actors]"
        ("what genres are the movies written by heartburn writers", "Heartburn"),
        ("who is listed as director of the films starred by the inner circle actors", "The Inner Circle"),
        # two conditions on one answer, joined by "and"
        (
            "which city has a neighborhood called treasure island and was once the home of lauren conrad?",
            "Lauren Conrad",
        ),
        ("which is the country that exports to japan and has a iso of 296?", "Japan"),
        # what or who the description is, with one word after the name: the word is part of the name
        ("what is the zip code of syracuse ny?", "Syracuse"),
        ("who is the governor of pennsylvania state now?", "Pennsylvania"),
        ("what is the name of the national anthem of canada ( 2 words )?", "Canada"),
        # a clause about where the name is, in the middle of the question: the words after it are the outer question's
        ("which team from the city in which pele played football won the most cups?", "Pele"),
        ("where was the director of avatar born?", "Titanic"),  # the topic is not mentioned
        ("where was the director of the new york times born?", "New York Giants"),  # two first words are no name
        ("where was the director of avatar born?", " "),
    ],
)
def test_questions_that_are_no_composition(question, topic):
    assert split_composition(question, topic) is None


class _Embedder:
    def encode(self, texts):
        return np.zeros((len(texts), 4), np.float32)


class _Graph:
    """`entity_names` rows for the inner answers; dates are literals."""

    def __init__(self):
        self.asked: list[list[str]] = []

    def run(self, name, ids):
        assert name == "entity_names"
        self.asked.append(list(ids))
        return [{"id": i, "name": i.title(), "cvt": False, "literal": i[:1].isdigit()} for i in ids]


def _path(steps, ends, topics):
    return RelationPathCandidate(tuple(steps), set(ends), set(), len(ends), set(topics))


def _planner(rankings: dict[tuple[str, tuple[str, ...]], list[tuple[RelationPathCandidate, float]]]):
    """A ranker whose candidates and raw scores per (text read, topics) are given by hand."""
    planner = RankedPathPlanner(
        type("M", (), {"eval": lambda self: self})(), relations=None, embedder=_Embedder(), beam=5
    )
    planner._raw_scores = lambda graph, q, topics, reuse=False, work=None: (
        [c for c, _ in rankings.get((q.text, tuple(topics)), [])],
        np.array([s for _, s in rankings.get((q.text, tuple(topics)), [])], np.float32),
    )
    return planner


QUESTION = "where was the director of avatar born?"


def _direct_and_inner(inner_ends=("james cameron",), inner_top=DIRECTED):
    direct = [
        (_path([DIRECTED], ["james cameron"], ["avatar"]), 5.0),
        (_path([RELEASED], ["2009"], ["avatar"]), 1.0),
        (_path([DIRECTED, BORN], ["kapuskasing"], ["avatar"]), 0.0),
    ]
    inner = [(_path([inner_top], inner_ends, ["avatar"]), 6.0), (_path([RELEASED], ["2009"], ["avatar"]), 0.0)]
    outer = [
        (_path([BORN], ["kapuskasing"], ["james cameron"]), 3.0),
        (_path([("people.person.nationality", 1)], ["canada"], ["james cameron"]), 0.0),
    ]
    return {
        (strip_mentions(QUESTION, ["Avatar"]), ("avatar",)): direct,
        (strip_mentions("what is the director of avatar?", ["Avatar"]), ("avatar",)): inner,
        (strip_mentions("where was james cameron born?", ["James Cameron"]), ("james cameron",)): outer,
    }


def _ranked(planner, graph, q, topics):
    """The whole question's planned paths before any composed reading."""
    return planner.best_paths(planner.scored(graph, q, topics))


def _plans(planner, graph):
    return _ranked(planner, graph, planner.encode(read_question(QUESTION), ["Avatar"]), ["avatar"])


def test_the_composed_reading_replaces_a_best_path_that_answers_the_description():
    graph = _Graph()
    planner = _planner(_direct_and_inner())
    plans = _plans(planner, graph)
    composed, note = planner.compose(graph, read_question(QUESTION), ["avatar"], ["Avatar"], plans)
    p_outer = float(np.exp(3.0) / (np.exp(3.0) + 1.0))
    assert composed[0] == PlannedPath((DIRECTED[0], BORN[0]), plans[0].score, (1, 1))
    assert composed[1] == PlannedPath((DIRECTED[0],), pytest.approx(plans[0].score * (1 - p_outer)), (1,))
    # the composed path was also a candidate of the whole question: it is not planned twice; the release
    # date is no plan of a "where" question
    assert [p.relations for p in composed] == [(DIRECTED[0], BORN[0]), (DIRECTED[0],)]
    assert note.startswith(
        "read as a composition: 'the director of avatar' is James Cameron (film.film.directed_by), then 'where was … born?'"
    )
    # read: the whole question's, the description's, the outer words' at the topic and the outer question's
    # answers, whether they are values; the description's answer, its name
    assert graph.asked == [
        ["2009", "james cameron", "kapuskasing"],
        ["2009", "james cameron"],
        ["james cameron"],
        ["canada", "kapuskasing"],
    ]
    # plan() is the same rule; benchmarks/compositions.py turns it off to compare
    plan = _planner(_direct_and_inner()).plan(
        graph, read_question(QUESTION), Topics(["avatar"], "given", [], []), {"avatar": "Avatar"}
    )
    assert list(plan.paths) == composed and plan.composed == note and plan.notes == (note,)
    planner.compositions = False
    assert planner.compose(graph, read_question(QUESTION), ["avatar"], ["Avatar"], plans) == (plans, None)


def test_a_question_with_braces_and_quotes_is_read_as_a_composition_without_formatting_it():
    question = 'where was the director of avatar born {0} "}"?'
    composition = split_composition(question, "Avatar")
    rankings = {
        (strip_mentions(question, ["Avatar"]), ("avatar",)): _direct_and_inner()[
            (strip_mentions(QUESTION, ["Avatar"]), ("avatar",))
        ],
        (strip_mentions(composition.inner, ["Avatar"]), ("avatar",)): [
            (_path([DIRECTED], ["james cameron"], ["avatar"]), 6.0)
        ],
        (strip_mentions(composition.outer("james cameron"), ["James Cameron"]), ("james cameron",)): [
            (_path([BORN], ["kapuskasing"], ["james cameron"]), 3.0)
        ],
    }
    plan = _planner(rankings).plan(
        _Graph(), read_question(question), Topics(["avatar"], "given", [], []), {"avatar": "Avatar"}
    )
    assert plan.paths[0].relations == (DIRECTED[0], BORN[0])
    assert "then 'where was … born {0} \"}\"?' from there" in plan.composed


def test_a_best_path_of_a_descriptions_shape_is_replaced_even_when_the_inner_question_reads_another():
    # on a dense graph the whole question's best path answers the description with the wrong relation
    # ("the director of avatar" read as its editor); the inner question reads it right
    rankings = _direct_and_inner()
    rankings[(strip_mentions(QUESTION, ["Avatar"]), ("avatar",))].insert(
        0, (_path([EDITED], ["stephen rivkin"], ["avatar"]), 7.0)
    )
    graph = _Graph()
    planner = _planner(rankings)
    plans = _plans(planner, graph)
    assert plans[0].relations == (EDITED[0],)
    composed, note = planner.compose(graph, read_question(QUESTION), ["avatar"], ["Avatar"], plans)
    assert composed[0] == PlannedPath((DIRECTED[0], BORN[0]), plans[0].score, (1, 1))
    assert (EDITED[0],) in [p.relations for p in composed[1:]]  # the editor stays, demoted, as another reading
    assert note.startswith("read as a composition: 'the director of avatar' is James Cameron (film.film.directed_by)")


def test_the_whole_questions_reading_stays_unless_it_is_the_descriptions():
    graph = _Graph()
    # the whole question's best path already goes beyond the description (two plain hops): it read the question
    rankings = _direct_and_inner()
    rankings[(strip_mentions(QUESTION, ["Avatar"]), ("avatar",))][2] = (
        _path([DIRECTED, BORN], ["kapuskasing"], ["avatar"]),
        9.0,
    )
    planner = _planner(rankings)
    plans = _plans(planner, graph)
    assert plans[0].relations == (DIRECTED[0], BORN[0])
    assert planner.compose(graph, read_question(QUESTION), ["avatar"], ["Avatar"], plans) == (plans, None)
    for ends in (("2009",), tuple(f"film {i}" for i in range(COMPOSED_ENDS + 1))):  # a date; too many to be one thing
        planner = _planner(_direct_and_inner(inner_ends=ends))
        plans = _plans(planner, graph)
        assert planner.compose(graph, read_question(QUESTION), ["avatar"], ["Avatar"], plans) == (plans, None)
    # the outer words asked of the topic itself keep the best path: the description adds nothing (apposition)
    apposition = _direct_and_inner()
    apposition[(strip_mentions("where was avatar born?", ["Avatar"]), ("avatar",))] = [
        (_path([DIRECTED], ["james cameron"], ["avatar"]), 2.0)
    ]
    planner = _planner(apposition)
    plans = _plans(planner, graph)
    assert planner.compose(graph, read_question(QUESTION), ["avatar"], ["Avatar"], plans) == (plans, None)
    planner = _planner(_direct_and_inner())
    plans = _plans(planner, graph)
    assert planner.compose(graph, read_question(QUESTION), ["avatar", "titanic"], ["Avatar", "Titanic"], plans) == (
        plans,
        None,
    )  # two topics
    assert planner.compose(graph, read_question("who directed avatar?"), ["avatar"], ["Avatar"], plans) == (plans, None)


def test_a_description_read_with_another_relation_is_no_apposition():
    # "where was the wife of X born?" read whole as "where was X born?": the outer words asked of the topic
    # pick the same path, but the description picks another, so it is a composition
    rankings = _direct_and_inner()
    rankings[(strip_mentions(QUESTION, ["Avatar"]), ("avatar",))].insert(
        0, (_path([BORN], ["pandora"], ["avatar"]), 8.0)
    )
    rankings[(strip_mentions("where was avatar born?", ["Avatar"]), ("avatar",))] = [
        (_path([BORN], ["pandora"], ["avatar"]), 4.0),
        (_path([DIRECTED], ["james cameron"], ["avatar"]), 1.0),
    ]
    graph = _Graph()
    planner = _planner(rankings)
    plans = _plans(planner, graph)
    assert plans[0].relations == (BORN[0],)
    composed, note = planner.compose(graph, read_question(QUESTION), ["avatar"], ["Avatar"], plans)
    assert composed[0] == PlannedPath((DIRECTED[0], BORN[0]), plans[0].score, (1, 1))
    assert note.startswith("read as a composition: 'the director of avatar' is James Cameron")
    # the description read with the best path's relation too: an apposition, the whole reading stays
    rankings[(strip_mentions("what is the director of avatar?", ["Avatar"]), ("avatar",))].insert(
        0, (_path([BORN], ["pandora"], ["avatar"]), 9.0)
    )
    planner = _planner(rankings)
    plans = _plans(planner, graph)
    assert planner.compose(graph, read_question(QUESTION), ["avatar"], ["Avatar"], plans) == (plans, None)


def test_a_relative_clause_is_no_apposition():
    # every reading of "where was [the man who directed avatar] born?" goes to the director, the outer words
    # asked of the topic too, as in an apposition; but a relative clause never names the topic itself
    question = "where was the man who directed avatar born?"
    composition = split_composition(question, "Avatar")
    assert composition.clause and not split_composition(QUESTION, "Avatar").clause
    to_director = [
        (_path([DIRECTED], ["james cameron"], ["avatar"]), 5.0),
        (_path([RELEASED], ["2009"], ["avatar"]), 1.0),
    ]
    rankings = {
        (strip_mentions(text, ["Avatar"]), ("avatar",)): list(to_director)
        for text in (question, composition.inner, composition.outer("avatar"))
    }
    rankings[(strip_mentions(composition.outer("james cameron"), ["James Cameron"]), ("james cameron",))] = [
        (_path([BORN], ["kapuskasing"], ["james cameron"]), 3.0)
    ]
    graph = _Graph()
    planner = _planner(rankings)
    reading = read_question(question)
    plans = _ranked(planner, graph, planner.encode(reading, ["Avatar"]), ["avatar"])
    composed, note = planner.compose(graph, reading, ["avatar"], ["Avatar"], plans)
    assert composed[0] == PlannedPath((DIRECTED[0], BORN[0]), plans[0].score, (1, 1))
    assert note.startswith("read as a composition: 'the man who directed avatar' is James Cameron")


DIED_ON, DIED_IN = ("people.deceased_person.date_of_death", 1), ("people.deceased_person.place_of_death", 1)


@pytest.mark.parametrize(
    "question, first",
    [
        ("where did george orwell die?", DIED_IN),
        ("Who did george orwell die with?", DIED_IN),  # any entity rather than a value
        ("when did george orwell die?", DIED_ON),  # a value may answer when, what, how …
        ("what did george orwell die on?", DIED_ON),
        ("the date whose day george orwell died on was when?", DIED_ON),  # "whose" is relative: not asked of
    ],
)
def test_where_and_who_are_answered_with_entities_not_values(question, first):
    graph = _Graph()
    q = _planner({}).encode(read_question(question), ["George Orwell"])
    ranking = [(_path([DIED_ON], ["1950-01-21"], ["orwell"]), 5.0), (_path([DIED_IN], ["london"], ["orwell"]), 4.0)]
    planner = _planner({(q.text, ("orwell",)): ranking})
    plans = _ranked(planner, graph, q, ["orwell"])
    assert plans[0].relations == (first[0],)
    if first == DIED_IN:  # the value path is gone and the entity path takes its probability
        assert [p.relations for p in plans] == [(DIED_IN[0],)] and plans[0].score == pytest.approx(1.0)
        assert graph.asked == [["1950-01-21", "london"]]
    else:
        assert len(plans) == 2 and graph.asked == []
    # when every path the planner would ground answers with values, they stay: the graph has nothing else
    planner = _planner({(q.text, ("orwell",)): [(c, s) for c, s in ranking if c.steps == (DIED_ON,)]})
    assert [p.relations for p in _ranked(planner, graph, q, ["orwell"])] == [(DIED_ON[0],)]


def test_a_description_names_an_entity_even_when_its_best_path_ends_in_a_value():
    # "the author of war and peace" read as the book's date of publication, its author second
    graph = _Graph()
    question, written, published = (
        "where was the author of war and peace born?",
        ("book.written_work.author", 1),
        ("book.written_work.date", 1),
    )
    rankings = {
        (strip_mentions(question, ["War and Peace"]), ("wp",)): [
            (_path([written], ["leo tolstoy"], ["wp"]), 5.0),
            (_path([published], ["1869"], ["wp"]), 4.0),
        ],
        (strip_mentions("what is the author of war and peace?", ["War and Peace"]), ("wp",)): [
            (_path([published], ["1869"], ["wp"]), 6.0),
            (_path([written], ["leo tolstoy"], ["wp"]), 3.0),
        ],
        (strip_mentions("where was war and peace born?", ["War and Peace"]), ("wp",)): [
            (_path([published], ["1869"], ["wp"]), 1.0)
        ],
        (strip_mentions("where was leo tolstoy born?", ["Leo Tolstoy"]), ("leo tolstoy",)): [
            (_path([BORN], ["yasnaya polyana"], ["leo tolstoy"]), 3.0)
        ],
    }
    planner = _planner(rankings)
    reading = read_question(question)
    plans = _ranked(planner, graph, planner.encode(reading, ["War and Peace"]), ["wp"])
    composed, note = planner.compose(graph, reading, ["wp"], ["War and Peace"], plans)
    assert composed[0] == PlannedPath((written[0], BORN[0]), plans[0].score, (1, 1))
    assert note.startswith(
        "read as a composition: 'the author of war and peace' is Leo Tolstoy (book.written_work.author)"
    )
