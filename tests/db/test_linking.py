import numpy as np
import pytest

from kgdb.cypher.linking import NoTopicError, link_entities, question_topics, resolve_topics
from kgdb.cypher.tables import HAVE, NONE, fingerprint_read_once, graph_fingerprint, open_tables
from kgdb.embeddings import get_embedder
from kgdb.errors import KgdbError
from kgdb.reading import read_question
from support.graphs import load

PEOPLE = [
    ("Barack Obama", "people.person.place_of_birth", "Honolulu"),
    ("Barack Obama", "people.person.spouse", "Michelle Obama"),
    ("Barack Obama Sr.", "people.person.children", "Barack Obama"),
    ("Jamaica", "location.country.languages_spoken", "Jamaican English"),
    ("Jamaica", "location.country.capital", "Kingston"),
    ("m.0abc12", "government.government_position_held.office_holder", "Barack Obama"),
]


def test_a_spelt_out_name_is_linked_from_its_abbreviation(graph):
    # "St Nicholas Day" holds the question's words as written; "Saint Nicholas" is the one it names
    facts = [
        ("people.person.place_of_birth", "Patara"),
        ("people.person.profession", "Bishop"),
        ("people.deceased_person.place_of_death", "Myra"),
        ("people.person.religion", "Christianity"),
        ("base.saints.saint.venerated_in", "Catholicism"),
        ("base.saints.saint.venerated_in", "Eastern Orthodoxy"),
        ("base.saints.saint.patron_of", "Sailors"),
        ("base.saints.saint.patron_of", "Children"),
        ("base.saints.saint.feast_day", "December 6"),
    ]
    load(
        graph,
        [("Saint Nicholas", r, t) for r, t in facts]
        + [("St Nicholas Day", "time.holiday.featured_in_religions", "Christianity")],
    )
    emb = get_embedder()
    q = "what did st. nicholas do in his life?"
    linked = link_entities(graph, read_question(q), emb.encode_one(q), k=3)
    assert linked[0].id == "Saint Nicholas" and linked[0].mention == "st nicholas"
    assert "St Nicholas Day" in [e.id for e in linked]  # the name as written stays a candidate
    q = "what did nick do in his life?"  # no spelt-out reading without the abbreviation
    assert all(
        e.mention is None
        for e in link_entities(graph, read_question(q), emb.encode_one(q), k=3)
        if e.id == "Saint Nicholas"
    )


def test_a_demonym_links_the_country_and_a_spoken_one_the_language(graph):
    # "Egyptian Arabic" holds the question's word; "Egypt" is what "egyptians" are the people of
    load(
        graph,
        [
            ("Egypt", "location.country.languages_spoken", "Egyptian Arabic"),
            ("Egypt", "location.country.currency_used", "Egyptian pound"),
            ("Egypt", "location.country.capital", "Cairo"),
            ("Sudan", "location.country.languages_spoken", "Egyptian Arabic"),
        ],
    )
    emb = get_embedder()
    for q in ("what language do egyptians speak?", "what language does egyptian people speak?"):
        assert link_entities(graph, read_question(q), emb.encode_one(q), k=3)[0].id == "Egypt", q
    q = "where do they speak egyptian?"  # after a verb of speaking the word is the language
    linked = link_entities(graph, read_question(q), emb.encode_one(q), k=3)
    assert linked[0].id == "Egyptian Arabic" and all(e.mention is None for e in linked if e.id == "Egypt")
    q = "what is the capital of egypt?"  # the country named itself is unchanged
    assert link_entities(graph, read_question(q), emb.encode_one(q), k=3)[0].id == "Egypt"


def test_an_abbreviation_links_the_name_it_abbreviates(graph):
    # the graph holds no alias "nra": the embedding model puts the mention near the name, whose initials it is
    load(
        graph,
        [
            ("National Rifle Association", "organization.organization.headquarters", "Fairfax"),
            ("National Rifle Association", "organization.organization.founders", "William Conant Church"),
            ("NRA Foundation Golf", "common.topic.notable_types", "Topic"),
            ("Fairfax", "location.location.containedby", "Virginia"),
        ],
    )
    emb = get_embedder()
    q = "where is the nra headquarters located?"
    assert (
        link_entities(graph, read_question(q), emb.encode_one(q), k=3, encode=emb.encode)[0].id
        == "National Rifle Association"
    )
    # without an encoder short mentions are read as written
    assert link_entities(graph, read_question(q), emb.encode_one(q), k=3)[0].id == "NRA Foundation Golf"
    # after another word of a name a short word qualifies it: the town, not the state, is asked about
    load(
        graph,
        [("St. Pauls", "location.location.containedby", "Robeson County")]
        + [("North Carolina", "location.location.contains", f"Place {i}") for i in range(30)],
    )
    q = "what county is st pauls nc in?"
    assert link_entities(graph, read_question(q), emb.encode_one(q), k=3, encode=emb.encode)[0].id == "St. Pauls"


def test_a_numbered_abbreviation_links_the_name_with_its_number(graph):
    load(
        graph,
        [
            ("World War II", "time.event.locations", "Europe"),
            ("World War I", "time.event.locations", "Europe"),
            ("Franklin D. Roosevelt", "military.military_commander.military_commands", "World War II"),
        ],
    )
    emb = get_embedder()
    for q in ("Who was president during WW2?", "Who was president during WWII?", "who was president during ww2?"):
        linked = link_entities(graph, read_question(q), emb.encode_one(q), k=3, encode=emb.encode)
        assert linked[0].id == "World War II", q
        assert all(e.id != "World War I" or e.mention != linked[0].mention for e in linked), q
    q = "Who was president during WW1?"
    assert link_entities(graph, read_question(q), emb.encode_one(q), k=3, encode=emb.encode)[0].id == "World War I"
    # Roman numerals are read as a number only where the question writes them in capitals
    q = "who was president during wwii?"
    assert all(
        e.mention != "wwii" for e in link_entities(graph, read_question(q), emb.encode_one(q), k=3, encode=emb.encode)
    )


def test_a_name_the_question_writes_whole_is_linked_whole(graph):
    # the title's first and last words never start or end a mention: it is found by "lovely" alone
    anthems = [
        (f"National Anthem of {c}", "government.national_anthem_of_a_country.country", c) for c in ("Chile", "Russia")
    ]
    load(
        graph,
        anthems
        + [
            ("There is a Lovely Country", "music.composition.language", "Danish Language"),
            ("Denmark", "government.national_anthem.national_anthem_of", "There is a Lovely Country"),
        ],
    )
    emb = get_embedder()
    q = "What languages are used in the country with national anthem There is a Lovely Country?"
    linked = link_entities(graph, read_question(q), emb.encode_one(q), k=3)
    assert (linked[0].id, linked[0].mention) == ("There is a Lovely Country", "there is a lovely country")
    q = "What languages are used in the country with a lovely national anthem?"  # not written whole
    linked = link_entities(graph, read_question(q), emb.encode_one(q), k=5)
    assert all(e.mention != "there is a lovely country" for e in linked)


def test_link_exact_and_fuzzy(kept_graph):
    graph = kept_graph(PEOPLE)
    emb = get_embedder()
    q = "where was barack obama born?"
    linked = link_entities(graph, read_question(q), emb.encode_one(q), k=3)
    assert linked[0].id == "Barack Obama" and linked[0].mention == "barack obama"
    assert linked == link_entities(graph, read_question(q), emb.encode_one(q), k=3)  # deterministic
    q = "who is barack obama's wife?"
    linked = link_entities(graph, read_question(q), emb.encode_one(q), k=3)
    assert linked[0].id == "Barack Obama" and linked[0].mention == "barack obama"
    q = "what does jamaican people speak?"  # fuzzy: jamaican ~ Jamaica
    linked = link_entities(graph, read_question(q), emb.encode_one(q), k=5)
    assert "Jamaica" in [e.id for e in linked[:2]]
    # CVT ids are never linking candidates
    assert all(
        not e.id.startswith("m.")
        for e in link_entities(graph, read_question("m.0abc12"), emb.encode_one("m.0abc12"), k=10)
    )


def test_a_name_given_in_full_beats_a_popular_namesake_of_part_of_it(graph):
    # "Rarwir" is a hub (degree prior), "Rarwir Non Cvad" is named in full by the question.
    load(
        graph,
        [("Rarwir", "film.film.other_crew", f"Crew {i}") for i in range(300)]
        + [("Rarwir Non Cvad", "film.film.other_crew", "Ko Lor")],
    )
    q = "what is the other crew of Rarwir Non Cvad?"
    linked = link_entities(graph, read_question(q), get_embedder().encode_one(q), k=3)
    assert linked[0].id == "Rarwir Non Cvad" and linked[0].mention == "rarwir non cvad"
    q = "what is the other crew of Rarwir?"  # named alone, the hub is still found
    assert link_entities(graph, read_question(q), get_embedder().encode_one(q), k=3)[0].id == "Rarwir"


def test_the_specific_mention_beats_a_word_many_names_hold(graph):
    # "Colorado" is the hub and the exact name of its mention, but "colorado" is in many names; "greeley"
    # in one: the question names Greeley and says where it is.
    towns = [
        (f"Colorado {w}", "location.location.containedby", "Colorado")
        for w in ("River", "Springs", "Rockies", "Plateau", "Desert", "Avalanche")
    ]
    load(
        graph,
        towns
        + [("Colorado", "location.location.contains", f"Place {i}") for i in range(60)]
        + [
            ("Greeley", "location.location.containedby", "Colorado"),
            ("Greeley", "location.location.containedby", "Weld County"),
        ],
    )
    q = "what county is greeley colorado in?"
    assert link_entities(graph, read_question(q), get_embedder().encode_one(q), k=3)[0].id == "Greeley"
    q = "what is the capital of colorado?"  # named alone, the popular one is still found
    assert link_entities(graph, read_question(q), get_embedder().encode_one(q), k=3)[0].id == "Colorado"


def test_a_well_connected_name_the_text_score_ranks_late_is_a_candidate(graph):
    # twelve shorter names hold "united states", so the full-text score puts them first; the country,
    # the hub, is still a candidate, and the best one
    shorter = [
        (f"United States {w}", "common.topic.notable_types", "Topic")
        for w in (
            "Dollar",
            "Senate",
            "Navy",
            "Army",
            "Congress",
            "Census",
            "Constitution",
            "Mint",
            "Marshal",
            "Open",
            "Cup",
            "Code",
        )
    ]
    load(graph, shorter + [("United States of America", "location.location.contains", f"State {i}") for i in range(40)])
    q = "what is the capital of the united states?"
    linked = link_entities(graph, read_question(q), get_embedder().encode_one(q), k=3)
    assert linked[0].id == "United States of America" and linked[0].mention == "united states"


def test_an_ordinary_word_near_many_names_is_a_weak_match(graph):
    # "come" is one letter from the well-connected "Rome" and from many other names (as ordinary words
    # are in a real graph); the player is named by a mention that matches exactly
    near = [(w, "common.topic.notable_types", "Topic") for w in ("Home", "Dome", "Comet", "Cole", "Cone", "Code")]
    load(
        graph,
        near
        + [("Rome", "location.location.contains", f"Rione {i}") for i in range(50)]
        + [
            ("Novak Djokovic", "people.person.nationality", "Serbia"),
            ("Djokovic Foundation", "organization.organization.founders", "Novak Djokovic"),
        ],
    )
    q = "where did djokovic come from?"
    assert link_entities(graph, read_question(q), get_embedder().encode_one(q), k=3)[0].id == "Novak Djokovic"


def test_resolve_topics_by_name_id_and_mid(kept_graph):
    graph = kept_graph(PEOPLE)
    assert resolve_topics(graph, ["Barack Obama"]) == ["Barack Obama"]
    assert resolve_topics(graph, ["barack obama", "/m/0abc12", "m.0abc12"]) == ["Barack Obama", "m.0abc12"]
    with pytest.raises(KgdbError, match="Nobody Here"):
        resolve_topics(graph, ["Jamaica", "Nobody Here"])


def test_given_topics_the_graph_lacks_give_way_to_the_question_text(kept_graph):
    """A question file written for a fuller graph lists topics this graph lacks: the question is linked
    from its text, and the note names the topics that were not found."""
    graph = kept_graph(PEOPLE)
    encode = get_embedder().encode
    some = question_topics(
        graph, read_question("where was barack obama born?"), None, ["Barack Obama", "Atlantis"], encode=encode
    )
    assert (some.ids, some.source, some.missing) == (["Barack Obama"], "given", ["Atlantis"])
    q = "where was barack obama born?"
    none = question_topics(graph, read_question(q), None, ["Atlantis", "m.0zz999"], encode=encode)
    assert (none.ids[:1], none.source, none.missing) == (["Barack Obama"], "linked", ["Atlantis", "m.0zz999"])
    assert "linked from the question instead" in none.note() and "'Atlantis'" in none.note()
    with pytest.raises(NoTopicError, match="none of the topics 'Atlantis' is an entity of the graph, and no entity"):
        question_topics(graph, read_question("zzqx vvrk?"), None, ["Atlantis"], encode=encode)


def test_tables_cached_by_fingerprint(kept_graph, tmp_path):
    graph = kept_graph(PEOPLE)
    tables = open_tables(graph, tmp_path)
    n = graph.single("counts")["entities"]
    assert tables.num_entities == n and tables.cached_rows() == 0  # nothing is read before a use
    assert tables.relation_names == sorted({t[1] for t in PEOPLE}) and tables.relation.shape[0] == 6
    cvt = graph.run_text("MATCH (e:CVT) RETURN e.idx AS idx")[0]["idx"]
    row = graph.run_text("MATCH (e:Entity {id: 'Jamaica'}) RETURN e.idx AS idx, e.embedding AS v")[0]
    assert not len(tables.read([cvt, row["idx"]]))  # an eager graph has every vector
    assert tables.cached_rows() == 2  # only the rows that use touched
    assert not tables.entity_rows([cvt]).any() and tables._state[cvt] == NONE
    assert (
        tables.entity_rows([row["idx"]])[0] == pytest.approx(row["v"], abs=1e-6) and tables._state[row["idx"]] == HAVE
    )
    folder = tmp_path / "tables" / tables.fingerprint
    assert (folder / "entity.npy").is_file() and (folder / "state.npy").is_file()
    # a second open reads the cached rows, not Neo4j: mark the cached row and see the mark come back
    tables._entity[row["idx"]] += 1
    tables._entity.flush()
    again = open_tables(graph, tmp_path)
    again.read([row["idx"]])
    assert again.fingerprint == tables.fingerprint
    assert again.entity_rows([row["idx"]])[0] == pytest.approx(np.asarray(row["v"]) + 1, abs=1e-6)
    # a changed graph gets a new fingerprint (and table)
    load(graph, PEOPLE + [("Jamaica", "location.country.currency_used", "Jamaican dollar")])
    changed = open_tables(graph, tmp_path)
    assert changed.fingerprint != tables.fingerprint and changed.num_entities == n + 1


def test_the_fingerprint_is_read_once_within_a_block(kept_graph):
    graph = kept_graph(PEOPLE)
    reads = []
    single = graph.single
    graph.single = lambda name, **params: reads.append(name) or single(name, **params)
    outside = graph_fingerprint(graph)
    with fingerprint_read_once(graph):
        assert graph_fingerprint(graph) == outside
        with fingerprint_read_once(graph):  # an inner block reads what the outer one read
            assert graph_fingerprint(graph) == outside
        assert graph_fingerprint(graph) == outside
    assert reads.count("tables_fingerprint") == 2  # once before the block, once in it
    load(graph, PEOPLE + [("Jamaica", "location.country.currency_used", "Jamaican dollar")])
    after_load = graph_fingerprint(graph)
    assert after_load != outside  # after the block every read is fresh
    assert reads.count("tables_fingerprint") == 3
    with fingerprint_read_once(graph):
        assert graph_fingerprint(graph) == after_load
        load(graph, PEOPLE + [("Haiti", "location.country.currency_used", "Haitian gourde")])
        inside = graph_fingerprint(graph)  # a load in the block reads it again, and only once
        assert inside != after_load and graph_fingerprint(graph) == inside
    assert reads.count("tables_fingerprint") == 5
