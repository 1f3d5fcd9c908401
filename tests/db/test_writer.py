"""write_graph on a real Neo4j: the data model, idempotency, exact resume after an interruption
in any phase, loads that overlap existing data, and injection-shaped names stored verbatim."""

from __future__ import annotations

import numpy as np
import pytest

from kgdb.cypher.schema import counts
from kgdb.embeddings import get_embedder
from kgdb.errors import InputError
from kgdb.loaders.writer import write_graph
from support.graphs import snapshot
from support.obama import TRIPLES


class Interrupt(Exception):
    pass


def interrupt_after(phase: str, calls: int):
    """A progress callback that stops the load after `calls` progress reports of `phase`."""
    seen = {"n": 0}

    def progress(p: str, done: int, total: int) -> None:
        if p == phase:
            seen["n"] += 1
            if seen["n"] > calls:
                raise Interrupt(f"stopped in {phase} at {done}/{total}")

    return progress


def test_data_model(graph):
    stats = write_graph(graph, TRIPLES + TRIPLES[:3])
    assert stats.triples_in == len(TRIPLES) and stats.triples_created == len(TRIPLES)
    snap = snapshot(graph)
    assert snap["counts"]["triples"] == len(TRIPLES)
    ids = {n["id"]: n for n in snap["nodes"]}
    assert ids["m.0kgdb_marriage"]["labels"] == ["CVT", "Entity"]
    assert ids["1961-08-04"]["labels"] == ["Entity", "Literal"]
    assert ids["Honolulu"]["labels"] == ["Entity"] and ids["Honolulu"]["name"] == "Honolulu"
    # idx: dense 0..N-1 in id order
    assert [n["idx"] for n in snap["nodes"]] == list(range(len(snap["nodes"])))
    assert [r["idx"] for r in snap["relations"]] == list(range(len(snap["relations"])))
    pair = [r["r"] for r in snap["rels"] if r["h"] == "Washington, D.C." and r["t"] == "United States of America"]
    assert pair == ["base.capital.of", "location.location.containedby"]


def test_names_from_a_names_file(graph):
    write_graph(
        graph,
        [("m.02mjmr", "people.person.place_of_birth", "m.02hrh0_"), ("m.02mjmr", "r.x.y", "m.0abc")],
        names={"m.02mjmr": "Barack Obama", "m.02hrh0_": "Honolulu"},
    )
    rows = {r["id"]: r for r in graph.run_text("MATCH (e:Entity) RETURN e.id AS id, e.name AS name, labels(e) AS l")}
    assert rows["m.02mjmr"]["name"] == "Barack Obama" and "CVT" not in rows["m.02mjmr"]["l"]
    assert rows["m.0abc"]["name"] == "m.0abc" and "CVT" in rows["m.0abc"]["l"]


def test_loading_twice_leaves_identical_counts(graph):
    embedder = get_embedder()
    write_graph(graph, TRIPLES, embedder=embedder)
    first = snapshot(graph)
    stats = write_graph(graph, TRIPLES, embedder=embedder)
    assert stats.triples_created == 0 and stats.triples_existing == len(TRIPLES)
    assert stats.entity_embeddings == 0
    assert snapshot(graph) == first


@pytest.mark.parametrize("phase, calls", [("entities", 2), ("triples", 2), ("triples", 4), ("entity embeddings", 1)])
def test_resume_after_interruption_equals_a_clean_load(graph, phase, calls):
    embedder = get_embedder()
    write_graph(graph, TRIPLES, embedder=embedder, batch_size=3)
    clean = snapshot(graph)
    graph.run_text("MATCH (n) DETACH DELETE n")
    with pytest.raises(Interrupt):
        write_graph(graph, TRIPLES, embedder=embedder, batch_size=3, progress=interrupt_after(phase, calls))
    assert snapshot(graph) != clean
    write_graph(graph, TRIPLES, embedder=embedder, batch_size=3)
    assert snapshot(graph) == clean


def test_overlapping_loads_add_only_what_is_missing(graph):
    write_graph(graph, TRIPLES[:10], batch_size=4)
    extra = [("Hawaii", "location.location.containedby", "Pacific Ocean"), ("Chicago", "base.capital.of", "Illinois")]
    stats = write_graph(graph, TRIPLES[5:] + extra, batch_size=4)
    assert stats.triples_existing == 5 and stats.triples_created == len(TRIPLES) - 10 + 2
    assert counts(graph)["triples"] == len(TRIPLES) + 2
    # new entities continue the dense idx
    idx = [r["idx"] for r in graph.run_text("MATCH (e:Entity) RETURN e.idx AS idx ORDER BY idx")]
    assert idx == list(range(len(idx)))


def test_embeddings_are_unit_vectors_in_the_vector_index(graph):
    embedder = get_embedder()
    stats = write_graph(graph, TRIPLES, embedder=embedder)
    n_named = counts(graph)["entities"] - counts(graph)["cvt"]
    assert stats.entity_embeddings == n_named == counts(graph)["entity_embeddings"]
    row = graph.run_text("MATCH (e:Entity {id: 'Honolulu'}) RETURN e.embedding AS v")[0]
    assert np.allclose(np.asarray(row["v"]), embedder.encode_one("Honolulu"), atol=1e-5)
    hits = graph.run_text(
        "CALL db.index.vector.queryNodes('entity_embedding', 1, $q) YIELD node RETURN node.id AS id",
        q=embedder.encode_one("Honolulu").tolist(),
    )
    assert hits == [{"id": "Honolulu"}]


def test_injection_shaped_names_are_stored_verbatim(graph):
    nasty = [
        ("Quote 'single' and \"double\"", "people.person.place_of_birth", "Back`tick`town"),
        ("}) DETACH DELETE n //", "people.person.nationality", "MATCH (n) DETACH DELETE n"),
        ("line one\nline two", "weird`type}) DELETE r //", "$param {x: 1}"),
        ("\\backslash\\", "people.person.nationality", "Back`tick`town"),
    ]
    write_graph(graph, nasty)
    rels = {(r["h"], r["r"], r["t"]) for r in snapshot(graph)["rels"]}
    assert rels == set(nasty)
    assert {r["name"] for r in graph.run_text("MATCH (e:Entity) RETURN e.name AS name")} == {
        x for h, _, t in nasty for x in (h, t)
    }


def test_reserved_relation_names_are_refused(graph):
    with pytest.raises(InputError, match="reserved"):
        write_graph(graph, [("a", "SCORED", "b")])
