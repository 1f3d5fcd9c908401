import numpy as np
import pytest

from kgdb.cypher.linking import link_entities, mentions, resolve_topics
from kgdb.cypher.tables import load_tables
from kgdb.embeddings import get_embedder
from kgdb.errors import KgdbError
from kgdb_graphs import load

PEOPLE = [
    ("Barack Obama", "people.person.place_of_birth", "Honolulu"),
    ("Barack Obama", "people.person.spouse", "Michelle Obama"),
    ("Barack Obama Sr.", "people.person.children", "Barack Obama"),
    ("Jamaica", "location.country.languages_spoken", "Jamaican English"),
    ("Jamaica", "location.country.capital", "Kingston"),
    ("m.0abc12", "government.government_position_held.office_holder", "Barack Obama"),
]


def test_mentions_skip_stopword_edges():
    assert mentions("where was barack obama born?")[:3] == ["barack obama", "barack", "obama"]
    assert "where" not in mentions("where was barack obama born?")


def test_link_exact_and_fuzzy(graph):
    load(graph, PEOPLE)
    emb = get_embedder()
    q = "where was barack obama born?"
    linked = link_entities(graph, q, emb.encode_one(q), k=3)
    assert linked[0].id == "Barack Obama" and linked[0].mention == "barack obama"
    assert linked == link_entities(graph, q, emb.encode_one(q), k=3)  # deterministic
    q = "what does jamaican people speak?"  # fuzzy: jamaican ~ Jamaica
    linked = link_entities(graph, q, emb.encode_one(q), k=5)
    assert "Jamaica" in [e.id for e in linked[:2]]
    # CVT ids are never linking candidates
    assert all(not e.id.startswith("m.") for e in link_entities(graph, "m.0abc12", emb.encode_one("m.0abc12"), k=10))


def test_resolve_topics_by_name_id_and_mid(graph):
    load(graph, PEOPLE)
    assert resolve_topics(graph, ["Barack Obama"]) == ["Barack Obama"]
    assert resolve_topics(graph, ["barack obama", "/m/0abc12", "m.0abc12"]) == ["Barack Obama", "m.0abc12"]
    with pytest.raises(KgdbError, match="Nobody Here"):
        resolve_topics(graph, ["Jamaica", "Nobody Here"])


def test_tables_cached_by_fingerprint(graph, tmp_path):
    load(graph, PEOPLE)
    tables = load_tables(graph, tmp_path)
    n = graph.single("counts")["entities"]
    assert tables.entity.shape == (n, get_embedder().dim)
    assert tables.relation_names == sorted({t[1] for t in PEOPLE}) and tables.relation.shape[0] == 6
    cvt = graph.run_text("MATCH (e:CVT) RETURN e.idx AS idx")[0]["idx"]
    assert not tables.entity[cvt].any() and not tables.has_entity_embedding[cvt]
    row = graph.run_text("MATCH (e:Entity {id: 'Jamaica'}) RETURN e.idx AS idx, e.embedding AS v")[0]
    assert tables.entity[row["idx"]] == pytest.approx(row["v"], abs=1e-6)
    assert list((tmp_path / "tables").glob("*.npz"))
    # a second call reads the file, not Neo4j: mark the cached table and see the mark come back
    path = next((tmp_path / "tables").glob("*.npz"))
    np.savez(path, entity=tables.entity + 1, relation=tables.relation,
             relation_names=np.asarray(tables.relation_names), has_entity_embedding=tables.has_entity_embedding)
    again = load_tables(graph, tmp_path)
    assert again.fingerprint == tables.fingerprint and (again.entity == tables.entity + 1).all()
    # a changed graph gets a new fingerprint (and table)
    load(graph, PEOPLE + [("Jamaica", "location.country.currency_used", "Jamaican dollar")])
    changed = load_tables(graph, tmp_path)
    assert changed.fingerprint != tables.fingerprint and changed.entity.shape[0] == n + 1
