"""The `cypher` graph tool reads and never writes: every kind of write an agent could send (clauses,
writing and administering procedures, LOAD CSV, another database, several statements) is refused and
leaves the graph exactly as it was; a runaway query is stopped by Neo4j at the tool's time limit with a
clear error; rows are capped. Driven by the MCP SDK's clients against a real uvicorn server and a real
`kgdb mcp` process."""

from __future__ import annotations

import time

import anyio
import pytest
from fastapi import FastAPI

from kgdb.api import Kgdb
from kgdb.cypher import Graph
from kgdb.service.graph_tools import ToolLimits
from kgdb.service.mcp_server import mount_mcp
from kgdb.service.options import ServiceOptions
from support.cli import env_for
from support.graphs import load, wipe
from support.mcp_clients import call, http_session, refused, serving, stdio_session

TRIPLES = [
    ("France", "location.country.capital", "Paris"),
    ("Paris", "location.location.containedby", "France"),
    ("Jamaica", "location.country.capital", "Kingston"),
]
RUNAWAY = "UNWIND range(1, 100000000000) AS x WITH x WHERE x < 0 RETURN count(*) AS n"
ROW_CAP = 5
TIMEOUT_S = 2.0

PLANNED = "Neo4j plans this query as"
PROCEDURE = "administers the server or writes"
# Each write, and the check that refuses it (the plan's query type, else the text; a READ transaction
# would refuse what both let through).
WRITES = {
    "create": ("CREATE (:Entity {id: 'Atlantis', name: 'Atlantis'})", PLANNED + " write ('w')"),
    "merge": ("MERGE (n:Entity {id: 'Atlantis'}) RETURN n", PLANNED + " read and write ('rw')"),
    "delete": ("MATCH (n:Entity {id: 'France'}) DETACH DELETE n", PLANNED),
    "set": ("MATCH (n:Entity {id: 'France'}) SET n.name = 'Gaul'", PLANNED),
    "remove": ("MATCH (n:Entity {id: 'France'}) REMOVE n:Entity", PLANNED),
    "create-relationship": (
        "MATCH (a:Entity {id: 'Paris'}), (b:Entity {id: 'Jamaica'}) CREATE (a)-[:twin]->(b)",
        PLANNED,
    ),
    "in-transactions": ("CALL { CREATE (:Intruder) } IN TRANSACTIONS", PLANNED),
    "create-index": ("CREATE INDEX intruder FOR (n:Entity) ON (n.intruder)", PLANNED + " schema or administration"),
    "writing-procedure": ("CALL db.createLabel('Intruder')", PROCEDURE),
    "writing-procedure-any-case": ("call DB.CREATELABEL('Intruder')", PROCEDURE),
    "dbms-procedure": ("CALL dbms.components()", PROCEDURE),
    "clear-caches": ("CALL db.clearQueryCaches()", PROCEDURE),
    "load-csv": ("LOAD CSV FROM 'file:///etc/passwd' AS line RETURN line", "LOAD CSV reads files"),
    "admin-command": ("CREATE DATABASE intruder", "administration commands"),
    "grant": ("GRANT ROLE admin TO neo4j", "administration commands"),
    "terminate": ("TERMINATE TRANSACTIONS 'neo4j-transaction-1'", "stops other users' work"),
    "use-another-database": ("USE system SHOW DATABASES", "USE selects another database"),
    "use-in-a-subquery": ("CALL { USE system RETURN 1 AS one } RETURN one", "USE selects another database"),
    "two-statements": ("MATCH (n) RETURN count(n); MATCH (n) DETACH DELETE n", "more than one statement"),
    "two-statements-in-comments": ("MATCH (n) RETURN count(n) /* ; */; CREATE (:Intruder)", "more than one statement"),
}


def state(graph: Graph) -> dict:
    """Everything a refused write could have changed: nodes, relationships, labels, names, indexes."""
    row = graph.run_text(
        "MATCH (n) OPTIONAL MATCH (n)-[r]->() "
        "RETURN count(DISTINCT n) AS nodes, count(r) AS relationships, collect(DISTINCT n.name) AS names"
    )[0]
    row["names"] = sorted(row["names"])
    row["labels"] = sorted(r["label"] for r in graph.run_text("CALL db.labels() YIELD label RETURN label"))
    row["indexes"] = sorted(r["name"] for r in graph.run_text("SHOW INDEXES YIELD name RETURN name"))
    return row


@pytest.fixture(scope="module")
def small_graph(neo4j_settings):
    with Graph.connect(neo4j_settings) as graph:
        wipe(graph)
        load(graph, TRIPLES)
        yield graph


@pytest.fixture(scope="module")
def mcp_url(small_graph):
    limits = ToolLimits(row_cap=ROW_CAP, cypher_timeout_s=TIMEOUT_S, deadline_s=30)
    with Kgdb(Graph.connect(small_graph.settings)) as kg:
        app = FastAPI()
        mount_mcp(app, kg, ServiceOptions(workers=1), limits=limits)
        with serving(app) as base:
            yield f"{base}/mcp"


def run(url: str, name: str, **arguments) -> dict:
    async def go() -> dict:
        async with http_session(url) as s:
            return await call(s, name, **arguments)

    return anyio.run(go)


def refusal(url: str, name: str, **arguments) -> str:
    async def go() -> str:
        async with http_session(url) as s:
            return await refused(s, name, **arguments)

    return anyio.run(go)


@pytest.mark.parametrize(("query", "why"), list(WRITES.values()), ids=list(WRITES))
def test_a_write_is_refused_and_the_graph_is_unchanged(small_graph, mcp_url, query, why):
    before = state(small_graph)
    message = refusal(mcp_url, "cypher", query=query)
    assert "query: refused: " in message and why in message, message
    assert state(small_graph) == before


def test_a_runaway_query_is_stopped_at_its_time_limit(small_graph, mcp_url):
    start = time.monotonic()
    message = refusal(mcp_url, "cypher", query=RUNAWAY)
    took = time.monotonic() - start
    assert f"ran past its time limit of {TIMEOUT_S:g} s and was stopped" in message
    assert TIMEOUT_S <= took < TIMEOUT_S + 15
    # stopped on the server, not just abandoned by the client
    running = small_graph.run_text("SHOW TRANSACTIONS YIELD currentQuery RETURN currentQuery")
    assert not any("100000000000" in (r["currentQuery"] or "") for r in running)
    assert run(mcp_url, "cypher", query="MATCH (n:Entity) RETURN count(n) AS n")["rows"] == [{"n": 4}]


def test_rows_are_capped_and_the_cap_is_said(mcp_url):
    got = run(mcp_url, "cypher", query="UNWIND range(1, 1000) AS x RETURN x")
    assert got["rows"] == [{"x": x} for x in range(1, ROW_CAP + 1)] and got["truncated"] is True
    assert got["row_cap"] == ROW_CAP
    exact = run(mcp_url, "cypher", query=f"UNWIND range(1, {ROW_CAP}) AS x RETURN x")
    assert len(exact["rows"]) == ROW_CAP and exact["truncated"] is False


def test_parameters_stay_data_and_keywords_in_strings_are_not_clauses(small_graph, mcp_url):
    before = state(small_graph)
    hostile = "x'}) DETACH DELETE n; CREATE (:Intruder) //"
    got = run(mcp_url, "cypher", query="RETURN $text AS text", parameters={"text": hostile})
    assert got["rows"] == [{"text": hostile}]
    words = run(mcp_url, "cypher", query="RETURN 'CREATE (n); LOAD CSV; USE system' AS `USE`  // DELETE")
    assert words["rows"] == [{"USE": "CREATE (n); LOAD CSV; USE system"}]
    node = run(mcp_url, "cypher", query="MATCH (e:Entity {id: 'Paris'}) RETURN e")["rows"][0]["e"]
    assert node["labels"] == ["Entity"] and node["properties"]["name"] == "Paris"
    assert node["properties"]["embedding"] == {"vector_of": 384}  # a vector is shown by its length
    assert state(small_graph) == before


def test_reading_procedures_and_show_commands_run(mcp_url):
    labels = run(mcp_url, "cypher", query="CALL db.labels() YIELD label RETURN label ORDER BY label")
    assert {"label": "Entity"} in labels["rows"]
    indexes = run(mcp_url, "cypher", query="SHOW INDEXES YIELD name RETURN name")
    assert indexes["rows"]


def test_kgdb_mcp_over_stdio_refuses_writes_and_stops_a_runaway_query(small_graph):
    before = state(small_graph)

    async def go() -> None:
        args = ("--cypher-timeout", "1", "--row-cap", "2")
        async with stdio_session(env_for(small_graph.settings), *args) as s:
            for name in ("create", "merge", "writing-procedure", "load-csv"):
                query, why = WRITES[name]
                assert why in await refused(s, "cypher", query=query)
            message = await refused(s, "cypher", query=RUNAWAY)
            assert "ran past its time limit of 1 s and was stopped" in message
            got = await call(s, "cypher", query="MATCH (n:Entity) RETURN n.id AS id ORDER BY id")
            assert got["rows"] == [{"id": "France"}, {"id": "Jamaica"}] and got["truncated"] is True

    anyio.run(go)
    assert state(small_graph) == before
