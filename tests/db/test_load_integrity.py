"""Data integrity: concurrent loads, silent duplicate entities, names that
arrive in a later load, values too large to index, and inputs that passed silently or without
`file:line`. Each test reproduces the failure it guards against on a real Neo4j."""

from __future__ import annotations

import socket
import subprocess

import pytest

from kgdb.cypher.schema import counts
from kgdb.errors import InputError, KgdbError
from kgdb.loaders.writer import write_graph
from support import head_start
from support.cli import KGDB, env_for, kgdb, one_line_error
from support.graphs import wipe
from support.sources import NFC, NFD
from support.spare_servers import command_env, kgdb_in_background, load_server


def _lease_nodes(graph) -> list[dict]:
    return graph.run_text("MATCH (l:KgdbLease) RETURN l.holder AS holder")


# -- two loads at once ------------------------------------------------------------------
def test_two_concurrent_loads_store_every_triple_once(graph, tmp_path):
    path = tmp_path / "six_thousand.tsv"
    path.write_text("".join(f"e{i}\trel.type.r{i % 7}\te{(i * 31) % 5000}\n" for i in range(6000)))
    args = ["load", "freebase-subset", str(path), "--no-embed", "--batch-size", "500"]
    procs = [
        subprocess.Popen(
            [*KGDB, *args], env=env_for(graph.settings), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    assert counts(graph)["triples"] == 6000  # was 12,000 with both loaders writing
    for rc, _out, err in results:
        # the second either waited for nothing (first already done) or was refused with the holder named
        assert rc == 0 or ("lease held by" in err and "--break-lease" in err and "Traceback" not in err), err
    assert _lease_nodes(graph) == []  # released at the end (and by the refused one: it never held it)


def test_a_held_lease_refuses_the_load_naming_the_holder_and_break_lease_removes_it(graph, tmp_path):
    write_graph(graph, [("a", "r.x", "b")])  # schema + constraint
    holder = "build-host-7 pid 4242 started 2026-01-01T00:00:00+00:00 token feedbeef"
    graph.run("load_lease_acquire", key="lease:load", holder=holder)
    path = tmp_path / "t.tsv"
    path.write_text("c\tr.x\td\n")
    one_line_error(
        kgdb(graph.settings, "load", "freebase-subset", str(path), "--no-embed"),
        "build-host-7 pid 4242",
        "--break-lease",
    )
    assert counts(graph)["triples"] == 1
    ok = kgdb(graph.settings, "load", "freebase-subset", str(path), "--no-embed", "--break-lease")
    assert ok.returncode == 0, ok.stderr
    assert counts(graph)["triples"] == 2 and _lease_nodes(graph) == []


def test_a_lease_left_by_a_killed_local_load_is_removed_by_the_rerun(graph, tmp_path):
    write_graph(graph, [("a", "r.x", "b")])
    dead = subprocess.Popen(["true"])
    dead.wait()
    holder = f"{socket.gethostname()} pid {dead.pid} started 2026-01-01T00:00:00+00:00 token 00000000"
    graph.run("load_lease_acquire", key="lease:load", holder=holder)
    path = tmp_path / "t.tsv"
    path.write_text("c\tr.x\td\n")
    out = kgdb(graph.settings, "load", "freebase-subset", str(path), "--no-embed")
    assert out.returncode == 0, out.stderr
    assert "stale load lease" in out.stdout and counts(graph)["triples"] == 2


def test_lease_is_released_when_the_load_fails(graph):
    with pytest.raises(KgdbError, match="reserved"):
        write_graph(graph, [("a", "SCORED", "b")])
    assert _lease_nodes(graph) == []


def test_repair_and_dedupe_remove_duplicate_triples_already_stored(graph, tmp_path):
    triples = [(f"n{i}", "rel.a", f"n{i + 1}") for i in range(50)] + [("n0", "rel.b", "n1")]
    write_graph(graph, triples)
    # What two concurrent loads used to leave behind: every triple twice (plus a SCORED edge, kept).
    graph.run_text("MATCH (h:Entity)-[r]->(t:Entity) CREATE (h)-[:$(type(r))]->(t)")
    graph.run_text(
        "MATCH (h:Entity {id: 'n0'}), (t:Entity {id: 'n1'}) CREATE (h)-[:SCORED {run: 'x'}]->(h), (h)-[:SCORED {run: 'y'}]->(h)"
    )
    assert counts(graph)["triples"] == 102
    out = kgdb(graph.settings, "repair")
    assert out.returncode == 0, out.stderr
    assert "removed 51 duplicate triple(s)" in out.stdout and counts(graph)["triples"] == 51
    assert graph.run_text("MATCH ()-[s:SCORED]->() RETURN count(s) AS n") == [{"n": 2}]
    graph.run_text("MATCH (h:Entity)-[r:`rel.a`]->(t:Entity) CREATE (h)-[:`rel.a`]->(t)")
    path = tmp_path / "t.tsv"
    path.write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in triples))
    out = kgdb(graph.settings, "load", "freebase-subset", str(path), "--no-embed", "--dedupe")
    assert out.returncode == 0, out.stderr
    assert "duplicate triples removed" in out.stdout and counts(graph)["triples"] == 51


# -- BOM, whitespace, NFD ---------------------------------------------------------------


def test_normalised_load_creates_no_duplicate_entities_and_reports_the_count(graph, tmp_path):
    path = tmp_path / "mixed.tsv"
    path.write_text(
        f"\ufeffhead\trelation\ttail\n{NFD}\tmusic.artist.genre\t Pop\n{NFC}\tmusic.artist.genre\tPop \n",
        encoding="utf-8",
    )
    out = kgdb(graph.settings, "load", "freebase-subset", str(path), "--no-embed")
    assert out.returncode == 0, out.stderr
    assert sorted(r["id"] for r in graph.run_text("MATCH (e:Entity) RETURN e.id AS id")) == sorted(["Pop", NFC])
    assert "values normalised" in out.stdout and "normalised 4 value(s)" in out.stdout  # BOM, NFD, 2 spaces


# -- names from a later load ------------------------------------------------------------
def test_a_later_load_with_names_sets_the_name_drops_cvt_and_queues_the_embedding(graph, tmp_path):
    from kgdb.embeddings import get_embedder

    triples = [("m.0zz1", "people.person.nationality", "m.0zz2")]
    write_graph(graph, triples, embedder=get_embedder())
    row = graph.run_text("MATCH (e:Entity {id: 'm.0zz1'}) RETURN e.name AS name, labels(e) AS labels")[0]
    assert row["name"] == "m.0zz1" and "CVT" in row["labels"]
    write_graph(graph, triples, {"m.0zz1": "Zaza Zed"}, embedder=get_embedder())
    row = graph.run_text(
        "MATCH (e:Entity {id: 'm.0zz1'}) RETURN e.name AS name, labels(e) AS labels, e.embedding IS NOT NULL AS emb"
    )[0]
    assert row == {"name": "Zaza Zed", "labels": ["Entity"], "emb": True}
    # a later load without names keeps the name and does not bring :CVT back
    write_graph(graph, triples, embedder=get_embedder())
    assert graph.run_text("MATCH (e:Entity {id: 'm.0zz1'}) RETURN e.name AS name, labels(e) AS labels")[0] == {
        "name": "Zaza Zed",
        "labels": ["Entity"],
    }
    hits = graph.run_text("CALL db.index.fulltext.queryNodes('entity_names', 'Zaza') YIELD node RETURN node.id AS id")
    assert hits == [{"id": "m.0zz1"}]


def test_names_through_the_cli(graph, tmp_path):
    mids, names = tmp_path / "mids.tsv", tmp_path / "mid2name.tsv"
    mids.write_text("/m/0zz1\t/people/person/nationality\t/m/0zz2\n")
    names.write_text("/m/0zz1\tZaza Zed\n")
    assert kgdb(graph.settings, "load", "freebase-subset", str(mids), "--no-embed").returncode == 0
    out = kgdb(graph.settings, "load", "freebase-subset", str(mids), "--names", str(names), "--no-embed")
    assert out.returncode == 0, out.stderr
    assert counts(graph)["cvt"] == 1  # only m.0zz2 is still unnamed
    assert graph.run_text("MATCH (e:Entity {id: 'm.0zz1'}) RETURN e.name AS n") == [{"n": "Zaza Zed"}]


# -- values too large to index ----------------------------------------------------------
def test_values_too_large_to_index_are_refused_with_file_and_line(graph, tmp_path):
    path = tmp_path / "big.tsv"
    path.write_text("a\tr.x\tb\n" + "x" * 9000 + "\tr.x\tb\nc\tr." + "y" * 9000 + "\td\n")
    one_line_error(
        kgdb(graph.settings, "load", "freebase-subset", str(path), "--no-embed"), f"{path}:2:", "cannot index"
    )
    out = kgdb(graph.settings, "load", "freebase-subset", str(path), "--no-embed", "--skip-bad")
    assert out.returncode == 0 and "skipped 2 bad line(s)" in out.stdout, out.stderr
    assert counts(graph)["triples"] == 1
    nt = tmp_path / "long.nt"
    nt.write_text(
        '<http://rdf.freebase.com/ns/m.0a> <http://rdf.freebase.com/ns/common.topic.description> "'
        + "long literal " * 800
        + '"@en .\n'
    )
    one_line_error(kgdb(graph.settings, "load", "freebase-subset", str(nt), "--no-embed"), f"{nt}:1:", "cannot index")


def test_a_neo4j_database_error_is_one_clear_line(graph):
    # Past the readers (a caller of write_graph): Neo4j's own refusal must not be a traceback.
    with pytest.raises(KgdbError) as err:
        write_graph(graph, [("z" * 40_000, "r.x", "b")])
    assert "\n" not in str(err.value) and "failed" in str(err.value)
    assert _lease_nodes(graph) == []


@pytest.mark.parametrize("content", [b"", b"\n\n  \n", b"head\trelation\ttail\n", b"\xef\xbb\xbf"])
def test_an_empty_source_is_an_error_not_a_silent_no_op(graph, tmp_path, content):
    path = tmp_path / "empty.tsv"
    path.write_bytes(content)
    one_line_error(
        kgdb(graph.settings, "load", "freebase-subset", str(path), "--no-embed"), str(path), "nothing to load"
    )


def test_bulk_refuses_to_stop_the_server_under_a_running_bolt_load(graph, local_server):
    from kgdb.loaders.bulk import bulk_load
    from kgdb.loaders.lease import LeaseHeld

    write_graph(graph, [("a", "r.x", "b")])
    graph.run(
        "load_lease_acquire", key="lease:load", holder="build-host-7 pid 4242 started 2026-01-01T00:00:00+00:00 token 1"
    )
    pid = local_server.pid()
    with pytest.raises(LeaseHeld, match="build-host-7"):
        bulk_load(graph.settings, local_server, [("c", "r.x", "d")], replace=True, log=lambda *_: None)
    assert local_server.pid() == pid and counts(graph)["triples"] == 1


# -- second round: faults a careless user or a race produces --------------------------------------
def _wait_for_lease(graph, proc: subprocess.Popen, timeout: float = 240.0) -> str:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = _lease_nodes(graph)
        if rows:
            return rows[0]["holder"]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    raise AssertionError("the first load never took the lease")


def _break_lease_under_a_running_load(tmp_path_factory: pytest.TempPathFactory) -> None:
    from kgdb.cypher import Graph

    _, settings = load_server(tmp_path_factory)
    tmp_path = tmp_path_factory.mktemp("break-lease")
    big = tmp_path / "big.tsv"
    big.write_text("".join(f"e{i}\trel.type.r{i % 5}\te{(i * 37) % 20000}\n" for i in range(60_000)))
    small = tmp_path / "small.tsv"
    small.write_text("".join(f"e{i}\trel.type.r{i % 5}\te{(i * 37) % 20000}\n" for i in range(500)))
    with Graph.connect(settings) as graph:
        wipe(graph)
        first = subprocess.Popen(
            [*KGDB, "load", "freebase-subset", str(big), "--no-embed", "--batch-size", "2000"],
            env=command_env(settings),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            holder = _wait_for_lease(graph, first)
            assert f"pid {first.pid} " in holder
            second = kgdb_in_background(settings, "load", "freebase-subset", str(small), "--no-embed", "--break-lease")
            running = first.poll() is None
        finally:
            out, err = first.communicate(timeout=300)
        assert first.returncode == 0, err
        if running:  # the first load was still writing when the lease break was asked for
            one_line_error(second, f"pid {first.pid}", "still running on this host")
        assert counts(graph)["triples"] == 60_000  # was 60,000 + up to 500 duplicates CREATEd beside the first load's
        assert graph.run_text(
            "MATCH (h)-[r]->(t) WITH h, type(r) AS r, t, count(*) AS n WHERE n > 1 RETURN count(*) AS d"
        ) == [{"d": 0}]


@pytest.mark.head_start.with_args(_break_lease_under_a_running_load)  # a big load of its own: in the background
def test_break_lease_refuses_to_remove_the_lease_of_a_load_still_running_on_this_host(tmp_path_factory):
    head_start.result(_break_lease_under_a_running_load, tmp_path_factory)


def test_more_relation_types_than_the_store_holds_are_refused_before_anything_is_written(graph):
    from kgdb.loaders.writer import RESERVED_TYPES, relation_type_room

    limit, existing, store = relation_type_room(graph)
    assert store.startswith("record-aligned") and limit == 65_536  # Community's format: 16-bit type ids
    triples = [(f"e{i}", f"rel.limit.r{i}", f"e{i + 1}") for i in range(8)]
    room = len(existing | RESERVED_TYPES | {r for _, r, _ in triples})
    with pytest.raises(InputError, match=f"more than the {room - 1:,}"):
        write_graph(graph, triples, relation_type_limit=room - 1)
    assert counts(graph)["triples"] == 0 and counts(graph)["entities"] == 0 and _lease_nodes(graph) == []
    assert write_graph(graph, triples, relation_type_limit=room).triples_created == 8


def _bulk_without_replace_checks_a_stopped_servers_store_or_refuses(tmp_path_factory: pytest.TempPathFactory) -> None:
    import socket as sockets

    from kgdb.cypher import Graph
    from kgdb.loaders.bulk import bulk_load

    server, settings = load_server(tmp_path_factory)
    with Graph.connect(settings) as graph:
        wipe(graph)
        write_graph(graph, [("a", "r.x", "b"), ("b", "r.x", "c")])
    server.stop(log=lambda *_: None)
    try:
        with sockets.socket() as blocker:  # the server cannot start, so nothing can count the store
            blocker.setsockopt(sockets.SOL_SOCKET, sockets.SO_REUSEADDR, 1)
            blocker.bind(("127.0.0.1", server.bolt_port))
            blocker.listen()
            with pytest.raises(KgdbError, match="cannot check whether 'neo4j' .* is empty"):
                bulk_load(settings, server, [("x", "r.x", "y")], log=lambda *_: None)
        with pytest.raises(KgdbError, match="holds .* nodes: pass --replace"):  # started to look, found data
            bulk_load(settings, server, [("x", "r.x", "y")], log=lambda *_: None)
    finally:
        if not server.running():
            server.start(log=lambda *_: None)
    with Graph.connect(settings) as again:
        assert counts(again)["triples"] == 2  # was 1: the stopped server's database replaced, exit 0


@pytest.mark.head_start.with_args(_bulk_without_replace_checks_a_stopped_servers_store_or_refuses)
def test_bulk_without_replace_checks_a_stopped_servers_store_or_refuses(tmp_path_factory):
    head_start.result(_bulk_without_replace_checks_a_stopped_servers_store_or_refuses, tmp_path_factory)
