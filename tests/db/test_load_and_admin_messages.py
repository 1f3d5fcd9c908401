"""Crashes and confusing output, and the load and admin commands' messages:
bracketed user data, malformed URIs and passwords in them, a connection lost mid-load, `runs
prune` mistakes, progress and tables in redirected logs, and the whole-load rate."""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.cypher.schema import counts
from support import head_start
from support.cli import KGDB, kgdb, one_line_error
from support.graphs import wipe
from support.proxy import Proxy
from support.spare_servers import command_env, kgdb_in_background, load_server


# -- square brackets in user data ------------------------------------------------------
def test_bracketed_file_and_entity_names_load_and_ask_without_markup_errors(graph, tmp_path):
    path = tmp_path / "x[/foo].tsv"  # a folder `x[` holding `foo].tsv`: the path
    path.parent.mkdir()
    path.write_text(
        "Gotham [/b] City\tlocation.location.containedby\tMetropolis [red]\n"
        "Bruce [bold]Wayne[/bold]\tpeople.person.place_of_birth\tGotham [/b] City\n"
    )
    out = kgdb(graph.settings, "load", "freebase-subset", str(path))
    assert out.returncode == 0, out.stderr
    assert "x[/foo].tsv" in out.stdout and "MarkupError" not in out.stderr
    names = {r["n"] for r in graph.run_text("MATCH (e:Entity) RETURN e.name AS n")}
    assert names == {"Gotham [/b] City", "Metropolis [red]", "Bruce [bold]Wayne[/bold]"}
    link = kgdb(graph.settings, "link", "where is Gotham [/b] City?")
    assert link.returncode == 0 and "Gotham [/b] City" in link.stdout, link.stderr
    sub = kgdb(graph.settings, "subgraph", "where is gotham city", "--topic", "Gotham [/b] City")
    assert sub.returncode == 0 and "Metropolis [red]" in sub.stdout, sub.stderr
    missing = kgdb(graph.settings, "load", "freebase-subset", str(tmp_path / "y[/bar].tsv"), "--no-embed")
    one_line_error(missing, "y[/bar].tsv", "file not found")


def test_ask_over_bracketed_names_prints_them_verbatim(graph, tmp_path):
    path = tmp_path / "gotham.tsv"
    path.write_text("Gotham [/b] City\tlocation.location.containedby\tMetropolis [red]\n")
    assert kgdb(graph.settings, "load", "freebase-subset", str(path)).returncode == 0
    ask = kgdb(
        graph.settings, "ask", "Where is Gotham [/b] City?", "--topic", "Gotham [/b] City", "--retriever", "cosine"
    )
    assert ask.returncode == 0, ask.stderr
    assert "Metropolis [red]" in ask.stdout and "MarkupError" not in ask.stderr


# -- malformed URIs, passwords in URIs, the HTTP port ----------------------------------
def test_malformed_uris_are_one_line_and_never_echo_a_password(neo4j_settings):
    one_line_error(kgdb(neo4j_settings, "--uri", "localhost:17713", "status"), "localhost:17713", "not a Neo4j URI")
    port = neo4j_settings.neo4j_uri.rsplit(":", 1)[1]
    out = kgdb(neo4j_settings, "--uri", f"bolt://neo4j:hunter2-secret@localhost:{port}", "status")
    one_line_error(out, "********")
    assert "hunter2-secret" not in out.stdout + out.stderr
    shown = kgdb(neo4j_settings, "--uri", "bolt://neo4j:hunter2-secret@db.example:7687", "config", "show")
    assert (
        shown.returncode == 0 and "hunter2-secret" not in shown.stdout and "neo4j:********@db.example" in shown.stdout
    )


def test_the_http_port_given_as_bolt_is_named_as_such(neo4j_settings):
    if neo4j_settings.neo4j_home == Settings().neo4j_home:
        pytest.skip("needs the throw-away local server (its HTTP port)")
    out = kgdb(neo4j_settings, "--uri", f"bolt://localhost:{neo4j_settings.neo4j_http_port}", "status")
    one_line_error(out, "answers HTTP, not Bolt")
    assert "start it" not in out.stderr


# -- connection lost mid-load; runs prune mistakes -------------------------------------
def _connection_lost_during_a_load(tmp_path_factory: pytest.TempPathFactory) -> None:
    _, settings = load_server(tmp_path_factory)
    tmp_path = tmp_path_factory.mktemp("connection-lost")
    with Graph.connect(settings) as graph:
        wipe(graph)
        host, port = re.match(r"^\w[\w+]*://([^:/]+):(\d+)", settings.neo4j_uri).groups()
        proxy = Proxy((host, int(port)))
        path = tmp_path / "big.tsv"
        path.write_text("".join(f"e{i}\trel.type.r{i % 13}\te{(i * 7) % 20000}\n" for i in range(60_000)))
        env = command_env(settings, KGDB_NEO4J_URI=f"bolt://127.0.0.1:{proxy.port}")
        proc = subprocess.Popen(
            [*KGDB, "load", "freebase-subset", str(path), "--no-embed", "--batch-size", "500"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and counts(graph).get("triples", 0) < 1000:
            time.sleep(0.05)
        assert proc.poll() is None, "the load finished before the connection could be cut"
        proxy.close()
        _, err = proc.communicate(timeout=120)
        lines = [line for line in err.splitlines() if line.strip()]
        assert proc.returncode == 1 and len(lines) == 1, err
        assert "lost the connection" in lines[0] and "run the same command again" in lines[0]
        assert "Transaction failed and will be retried" not in err and "Traceback" not in err
        resumed = kgdb_in_background(settings, "load", "freebase-subset", str(path), "--no-embed")
        assert resumed.returncode == 0  # resumes
        assert counts(graph)["triples"] == 60_000


@pytest.mark.head_start.with_args(_connection_lost_during_a_load)  # a big load of its own: in the background
def test_a_connection_lost_during_a_load_says_so_and_how_to_resume(tmp_path_factory):
    head_start.result(_connection_lost_during_a_load, tmp_path_factory)


def test_runs_prune_of_an_unknown_run_or_a_bad_date_is_one_clear_line(graph):
    one_line_error(kgdb(graph.settings, "runs", "prune", "no-such-run"), "no such run: no-such-run", "nothing deleted")
    one_line_error(kgdb(graph.settings, "runs", "prune", "--before", "notadate"), "--before", "'notadate'", "ISO")
    ok = kgdb(graph.settings, "runs", "prune", "--before", "2000-01-01")
    assert ok.returncode == 0 and "deleted 0 runs" in ok.stdout, ok.stderr


# -- items 16/17 (load and admin parts) ----------------------------------------------------------
def _redirected_load(tmp_path_factory: pytest.TempPathFactory) -> None:
    _, settings = load_server(tmp_path_factory)
    with Graph.connect(settings) as graph:
        wipe(graph)
    path = tmp_path_factory.mktemp("redirected") / "t.tsv"
    path.write_text("".join(f"e{i}\trel.type.r{i % 5}\te{i + 1}\n" for i in range(30_000)))
    env = command_env(settings)
    env.pop("COLUMNS")  # a log file: no terminal width at all
    proc = subprocess.run(
        [*KGDB, "load", "freebase-subset", str(path), "--no-embed", "--batch-size", "2000"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    progress = [line for line in proc.stdout.splitlines() if line.startswith("triples: ")]
    assert len(progress) >= 3 and progress[-1].startswith("triples: 30,000/30,000 (100%)"), proc.stdout
    assert "30,000" in proc.stdout and "…" not in proc.stdout
    assert re.search(r"triples/s, whole load \(read to embeddings\)\s*│\s*[\d,]+", proc.stdout), proc.stdout


@pytest.mark.head_start.with_args(_redirected_load)  # a big load of its own: in the background
def test_redirected_load_shows_progress_lines_full_numbers_and_the_whole_load_rate(tmp_path_factory):
    head_start.result(_redirected_load, tmp_path_factory)
