"""Queries that write nothing are told apart from those that write (so reads route as READ through a
`neo4j://` URI), whatever words their strings and comments hold."""

from __future__ import annotations

from kgdb.cypher import is_read_only, query


def test_queries_that_write_nothing_run_as_reads():
    assert is_read_only(query("subgraph")) and is_read_only(query("ground_step")) and is_read_only(query("runs_show"))
    assert not is_read_only(query("write_scores")) and not is_read_only(query("load_triples"))
    assert is_read_only("MATCH (n) WHERE n.name = 'CREATE' RETURN n // SET nothing")
