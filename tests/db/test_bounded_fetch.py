"""Bounded multi-hop fetches: chunked levels return exactly the unchunked subgraph, a triple budget
truncates the least question-like part first, a server memory limit gives one clear line naming the
settings, and reads route through a `neo4j://` URI."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.cypher.retrieval import fetch_subgraph
from kgdb.cypher.writeback import show_run, write_scores
from kgdb.embeddings import get_embedder
from support import head_start
from support.graphs import load, random_multigraph
from support.spare_servers import base_settings, spare_server


@pytest.mark.parametrize("seed", [21, 22])
def test_chunked_levels_equal_one_transaction_per_level(graph, seed):
    load(graph, random_multigraph(seed, nodes=30, edges=90, relations=4))
    whole = fetch_subgraph(graph, ["n0"], None, hops=3, cap=1000, chunk=10_000)
    chunked = fetch_subgraph(graph, ["n0"], None, hops=3, cap=1000, chunk=1)
    assert sorted(whole.edge_ids) == sorted(chunked.edge_ids) and whole.num_triples > 30
    assert np.array_equal(whole.entity_idx, chunked.entity_idx) and not chunked.meta["truncated"]


def test_triple_budget_keeps_the_most_question_like_frontier(graph):
    # Two branches behind the topic: capitals (asked about) and sports teams (not); the budget
    # allows only part of level 2, which must be the capital branch.
    triples = [("Land", "location.country.capital", f"City {i}") for i in range(5)]
    triples += [("Land", "sports.sports_team.location", f"Team {i}") for i in range(5)]
    triples += [(f"City {i}", "location.location.containedby", f"Region {i}") for i in range(5)]
    triples += [(f"Team {i}", "sports.sports_team.coaches", f"Coach {i}") for i in range(5)]
    load(graph, triples)
    q = get_embedder().encode_one("what is the capital city of land?")
    sg = fetch_subgraph(graph, ["Land"], q, hops=2, cap=100, chunk=1, max_triples=13)
    assert sg.meta["truncated"] and sg.num_triples < len(triples)
    kept = {sg.entity_names[i] for i in np.unique(np.concatenate([sg.head, sg.tail]))}
    # Level 1 holds 10 triples; each city adds 2 (its capital edge again and containedby): 2 cities fit.
    assert {"Region 0", "Region 1"} <= kept and not any(name.startswith("Coach") for name in kept)


def test_a_hub_frontier_stops_at_the_budget_in_one_chunk(graph):
    # Five hub neighbours of 30 leaves each, all in one chunk: the budget is kept per entity (from
    # the degrees the first level returns), so level 2 expands hubs only while the subgraph is below
    # it, the most question-like first, instead of the whole chunk (5 + 5 x 31 triples).
    triples = [("Land", "location.country.capital", f"City {i}") for i in range(2)]
    triples += [("Land", "sports.sports_team.location", f"Team {i}") for i in range(3)]
    triples += [(f"City {i}", "location.location.containedby", f"Region {i}.{j}") for i in range(2) for j in range(30)]
    triples += [(f"Team {i}", "sports.sports_team.coaches", f"Coach {i}.{j}") for i in range(3) for j in range(30)]
    load(graph, triples)
    q = get_embedder().encode_one("what is the capital city of land?")
    whole = fetch_subgraph(graph, ["Land"], q, hops=2, cap=100, chunk=256)
    assert whole.num_triples == len(triples) and not whole.meta["truncated"]
    sg = fetch_subgraph(graph, ["Land"], q, hops=2, cap=100, chunk=256, max_triples=50)
    # Level 1 holds 5 triples, each city adds 31: the second city starts at 36 < 50, a team would start at 67.
    assert sg.meta["truncated"] and sg.meta["budget_reached"] and sg.meta["levels"] == [5, 62] and sg.num_triples == 65
    kept = {sg.entity_names[i] for i in np.unique(np.concatenate([sg.head, sg.tail]))}
    assert {"Region 0.0", "Region 1.29"} <= kept and not any(name.startswith("Coach") for name in kept)
    # Below the budget the capped per-node rule still applies: a cap of 20 keeps 20 triples per hub.
    capped = fetch_subgraph(graph, ["Land"], q, hops=2, cap=20, chunk=256)
    assert capped.meta["levels"] == [5, 5 * 20] and not capped.meta["truncated"]
    # Hubs beyond the first level are bounded too, by the relationships the server scans: each hub has
    # 31, so a scan of 62 expands the two most question-like (the cities) and 61 only one.
    hubs = fetch_subgraph(graph, ["Land"], q, hops=2, cap=20, chunk=256, hub_scan=62)
    assert hubs.meta["levels"] == [5, 2 * 20] and hubs.meta["hubs_skipped"] == 3 and hubs.meta["truncated"]
    assert not hubs.meta["budget_reached"] and not any(name.startswith("Coach") for name in hubs.entity_names)
    one = fetch_subgraph(graph, ["Land"], q, hops=2, cap=20, chunk=256, hub_scan=61)
    assert one.meta["levels"] == [5, 20] and one.meta["hubs_skipped"] == 4


def test_a_fetch_reads_only_the_relation_rows_it_needs(graph):
    # Land is a hub at cap 3 (its 5 triples of 2 types keep the 3 most like the question: the capitals
    # first); the vectors read are those of the types met there and on the way to the next frontier,
    # never the whole relation table, and the film relation of an unconnected pair is never read at all.
    triples = [("Land", "location.country.capital", f"City {i}") for i in range(2)]
    triples += [("Land", "sports.sports_team.location", f"Team {i}") for i in range(3)]
    triples += [(f"City {i}", "location.location.containedby", f"Region {i}") for i in range(2)]
    triples += [("A film", "film.film.directed_by", "A director")]
    load(graph, triples)
    q = get_embedder().encode_one("what is the capital city of land?")
    calls: list[tuple[str, dict]] = []
    run_text = graph.run_text

    def recorded(text, _name="inline", **params):
        calls.append((_name, params))
        return run_text(text, _name=_name, **params)

    graph.run_text = recorded
    sg = fetch_subgraph(graph, ["Land"], q, hops=2, cap=3)
    names = [name for name, _ in calls]
    assert "tables_relations" not in names and "relation_index" in names
    read = {t for name, params in calls if name in ("relation_vectors", "relation_index") for t in params["names"]}
    assert "film.film.directed_by" not in read
    assert {t for name, p in calls if name == "relation_vectors" for t in p["names"]} == {
        "location.country.capital",
        "sports.sports_team.location",
    }
    assert sorted(sg.relation_names)[:2] == ["location.country.capital"] * 2 and sg.meta["levels"][0] == 3
    # a second question reads no relation row again
    calls.clear()
    again = fetch_subgraph(graph, ["Land"], q, hops=2, cap=3)
    assert not {"relation_vectors", "relation_index"} & {name for name, _ in calls}
    assert again.edge_ids == sg.edge_ids


def test_neo4j_routing_uri_reads_and_writes(graph, neo4j_settings: Settings):
    load(graph, random_multigraph(5))
    routed = neo4j_settings.with_overrides(neo4j_uri=neo4j_settings.neo4j_uri.replace("bolt://", "neo4j://"))
    with Graph.connect(routed) as g:
        sg = fetch_subgraph(g, ["n0"], None, hops=2)
        run = write_scores(g, sg, np.arange(sg.num_triples, dtype=float), "test", 3)
        assert len(show_run(g, run)["triples"]) == 3


TINY_PASSWORD = "tiny-memory-pass"


def _subgraph_on_a_tiny_memory_server(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess:
    """`kgdb subgraph` around a 20,000-leaf hub on a second server restarted with a transaction memory limit
    one fetch level must fit in (loads need more, so the hub is loaded before the limit is set)."""
    from kgdb.loaders.writer import write_graph

    server = spare_server(tmp_path_factory.mktemp("tiny"), TINY_PASSWORD)
    server.start(log=lambda *_: None)
    try:
        settings = base_settings().with_overrides(neo4j_uri=server.bolt_uri, neo4j_password=TINY_PASSWORD)
        with Graph.connect(settings) as g:
            write_graph(g, [("Hub", f"rel.r{i % 7}", f"leaf {i}") for i in range(20_000)], embedder=None)
        server.stop(log=lambda *_: None)
        server.extra_conf = {"db.memory.transaction.max": "4m"}
        server.start(log=lambda *_: None)
        home = tmp_path_factory.mktemp("tiny-home")
        env = {"KGDB_NEO4J_PASSWORD": TINY_PASSWORD, "PATH": "/usr/bin:/bin", "HOME": str(home)}
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "kgdb",
                "--uri",
                server.bolt_uri,
                "subgraph",
                "what is near the hub",
                "--topic",
                "Hub",
                "--hops",
                "1",
                "--cap",
                "20000",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    finally:
        server.stop(log=lambda *_: None)


@pytest.mark.slow  # starts a second server twice (~60 s), begun in the background
@pytest.mark.head_start.with_args(_subgraph_on_a_tiny_memory_server)
def test_a_tiny_server_memory_limit_is_one_line_naming_the_settings(tmp_path_factory):
    out = head_start.result(_subgraph_on_a_tiny_memory_server, tmp_path_factory)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "KGDB_FETCH_CHUNK" in out.stderr and "--cap" in out.stderr and "transaction memory" in out.stderr
