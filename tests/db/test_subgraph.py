import numpy as np
import pytest

from kgdb.cypher.retrieval import fetch_subgraph
from kgdb.embeddings import get_embedder
from kgdb.errors import KgdbError
from support.graphs import LOU_SEAL

HUB = [("Hub", "people.person.nationality", f"p{i}") for i in range(6)] + [
    ("Hub", "location.country.capital", "Capital"),
    ("Hub", "location.country.languages_spoken", "Language"),
    ("Lou Seal", "sports.mascot.team", "Hub"),
]


def test_hops_both_directions_and_order(kept_graph):
    graph = kept_graph(LOU_SEAL)
    one = fetch_subgraph(graph, ["San Francisco Giants"], None, hops=1)
    # both directions: the mascot triple points *into* the topic
    assert sorted(one.triple(i) for i in range(one.num_triples)) == sorted(
        t for t in LOU_SEAL if "San Francisco Giants" in (t[0], t[2])
    )
    two = fetch_subgraph(graph, ["Lou Seal"], None, hops=2)
    assert two.num_triples == 6  # AT&T Park -> San Francisco is 3 hops away
    three = fetch_subgraph(graph, ["Lou Seal"], None, hops=3)
    assert three.num_triples == 7
    # deterministic: nodes in idx order, triples in (head idx, type, tail idx) order
    assert np.all(np.diff(three.entity_idx) > 0)
    keys = list(zip(three.entity_idx[three.head], three.relation_names, three.entity_idx[three.tail]))
    assert keys == sorted(keys)
    again = fetch_subgraph(graph, ["Lou Seal"], None, hops=3)
    assert again.edge_ids == three.edge_ids and again.entity_ids == three.entity_ids
    assert [three.entity_ids[i] for i in three.topic] == ["Lou Seal"]
    # relation column holds graph-wide Relation.idx
    idx = {r["name"]: r["idx"] for r in graph.run_text("MATCH (r:Relation) RETURN r.name AS name, r.idx AS idx")}
    assert three.relation.tolist() == [idx[n] for n in three.relation_names]


def test_cap_keeps_relations_most_similar_to_question(kept_graph):
    graph = kept_graph(HUB)
    q = get_embedder().encode_one("what is the capital city of the country?")
    full = fetch_subgraph(graph, ["Hub"], q, hops=1, cap=100)
    assert full.num_triples == 9
    capped = fetch_subgraph(graph, ["Hub"], q, hops=1, cap=2)
    assert capped.num_triples == 2
    assert "location.country.capital" in capped.relation_names
    # without a question the rule falls back to relation name, then neighbour idx
    plain = fetch_subgraph(graph, ["Hub"], None, hops=1, cap=2)
    assert plain.relation_names == ["location.country.capital", "location.country.languages_spoken"]


def test_scored_and_bookkeeping_edges_are_not_followed(kept_graph):
    graph = kept_graph(LOU_SEAL)
    graph.run_text(
        "MATCH (a:Entity {id: 'Lou Seal'}), (b:Entity {id: 'AT&T Park'}) "
        "CREATE (a)-[:SCORED {run: 'x', rel: 'r', score: 1.0, rank: 1}]->(b) "
        "CREATE (:Retrieval {run: 'x'})-[:TOPIC]->(a) CREATE (:Question {id: 'q'})-[:ABOUT]->(a)"
    )
    sg = fetch_subgraph(graph, ["Lou Seal"], None, hops=1)
    assert sg.relation_names == ["sports.mascot.team"]


def test_bad_input(kept_graph):
    graph = kept_graph(LOU_SEAL)
    with pytest.raises(KgdbError, match="Nobody"):
        fetch_subgraph(graph, ["Nobody"], None)
    with pytest.raises(KgdbError, match="hops"):
        fetch_subgraph(graph, ["Lou Seal"], None, hops=5)
