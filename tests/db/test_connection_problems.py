"""What really failed is what the one-line error says: TLS asked of a plain Bolt server, a database
the server does not have, and the command line saying so; and reads across a closed connection."""

from __future__ import annotations

import subprocess
from urllib.parse import urlparse

import pytest

from kgdb.cypher import Graph
from kgdb.cypher.connection_problems import DATABASE_NOT_FOUND, unreachable_reason
from kgdb.errors import DatabaseError
from support.cli import kgdb, one_line_error
from support.proxy import Proxy


def test_tls_asked_of_a_plain_bolt_server_is_named_as_such(neo4j_settings):
    where = urlparse(neo4j_settings.neo4j_uri)
    for scheme in ("bolt+s", "neo4j+ssc"):
        reason = unreachable_reason(f"{scheme}://{where.hostname}:{where.port}")
        assert reason and "speaks Bolt without TLS" in reason and "HTTP/Browser" not in reason
    assert unreachable_reason(neo4j_settings.neo4j_uri) is None  # a working Bolt port is not misnamed


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
    one_line_error(tls, "speaks Bolt without TLS", f"bolt://{where.hostname}:{where.port}")
    one_line_error(kgdb(neo4j_settings, "--database", "nosuchdb", "status"), "no database 'nosuchdb'")


def test_a_read_after_the_server_closed_the_pooled_connection_answers(neo4j_settings):
    where = urlparse(neo4j_settings.neo4j_uri)
    proxy = Proxy((where.hostname, where.port))
    try:
        with Graph.connect(neo4j_settings.with_overrides(neo4j_uri=f"bolt://127.0.0.1:{proxy.port}")) as graph:
            assert graph.run_text("RETURN 1 AS one") == [{"one": 1}]
            proxy.drop()  # the pooled connection is gone, as after a server restart
            assert graph.run_text("RETURN 2 AS two") == [{"two": 2}]
            proxy.close()  # the server is gone: a read says so
            with pytest.raises(DatabaseError, match="lost the connection"):
                graph.run_text("RETURN 3 AS three")
    finally:
        proxy.close()
