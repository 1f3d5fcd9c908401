"""`kgdb load ...` end to end on a real Neo4j: the default subset, questions, clear one-line errors,
a load killed with SIGKILL and rerun, and the --bulk (neo4j-admin import) path."""

from __future__ import annotations

import random
import signal
import subprocess
import time

import pytest
from typer.testing import CliRunner

from kgdb.cli import app
from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.cypher.schema import counts
from kgdb.server_home import free_port
from support import FIXTURES, head_start
from support.cli import KGDB, env_for, kgdb, one_line_error
from support.graphs import snapshot, wipe
from support.obama import TRIPLES
from support.spare_servers import command_env, kgdb_in_background, load_server


def invoke(settings: Settings, *args: str):
    result = CliRunner().invoke(app, list(args), env=env_for(settings))
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def test_default_subset_loads_with_questions_and_twice_gives_identical_counts(graph):
    out = invoke(graph.settings, "load", "freebase-subset")
    assert "kgdb load summary" in out and "Loaded 17 example questions (17 topic links)" in out
    first = snapshot(graph)
    c = first["counts"]
    assert c["triples"] == 1250 and c["questions"] == 17 and c["relations"] == c["relation_embeddings"] == 64
    assert c["entity_embeddings"] == c["entities"] - c["cvt"] and c["cvt"] >= 30
    out = invoke(graph.settings, "load", "freebase-subset")
    assert "0 / 1,250" in out  # created / already there
    assert snapshot(graph) == first
    paris = graph.run_text("MATCH (:Entity {id: 'France'})-[:`location.country.capital`]->(c) RETURN c.name AS c")
    assert paris == [{"c": "Paris"}]


def test_load_questions(graph):
    invoke(graph.settings, "load", "freebase-subset", str(FIXTURES / "rog_small.jsonl"), "--no-embed")
    out = invoke(graph.settings, "load", "questions", str(FIXTURES / "questions_small.jsonl"))
    assert "Loaded 2 questions" in out and "2 of 3 topic entities found in the graph (1 missing)" in out
    rows = graph.run_text(
        "MATCH (q:Question)-[:ABOUT]->(e) RETURN q.id AS id, q.answers AS a, q.hop AS hop, e.id AS e ORDER BY id"
    )
    assert rows == [
        {"id": "q-1", "a": ["Kingston"], "hop": None, "e": "Jamaica"},
        {"id": "q-2", "a": ["Sherwood Content"], "hop": 1, "e": "Usain Bolt"},
    ]
    invoke(graph.settings, "load", "questions", str(FIXTURES / "questions_small.jsonl"))
    assert counts(graph)["questions"] == 2


def test_every_format_through_the_cli(graph, tmp_path):
    invoke(
        graph.settings,
        "load",
        "freebase-subset",
        str(FIXTURES / "fb_small_triples.tsv"),
        "--names",
        str(FIXTURES / "fb_small_names.tsv"),
        "--no-embed",
    )
    invoke(graph.settings, "load", "freebase-subset", str(FIXTURES / "small.csv"), "--no-embed")
    invoke(
        graph.settings,
        "load",
        "freebase-subset",
        str(FIXTURES / "freebase_small.nt"),
        "--no-embed",
        "--relation-prefix",
        "people.",
        "--relation-prefix",
        "location.",
    )
    out = invoke(graph.settings, "load", "freebase-subset", str(FIXTURES / "bad_empty.tsv"), "--no-embed", "--skip-bad")
    assert "skipped 1 bad line(s)" in out and "bad_empty.tsv:2: column 2 is empty" in out
    names = {r["id"]: r["name"] for r in graph.run_text("MATCH (e:Entity) RETURN e.id AS id, e.name AS name")}
    assert names["m.02mjmr"] == "Barack Obama" and names['The "Big Apple"'] == 'The "Big Apple"'
    # fb_small (5 distinct) + csv (5) + nt (6, one the same as in fb_small) + bad_empty (2 good lines)
    assert counts(graph)["triples"] == 5 + 5 + 5 + 2


def test_clear_one_line_errors(neo4j_settings, tmp_path):
    one_line_error(
        kgdb(neo4j_settings, "--password", "wrong", "load", "freebase-subset", "--no-embed"), "wrong password"
    )
    one_line_error(
        kgdb(
            neo4j_settings,
            "--uri",
            f"bolt://localhost:{free_port()}",
            "load",
            "questions",
            str(FIXTURES / "questions_small.jsonl"),
        ),
        "cannot reach Neo4j",
    )
    one_line_error(
        kgdb(neo4j_settings, "load", "freebase-subset", str(tmp_path / "missing.tsv"), "--no-embed"),
        "missing.tsv",
        "file not found",
    )
    bad = tmp_path / "bad.tsv"
    bad.write_bytes(b"a\tr.x.y\tb\nc\tr.x.y\t\xff\n")
    one_line_error(kgdb(neo4j_settings, "load", "freebase-subset", str(bad), "--no-embed"), f"{bad}:2: invalid UTF-8")
    one_line_error(
        kgdb(neo4j_settings, "load", "freebase-subset", str(FIXTURES / "bad_columns.tsv"), "--no-embed"),
        "bad_columns.tsv:2: expected 3",
    )


def _killed_load_rerun(tmp_path_factory: pytest.TempPathFactory) -> None:
    _, settings = load_server(tmp_path_factory)
    rng = random.Random(7)
    path = tmp_path_factory.mktemp("killed-load") / "big.tsv"
    rows = {
        (f"e{rng.randrange(3000)}", f"rel.type.r{rng.randrange(40)}", f"e{rng.randrange(3000)}") for _ in range(40_000)
    }
    path.write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in sorted(rows)))
    args = ["load", "freebase-subset", str(path), "--no-embed", "--batch-size", "500"]

    with Graph.connect(settings) as graph:
        wipe(graph)
        proc = subprocess.Popen(
            [*KGDB, *args], env=command_env(settings), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if graph.run_text("MATCH ()-[r]->() RETURN count(r) AS n")[0]["n"] >= 2_000:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the load finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        partial = counts(graph)["triples"]
        assert 0 < partial < len(rows)

        assert kgdb_in_background(settings, *args).returncode == 0
        resumed = snapshot(graph)
        graph.run_auto("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS")
        assert kgdb_in_background(settings, *args).returncode == 0
        clean = snapshot(graph)
    assert resumed == clean and clean["counts"]["triples"] == len(rows)
    assert clean["counts"]["entities"] == len({x for h, _, t in rows for x in (h, t)})


@pytest.mark.head_start.with_args(_killed_load_rerun)  # big loads of its own: in the background
def test_killed_load_rerun_gives_identical_counts(tmp_path_factory):
    head_start.result(_killed_load_rerun, tmp_path_factory)


def _bulk_import_equals_the_bolt_path(tmp_path_factory: pytest.TempPathFactory) -> None:
    from kgdb.embeddings import get_embedder
    from kgdb.errors import KgdbError
    from kgdb.loaders.bulk import bulk_load
    from kgdb.loaders.writer import write_graph

    server, settings = load_server(tmp_path_factory)
    nasty = [
        ("line one\nline two", "weird`type}) DELETE r //", "Quote 'single', \"double\""),
        ("}) DETACH DELETE n //", "people.person.nationality", "Back`tick;semi"),
    ]
    triples = TRIPLES + nasty
    embedder = get_embedder()
    with Graph.connect(settings) as graph:
        wipe(graph)
        write_graph(graph, triples, embedder=embedder)
        bolt = snapshot(graph)
        with pytest.raises(KgdbError, match="--replace"):
            bulk_load(settings, server, triples, embedder=embedder, log=lambda *_: None)
    stats = bulk_load(settings, server, triples, embedder=embedder, replace=True, log=lambda *_: None)
    assert stats.seconds["import"] > 0
    with Graph.connect(settings) as g:
        assert snapshot(g) == bolt
        hits = g.run_text(
            "CALL db.index.vector.queryNodes('entity_embedding', 1, $q) YIELD node RETURN node.id AS id",
            q=embedder.encode_one("Honolulu").tolist(),
        )
        assert hits == [{"id": "Honolulu"}]
        assert write_graph(g, triples, embedder=embedder).triples_created == 0  # the Bolt path sees it all loaded


@pytest.mark.slow  # stops, imports into and restarts a spare server (~80 s), begun in the background
@pytest.mark.head_start.with_args(_bulk_import_equals_the_bolt_path)
def test_bulk_import_equals_the_bolt_path(tmp_path_factory):
    head_start.result(_bulk_import_equals_the_bolt_path, tmp_path_factory)
