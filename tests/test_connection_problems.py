"""What really failed is what the one-line error says: TLS asked of a plain Bolt server, Browser's
HTTP port given as Bolt, a database the server does not have (a Bolt port answers HTTP too, so
"it answers HTTP" alone proved nothing)."""

from __future__ import annotations

import http.server
import subprocess
import threading
from urllib.parse import urlparse

import pytest
from test_load_cli import _one_line_error, kgdb

from kgdb.cypher import Graph
from kgdb.cypher.connection_problems import DATABASE_NOT_FOUND, unreachable_reason
from kgdb.errors import DatabaseError


@pytest.fixture
def http_port():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_tls_asked_of_a_plain_bolt_server_is_named_as_such(neo4j_settings):
    where = urlparse(neo4j_settings.neo4j_uri)
    for scheme in ("bolt+s", "neo4j+ssc"):
        reason = unreachable_reason(f"{scheme}://{where.hostname}:{where.port}")
        assert reason and "speaks Bolt without TLS" in reason and "HTTP/Browser" not in reason
    assert unreachable_reason(neo4j_settings.neo4j_uri) is None  # a working Bolt port is not misnamed


def test_an_http_port_given_as_bolt_is_still_named(http_port):
    assert "HTTP/Browser port" in unreachable_reason(f"bolt://127.0.0.1:{http_port}")


def test_a_missing_database_is_named_with_its_setting(neo4j_settings):
    with (
        Graph.connect(neo4j_settings.with_overrides(neo4j_database="nosuchdb")) as graph,
        pytest.raises(DatabaseError) as err,
    ):
        graph.run("counts")
    assert getattr(err.value.__cause__, "code", None) == DATABASE_NOT_FOUND
    assert "no database 'nosuchdb'" in str(err.value) and "KGDB_NEO4J_DATABASE" in str(err.value)


def test_the_cli_says_what_failed(neo4j_settings):
    where = urlparse(neo4j_settings.neo4j_uri)
    tls: subprocess.CompletedProcess = kgdb(
        neo4j_settings, "--uri", f"bolt+s://{where.hostname}:{where.port}", "status"
    )
    _one_line_error(tls, "speaks Bolt without TLS", f"bolt://{where.hostname}:{where.port}")
    _one_line_error(kgdb(neo4j_settings, "--database", "nosuchdb", "status"), "no database 'nosuchdb'")
