"""Linking by answerability (`RankedPathPlanner.choose_topic`): which linked candidate becomes the
topic, with the ranker's raw path scores given by hand (the database and the model are tested
elsewhere; here only the rule)."""

from __future__ import annotations

import threading

import numpy as np

from kgdb.cypher.path_candidates import RelationPathCandidate
from kgdb.reading import LinkedEntity, Topics, read_question
from kgdb.reading.topics import NAME_LINK_MARGIN, TOPIC_LINK_MARGIN, topics_to_join
from kgdb.rrp.path_ranker import TOPIC_PATH_WEIGHT, RankedPathPlanner
from kgdb.rrp.ranker_features import relation_wording


class _Model:
    def eval(self):
        return self


class _Embedder:
    def encode(self, texts):
        return np.zeros((len(texts), 4), np.float32)


def _planner(best_logit: dict[str, float | None], best_path: dict[str, str] | None = None):
    """A planner whose ranker gives each topic's paths by hand: the best (raw score `best_logit[topic]`)
    follows the relation `best_path[topic]` (default: one named after the topic), another scores 1 less."""
    planner = RankedPathPlanner(_Model(), relations=None, embedder=_Embedder())
    best_path = best_path or {}
    calls: list[tuple[str, tuple[str, ...]]] = []

    def raw(graph, text, q_emb, topics, reuse, work):
        calls.append((text, tuple(topics)))
        logit = best_logit[topics[0]]
        if logit is None:
            return [], np.zeros(0, np.float32)
        relation = best_path.get(topics[0], f"test.topic.{topics[0].replace(' ', '_')}")
        return [RelationPathCandidate((("test.other.path", 1),)), RelationPathCandidate(((relation, 1),))], np.array(
            [logit - 1.0, logit], np.float32
        )

    planner._rank_candidates = raw  # ranked once per reading: `_raw_scores` keeps what it ranked
    return planner, calls


def _of(*candidates: LinkedEntity) -> Topics:
    return Topics([candidates[0].id], "linked", list(candidates), [])


def _linked(*cands: tuple[str, float, str | None]) -> Topics:
    return _of(*(LinkedEntity(i, i.title(), score, mention) for i, score, mention in cands))


def _to_join(found: Topics, names: dict[str, str], question: str) -> dict[str, str]:
    return topics_to_join(read_question(question).linked(found, names))


def test_a_candidate_the_question_can_be_answered_from_beats_a_slightly_better_link():
    planner, calls = _planner({"time": 0.0, "new york knicks": 30.0, "knicks fan": 100.0})
    reading = read_question("when was the last time the knicks won the championship?")
    found = _linked(("time", 1.46, "time"), ("new york knicks", 1.2, "knicks"), ("knicks fan", 0.5, "knicks fan"))
    chosen = planner.choose_topic(None, reading, found)
    # 1.2 + 0.05 * 30 beats 1.46 + 0; "knicks fan" is more than the margin below the best link score
    assert chosen.ids == ["new york knicks"] and chosen.linked == found.linked and chosen.source == "linked"
    assert [t for _, t in calls] == [("time",), ("new york knicks",)]
    # a plan starts from the chosen topic, and its ranking is kept for the paths: nothing is ranked twice
    calls.clear()
    kept = dict(vars(planner))
    plan = planner.plan(None, reading, found, {})
    assert vars(planner) == kept  # nothing of the question stays on the planner: its plan carries it
    assert plan.topics.ids == ["new york knicks"] and plan.topic_names == ("New York Knicks",)
    assert [t for _, t in calls] == [("time",), ("new york knicks",)]
    assert [p.relations for p in plan.paths] == [("test.topic.new_york_knicks",), ("test.other.path",)]


def test_a_small_path_score_difference_leaves_the_linkers_order():
    planner, _ = _planner({"a": 10.0, "b": 10.0 + 0.1 / TOPIC_PATH_WEIGHT - 0.5})
    assert planner.choose_topic(None, read_question("q"), _linked(("a", 1.5, "a"), ("b", 1.4, "b"))).ids == ["a"]


def test_candidates_without_a_path_lose_and_given_or_single_topics_are_kept():
    planner, calls = _planner({"a": None, "b": -5.0})
    assert planner.choose_topic(None, read_question("q"), _linked(("a", 1.5, "a"), ("b", 1.3, "b"))).ids == ["b"]
    calls.clear()
    given = Topics(["a"], "given", [], [])
    assert planner.choose_topic(None, read_question("q"), given) is given
    single = _linked(("a", 1.5, "a"), ("z", 1.4, None))  # a vector-only neighbour is not a mention
    assert planner.choose_topic(None, read_question("q"), single) is single and not calls


def test_a_name_the_question_capitalises_or_quotes_beats_a_word_of_its_wording_linked_higher():
    planner, _ = _planner({"writer": 5.0, "kaaren": 5.0, "religion": 5.0, "zhang jue": 5.0, "key": 5.0})
    lyrics = _linked(("writer", 3.03, "writer"), ("kaaren", 2.90, "kaaren"))
    assert planner.choose_topic(
        None, read_question('Which magazine did the writer who wrote "Kaaren" work for?'), lyrics
    ).ids == ["kaaren"]
    assert planner.choose_topic(
        None, read_question('which magazine did the writer who wrote "kaaren" work for?'), lyrics
    ).ids == ["kaaren"]
    # a writer who capitalises nothing marks no name: the linker's order stands
    assert planner.choose_topic(
        None, read_question("which magazine did the writer of kaaren work for?"), lyrics
    ).ids == ["writer"]
    # a name further below than the namesakes' margin still competes, up to NAME_LINK_MARGIN
    question = "What text in the religion which includes Zhang Jue as a key figure is sacred?"
    within = 2.9 - (TOPIC_LINK_MARGIN + NAME_LINK_MARGIN) / 2
    sacred = _linked(("religion", 2.9, "religion"), ("zhang jue", within, "jue"), ("key", 2.3, "key"))
    assert planner.choose_topic(None, read_question(question), sacred).ids == ["zhang jue"]
    beyond = _linked(("religion", 2.9, "religion"), ("zhang jue", 2.9 - NAME_LINK_MARGIN - 0.01, "jue"))
    assert planner.choose_topic(None, read_question(question), beyond).ids == ["religion"]


def test_a_name_is_written_in_quotes_or_with_capitals_but_for_its_small_words():
    from kgdb.reading.words import capitalised, quoted, written_as_name

    question = 'Who held the Governor of Arizona office before George Washington\'s war on the "forgiveness of sins"?'
    written, spans = capitalised(question), quoted(question)
    assert written_as_name("governor of arizona", spans, written)
    assert written_as_name("george washington's", spans, written)  # a possessive is the name's
    assert written_as_name("forgiveness of sins", spans, written)  # quoted
    assert not written_as_name("office", spans, written)
    assert not written_as_name("war", spans, written)
    assert not written_as_name("of", spans, written)  # small words alone name nothing


def test_a_word_inside_a_longer_mention_does_not_compete():
    # the linker ranks "stone" just below the full name "philip stone"; its paths must not lift it over
    planner, calls = _planner({"philip stone": 1.0, "stone": 90.0, "the baby": 2.0})
    found = _linked(("philip stone", 1.8, "philip stone"), ("stone", 1.8 - 1e-6, "stone"), ("the baby", 1.6, "baby"))
    assert planner.choose_topic(None, read_question("what does philip stone star in"), found).ids == ["philip stone"]
    assert ("the baby",) in [t for _, t in calls]  # another word still competes
    assert ("stone",) not in [t for _, t in calls]


def test_namesakes_of_one_mention_leave_a_place_to_another_name():
    anthems = {f"anthem of {c}": 1.0 for c in ("chile", "afghanistan", "russia")}
    planner, calls = _planner({**anthems, "tsakhur language": 50.0})
    question = "what is the national anthem of the place where tsakhur is spoken?"
    found = _linked(
        ("anthem of chile", 2.72, "national anthem"),
        ("anthem of afghanistan", 2.70, "national anthem"),
        ("anthem of russia", 2.66, "national anthem"),
        ("tsakhur language", 2.63, "tsakhur"),
    )
    assert planner.choose_topic(None, read_question(question), found).ids == ["tsakhur language"]
    assert [t for _, t in calls] == [("anthem of chile",), ("anthem of afghanistan",), ("tsakhur language",)]


def test_a_candidate_linked_from_the_wording_of_anothers_best_path_does_not_compete():
    paths = {"bruce lee": "people.deceased_person.cause_of_death", "cause of death": "medicine.disease.causes"}
    planner, _ = _planner({"cause of death": 5.0, "bruce lee": 5.0}, paths)
    found = _linked(("cause of death", 3.37, "cause of death"), ("bruce lee", 3.22, "bruce lee"))
    # without the rule the better link wins on equal path scores; Bruce Lee's best path reads "cause of death"
    assert planner.choose_topic(None, read_question("what was the cause of death for bruce lee?"), found).ids == [
        "bruce lee"
    ]
    steps = {"serena williams": (("people.person.parents", 1),), "parents": (("film.film.starring", 1),)}
    linked = [LinkedEntity(i, i.title(), 1.0, i) for i in steps]
    assert relation_wording(linked, steps) == {"parents"}  # compared without the plural s
    # a word the two mentions share is no wording; a mention with a word the path lacks is not either
    overlap = [LinkedEntity("lee", "Lee", 1.0, "lee"), LinkedEntity("bruce lee", "Bruce Lee", 1.0, "bruce lee")]
    assert (
        relation_wording(overlap, {"lee": (("people.person.lee_name", 1),), "bruce lee": (("people.person.lee", 1),)})
        == set()
    )
    assert relation_wording(linked, {"serena williams": (("people.person.children", 1),)}) == set()


def test_when_every_candidate_is_worded_by_another_they_all_compete():
    paths = {"parents": "people.person.children", "children": "people.person.parents"}
    planner, _ = _planner({"parents": 1.0, "children": 1.0}, paths)
    assert planner.choose_topic(
        None, read_question("q"), _linked(("parents", 1.5, "parents"), ("children", 1.4, "children"))
    ).ids == ["parents"]


def test_a_linked_question_is_read_from_each_distinct_mention_that_competes():
    both = _of(
        LinkedEntity("m.franc", "Swiss franc", 3.21, "swiss franc"),
        LinkedEntity("m.de", "Germany", 3.05, "germany"),
        LinkedEntity("m.cur", "Southern States Confederate Currency", 2.25, "currency"),  # far below the best
    )
    assert _to_join(both, {}, "") == {"m.franc": "Swiss franc", "m.de": "Germany"}
    namesakes = _of(
        LinkedEntity("m.kirk", "James T. Kirk", 3.0, "kirk"), LinkedEntity("m.ron", "Ron Kirk", 2.8, "kirk")
    )
    assert list(_to_join(namesakes, {}, "")) == ["m.kirk"]  # one mention, two readings of it: one topic
    fuzzy = _of(LinkedEntity("m.a", "Ada", 3.0, "ada"), LinkedEntity("m.b", "Ernie Sabella", 2.9, "isabella"))
    assert list(_to_join(fuzzy, {}, "")) == ["m.a"]  # a name that does not hold its mention is no topic
    given = Topics(["m.a", "m.b"], "given", [], [])
    assert _to_join(given, {"m.a": "Ada"}, "") == {"m.a": "Ada", "m.b": "m.b"}


def test_the_topic_the_first_reading_chose_is_read_with_the_others_and_its_namesakes_leave():
    from kgdb.reading.topics import with_the_first_topic

    found = _of(
        LinkedEntity("m.jfk", "John F. Kennedy", 3.66, "jfk"),  # its name is not its mention
        LinkedEntity("m.la", "Los Angeles", 3.07, "los angeles"),
        LinkedEntity("m.lad", "Los Angeles Dodgers", 2.76, "los angeles"),
    )
    several = _to_join(found, {}, "who was jfk's brother who died in los angeles?")
    assert several == {"m.la": "Los Angeles"}
    first = Topics(["m.jfk"], "linked", found.linked, [])
    assert with_the_first_topic(several, first, found) == {"m.jfk": "John F. Kennedy", "m.la": "Los Angeles"}
    namesake = Topics(["m.lad"], "linked", found.linked, [])  # read first: Los Angeles is the same words
    assert with_the_first_topic(several, namesake, found) == {"m.lad": "Los Angeles Dodgers"}
    assert with_the_first_topic(several, Topics(["m.la"], "linked", found.linked, []), found) == several
    given = Topics(["m.jfk"], "given", [], [])
    assert with_the_first_topic({"m.la": "Los Angeles"}, given, given) == {"m.la": "Los Angeles"}


def test_a_second_name_linked_well_below_the_first_is_read_when_its_mention_has_several_words():
    # further below the best than the namesakes that compete to be the one topic
    films = _of(
        LinkedEntity("m.tl", "Taylor Lautner", 3.45, "taylor lautner"),
        LinkedEntity("m.ds", "David Slade", 3.08, "david slade"),
        LinkedEntity("m.sp", "David Spade", 2.69, "david slade"),  # the same words: not another topic
    )
    assert _to_join(films, {}, "") == {"m.tl": "Taylor Lautner", "m.ds": "David Slade"}
    # as far below, a one-word mention is most often the question's wording ("what kind of monarchy ...")
    kind = _of(LinkedEntity("m.jp", "Japan", 3.3, "japan"), LinkedEntity("m.mon", "Monarchy", 2.9, "monarchy"))
    assert list(_to_join(kind, {}, "")) == ["m.jp"]
    # within the namesakes' margin it is read
    near = _of(LinkedEntity("m.jp", "Japan", 3.3, "japan"), LinkedEntity("m.mon", "Monarchy", 3.1, "monarchy"))
    assert list(_to_join(near, {}, "")) == ["m.jp", "m.mon"]


def test_a_one_word_name_written_with_a_capital_is_read_however_far_below():
    grodno = _of(
        LinkedEntity("m.ee", "Eastern Europe", 3.39, "eastern europe"),
        LinkedEntity("m.eu", "Europe", 3.10, "europe"),  # inside the first mention: no topic of its own
        LinkedEntity("m.gr", "Grodno", 2.98, "grodno"),
    )
    question = "Of the countries that are in eastern Europe, which has a country capital of Grodno?"
    assert _to_join(grodno, {}, question) == {"m.ee": "Eastern Europe", "m.gr": "Grodno"}
    assert list(_to_join(grodno, {}, question.lower())) == ["m.ee"]  # lower case: the word rule as before
    # the question's first word is capitalised whatever it is
    kind = _of(LinkedEntity("m.jp", "Japan", 3.3, "japan"), LinkedEntity("m.mon", "Monarchy", 2.9, "monarchy"))
    assert list(_to_join(kind, {}, "Monarchy of what kind does Japan have?")) == ["m.jp"]


def test_the_kind_of_thing_asked_for_is_no_topic_to_read_from():
    found = _of(
        LinkedEntity("m.pol", "Politician", 3.1, "politician"),
        LinkedEntity("m.vb", "Siege of Vicksburg", 2.97, "vicksburg"),
        LinkedEntity("m.tz", "Central Time Zone", 2.9, "time zone"),
    )
    question = "Which politician who fought in the Battle of Vicksburg entered office first?"
    assert list(_to_join(found, {}, question)) == ["m.vb", "m.tz"]
    assert list(_to_join(found, {}, "What time zone is Vicksburg in, politician?")) == ["m.pol", "m.vb"]
    # written as a name, the word after "what" is a thing the question names ("What German movie …")
    assert list(_to_join(found, {}, "Which Politician fought at Vicksburg?")) == ["m.pol", "m.vb", "m.tz"]


def test_a_misspelt_name_of_several_words_is_read_and_a_loose_match_is_not():
    films = _of(
        LinkedEntity("m.ts", "Taylor Swift", 3.29, "taylor swift"),
        LinkedEntity("m.kf", "Katherine Fugate", 3.02, "katerine fugate"),
    )
    assert _to_join(films, {}, "") == {"m.ts": "Taylor Swift", "m.kf": "Katherine Fugate"}
    far = _of(
        LinkedEntity("m.tl", "Taylor Lautner", 3.45, "taylor lautner"),
        LinkedEntity("m.ll", "Long Live", 2.9, "song love"),
    )
    assert list(_to_join(far, {}, "")) == ["m.tl"]  # every word one letter off, the whole not close


def test_capitalised_words_are_those_after_the_first_written_with_a_capital():
    from kgdb.reading.words import capitalised

    assert capitalised("What film with character named Ricky has Charlie Hunnam's brother been in?") == {
        "ricky",
        "charlie",
        "hunnam",
    }
    assert capitalised('what did "Toolbox" feature?') == {"toolbox"}
    assert capitalised("where was the wife of barack obama born?") == set()
    assert capitalised("WHERE WAS THE WIFE OF BARACK OBAMA BORN?") == set()  # capitals throughout mark nothing
    assert capitalised("Where Was The Wife Of Barack Obama Born?") == set()


def test_of_two_second_names_on_the_same_words_the_longer_mention_is_read():
    series = _of(
        LinkedEntity("m.rh", "Ron Howard", 3.49, "ron howard"),
        LinkedEntity("m.ag", "American Graffiti", 3.20, "american graffiti"),
        # its mention holds the film's words and one more, in the order the name has them
        LinkedEntity("m.ags", "American Graffiti film series", 3.04, "american graffiti series"),
    )
    question = 'What movie did Ron Howard do that was part of the "American Graffiti" series?'
    assert _to_join(series, {}, question) == {"m.rh": "Ron Howard", "m.ags": "American Graffiti film series"}
    # a shorter mention inside a picked one stays out, as before
    inside = _of(
        LinkedEntity("m.ne", "1815 New England hurricane", 3.3, "1815 new england"),
        LinkedEntity("m.ng", "New England", 3.2, "new england"),
    )
    assert list(_to_join(inside, {}, "")) == ["m.ne"]


def test_a_mention_that_names_several_entities_as_well_is_no_second_topic():
    series = _of(
        LinkedEntity("m.bn", "Bill Neukom", 3.16, "bill neukom"),
        LinkedEntity("m.ws10", "2010 World Series", 2.71, "world series"),
        LinkedEntity("m.ws", "World Series", 2.68, "world series"),  # linked as high: "world series" names neither
    )
    question = "When did owner Bill Neukom's sports team last win the world series?"
    assert list(_to_join(series, {}, question)) == ["m.bn"]
    # a namesake linked well below leaves the mention to the first ("Germany", not "East Germany")
    wars = _of(
        LinkedEntity("m.fr", "France", 3.12, "france"),
        LinkedEntity("m.de", "Germany", 3.04, "germany"),
        LinkedEntity("m.ede", "East Germany", 2.51, "germany"),
    )
    assert list(
        _to_join(wars, {}, "Which war has France been involved in, where one of the combatants was Germany?")
    ) == ["m.fr", "m.de"]


def test_the_readings_of_one_question_rank_each_reading_once_and_other_threads_share_nothing():
    planner, calls = _planner({"time": 0.0, "new york knicks": 30.0})
    reading = read_question("when was the last time the knicks won the championship?")
    found = _linked(("time", 1.46, "time"), ("new york knicks", 1.2, "knicks"))
    alone = Topics(["new york knicks"], "given", [], [])
    with planner.question():
        first = planner.plan(None, reading, found, {})
        again = planner.plan(None, reading, alone, {"new york knicks": "New York Knicks"})
        assert [t for _, t in calls] == [("time",), ("new york knicks",)]  # the topic alone: ranked already
        assert again.paths == first.paths
        elsewhere = threading.Thread(
            target=planner.plan, args=(None, reading, alone, {"new york knicks": "New York Knicks"})
        )
        elsewhere.start()
        elsewhere.join()
        assert [t for _, t in calls][2:] == [("new york knicks",)]  # another thread's question is its own
    planner.plan(None, reading, alone, {"new york knicks": "New York Knicks"})
    assert len(calls) == 4  # outside the block each plan ranks its own readings
