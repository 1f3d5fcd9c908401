"""Lazy entity embeddings on a real Neo4j: a lazy load embeds relations only, retrieval and linking
fill exactly the vectors they touch (written once: a rerun writes none), lazy and eager graphs
score identically, `kgdb embed [--all]` fills the rest resumably, and the table cache never serves
a zero row for an entity that has a vector by now."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from kgdb.cli import app
from kgdb.cypher.linking import link_entities
from kgdb.cypher.schema import counts
from kgdb.cypher.tables import UNKNOWN, graph_fingerprint, open_tables
from kgdb.embeddings import get_embedder
from kgdb.loaders.writer import write_graph
from kgdb.pipeline import RetrievePipeline
from kgdb.pipeline.vectors import entity_vectors
from kgdb.reading import read_question
from support.graphs import wipe

pytestmark = pytest.mark.usefixtures("one_thread")

TRIPLES = [
    ("Jamaica", "location.country.official_language", "Jamaican English"),
    ("Jamaica", "location.country.languages_spoken", "Jamaican Creole English Language"),
    ("Jamaica", "location.country.capital", "Kingston"),
    ("Jamaica", "location.location.containedby", "Caribbean"),
    ("Kingston", "location.location.containedby", "Jamaica"),
    ("Kingston", "location.citytown.postal_codes", "m.0abc1"),
    ("m.0abc1", "location.postal_code.country", "Jamaica"),
    ("Kingston", "location.location.founded", "1692"),
    ("Usain Bolt", "people.person.nationality", "Jamaica"),
    ("Usain Bolt", "people.person.place_of_birth", "Sherwood Content"),
    ("Sherwood Content", "location.location.containedby", "Trelawny Parish"),
    ("France", "location.country.capital", "Paris"),
    ("France", "location.country.official_language", "French"),
    ("Paris", "location.location.containedby", "France"),
    ("Emmanuel Macron", "people.person.nationality", "France"),
    ("Emmanuel Macron", "people.person.place_of_birth", "Amiens"),
]
QUESTIONS = [
    ("what language do people in jamaica speak?", ["Jamaica"]),
    ("where was usain bolt born?", ["Usain Bolt"]),
    ("what is the capital of france?", ["France"]),
]


def _settings(graph, tmp_path, name="cache"):
    return graph.settings.with_overrides(
        cache_dir=tmp_path / name, checkpoints_dir=tmp_path / "ckpt", runs_dir=tmp_path / "runs"
    )


def _with_vector(graph) -> set[str]:
    return {r["id"] for r in graph.run_text("MATCH (e:Entity) WHERE e.embedding IS NOT NULL RETURN e.id AS id")}


def _named(graph) -> set[str]:
    return {r["id"] for r in graph.run_text("MATCH (e:Entity) WHERE NOT e:CVT RETURN e.id AS id")}


def test_lazy_load_embeds_relations_only(graph):
    stats = write_graph(graph, TRIPLES, embedder=get_embedder(), embeddings="lazy")
    c = counts(graph)
    assert stats.embeddings == "lazy" and stats.entity_embeddings == 0 == c["entity_embeddings"]
    assert stats.entity_embeddings_left == len(_named(graph)) == c["entities"] - c["cvt"]
    assert stats.relation_embeddings == c["relations"] == c["relation_embeddings"] == len({r for _, r, _ in TRIPLES})
    # auto on a graph this small is eager, and the fingerprint is the lazy graph's: vectors do not change it
    before = graph_fingerprint(graph)[0]
    stats = write_graph(graph, TRIPLES, embedder=get_embedder(), embeddings="auto")
    assert (
        stats.embeddings == "eager"
        and stats.entity_embeddings == len(_named(graph)) == counts(graph)["entity_embeddings"]
    )
    assert graph_fingerprint(graph)[0] == before


def test_retrieval_fills_exactly_the_missing_vectors_it_fetches_and_a_rerun_writes_none(graph, tmp_path):
    write_graph(graph, TRIPLES, embedder=get_embedder(), embeddings="lazy")
    fingerprint = graph_fingerprint(graph)[0]
    pipe = RetrievePipeline(graph, _settings(graph, tmp_path), "cosine", k=5, write=False)
    res = pipe.retrieve("where was usain bolt born?", ["Usain Bolt"])
    sg = res.subgraph
    fetched = {e for e, cvt in zip(sg.entity_ids, sg.is_cvt) if not cvt}
    assert fetched and fetched < _named(graph)  # the question touches part of the graph
    assert _with_vector(graph) == fetched  # exactly the fetched named entities, nothing else
    assert pipe.vectors.filled == len(fetched)
    assert pipe.vectors.tables.cached_rows() == sg.num_nodes  # the local table holds the touched rows only
    assert graph_fingerprint(graph)[0] == fingerprint  # checkpoints and caches still match
    # the same question again, in this pipeline, a new one and one with an empty cache: nothing written
    assert np.array_equal(pipe.retrieve("where was usain bolt born?", ["Usain Bolt"]).scores, res.scores)
    assert pipe.vectors.filled == len(fetched)
    for cache in ("cache", "fresh-cache"):
        again = RetrievePipeline(graph, _settings(graph, tmp_path, cache), "cosine", k=5, write=False)
        assert np.array_equal(again.retrieve("where was usain bolt born?", ["Usain Bolt"]).scores, res.scores)
        assert again.vectors.filled == 0
    assert _with_vector(graph) == fetched


def _scores(graph, tmp_path, name):
    pipe = RetrievePipeline(graph, _settings(graph, tmp_path, name), "cosine", k=100, write=False)
    out = []
    for question, topics in QUESTIONS:
        r = pipe.retrieve(question, topics)
        out.append(([t.relation for t in r.top], [(t.head_id, t.tail_id) for t in r.top], r.scores))
    linked = link_entities(
        graph,
        read_question("what does jamaican people speak?"),
        get_embedder().encode_one("what does jamaican people speak?"),
        k=5,
        entity_vectors=pipe.vectors.vectors,
    )
    return out, [(e.id, e.score) for e in linked]


def test_lazy_and_eager_graphs_score_identically(graph, tmp_path):
    write_graph(graph, TRIPLES, embedder=get_embedder(), embeddings="eager")
    eager, eager_links = _scores(graph, tmp_path, "eager")
    wipe(graph)
    write_graph(graph, TRIPLES, embedder=get_embedder(), embeddings="lazy")
    assert counts(graph)["entity_embeddings"] == 0
    lazy, lazy_links = _scores(graph, tmp_path, "lazy")
    for (rels_e, ids_e, s_e), (rels_l, ids_l, s_l) in zip(eager, lazy):
        assert rels_e == rels_l and ids_e == ids_l  # same ranking
        assert np.allclose(s_e, s_l, atol=1e-5)  # same scores (one encoder rule; float noise only)
    # linking: candidates without a vector get it on use, so the ranking and scores are eager's
    assert [i for i, _ in lazy_links] == [i for i, _ in eager_links]
    assert np.allclose([s for _, s in lazy_links], [s for _, s in eager_links], atol=1e-5)


def test_table_cache_never_serves_a_zero_row_for_an_entity_that_has_a_vector_now(graph, tmp_path):
    write_graph(graph, TRIPLES, embedder=get_embedder(), embeddings="lazy")
    idx = graph.run_text("MATCH (e:Entity {id: 'Kingston'}) RETURN e.idx AS idx")[0]["idx"]
    tables = open_tables(graph, tmp_path)
    missing = tables.read([idx])
    assert missing.idx == [idx] and missing.text == ["Kingston"] and tables._state[idx] == UNKNOWN
    assert not tables.entity_rows([idx]).any()
    # another writer (here `kgdb embed --all`'s code path) stores the vector meanwhile
    from kgdb.loaders.writer import embed_missing

    assert embed_missing(graph, get_embedder(), kinds=("entity",))["entity"] == len(_named(graph))
    assert not len(tables.read([idx]))
    stored = graph.run_text("MATCH (e:Entity {id: 'Kingston'}) RETURN e.embedding AS v")[0]["v"]
    assert tables.entity_rows([idx])[0] == pytest.approx(stored, abs=1e-6)
    vectors, _ = entity_vectors(graph, _settings(graph, tmp_path, "other"))
    assert vectors.rows([idx])[0] == pytest.approx(stored, abs=1e-6) and vectors.filled == 0


def _cli(graph, *args):
    env = {
        "KGDB_NEO4J_URI": graph.settings.neo4j_uri,
        "KGDB_NEO4J_USER": graph.settings.neo4j_user,
        "KGDB_NEO4J_PASSWORD": graph.settings.neo4j_password.get_secret_value(),
        "COLUMNS": "400",
    }
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def test_kgdb_embed_fills_question_neighbourhoods_then_all_and_a_rerun_writes_zero(graph, tmp_path):
    triples = tmp_path / "kg.tsv"
    triples.write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in TRIPLES), encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps(
            {
                "id": "Q1",
                "question": "where was usain bolt born?",
                "q_entity": ["Usain Bolt"],
                "a_entity": ["Sherwood Content"],
                "answer": ["Sherwood Content"],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    out = _cli(graph, "load", "freebase-subset", str(triples), "--embeddings", "lazy")
    assert "embedded lazily" in out and f"{len(_named(graph))} names have no vector yet" in out
    assert (
        counts(graph)["entity_embeddings"] == 0 and counts(graph)["relation_embeddings"] == counts(graph)["relations"]
    )
    _cli(graph, "load", "questions", str(questions))
    out = _cli(graph, "embed")  # the topic and its direct neighbours
    assert _with_vector(graph) == {"Usain Bolt", "Jamaica", "Sherwood Content"}
    assert "wrote 3 entity vectors and 0 relation vectors" in out
    out = _cli(graph, "embed", "--all")
    rest = len(_named(graph)) - 3
    assert f"wrote {rest} entity vectors" in out and "0 entity names still without a vector" in out
    assert _with_vector(graph) == _named(graph) and counts(graph)["entity_embeddings"] == len(_named(graph))
    assert "wrote 0 entity vectors and 0 relation vectors" in _cli(graph, "embed", "--all")
