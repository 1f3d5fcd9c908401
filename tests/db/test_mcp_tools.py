"""kgdb's graph tools for LLM agents, driven by the MCP SDK's own clients on the default data (`kgdb load
freebase-subset`): over stdio against a real `kgdb mcp` process, and over streamable HTTP against a
real uvicorn server hosting a FastAPI app with `mount_mcp`. An agent's route (link the question's
entity, rank its relation paths, follow the best, answer) ends at Paris, and nothing is written."""

from __future__ import annotations

from contextlib import asynccontextmanager

import anyio
import httpx
import pytest
from fastapi import FastAPI
from typer.testing import CliRunner

from kgdb.api import Kgdb
from kgdb.cli import app as cli
from kgdb.cypher import Graph
from kgdb.service.graph_tools import ToolLimits
from kgdb.service.mcp_server import mount_mcp
from kgdb.service.options import ServiceOptions
from support.cli import env_for
from support.graphs import snapshot, wipe
from support.mcp_clients import call, http_session, refused, serving, stdio_session

QUESTION = "What is the capital of France?"
TOOLS = {"link_entities", "relation_paths", "neighbours", "follow", "ask", "cypher"}
TOKEN = "a-token-of-enough-characters"


@pytest.fixture(scope="module")
def default_data(neo4j_settings):
    """The default data loaded once for this module, as `kgdb load freebase-subset` loads it."""
    with Graph.connect(neo4j_settings) as graph:
        wipe(graph)
        out = CliRunner().invoke(cli, ["load", "freebase-subset"], env=env_for(neo4j_settings))
        assert out.exit_code == 0, (out.output, out.exception)
        yield graph


@pytest.fixture(scope="module")
def mcp_url(default_data):
    with Kgdb(Graph.connect(default_data.settings)) as kg:
        app = FastAPI()
        mount_mcp(app, kg, ServiceOptions(workers=1), limits=ToolLimits(row_cap=3, cypher_timeout_s=5))
        with serving(app) as base:
            yield f"{base}/mcp"


async def agent_route(session) -> None:
    """The tools an agent calls to answer the question, and what each must say."""
    listed = {t.name: t for t in (await session.list_tools()).tools}
    assert set(listed) == TOOLS
    for tool in listed.values():
        assert tool.description and tool.input_schema["type"] == "object" and tool.output_schema
        assert tool.annotations is not None and tool.annotations.read_only_hint is True

    linked = await call(session, "link_entities", text=QUESTION, limit=3)
    assert linked["entities"][0]["id"] == "France" and linked["entities"][0]["mention"] == "france"
    assert len(linked["entities"]) <= 3

    ranked = await call(session, "relation_paths", question=QUESTION, topic="France", limit=3)
    best = ranked["paths"][0]
    assert ranked["topic"] == {"id": "France", "name": "France"} and len(ranked["paths"]) == 3
    assert best["relations"] == ["location.country.capital"] and best["directions"] == [1]
    assert best["score"] > ranked["paths"][1]["score"]

    reached = await call(session, "follow", entity="France", relations=best["relations"], directions=best["directions"])
    assert [e["name"] for e in reached["entities"]] == ["Paris"]
    assert reached["entities"][0]["via"] == [
        {
            "head_id": "France",
            "head": "France",
            "relation": "location.country.capital",
            "tail_id": "Paris",
            "tail": "Paris",
        }
    ]

    around = await call(session, "neighbours", entity="France", relation="location.country.capital")
    assert [(t["head"], t["relation"], t["tail"]) for t in around["triples"]] == [
        ("France", "location.country.capital", "Paris")
    ]
    assert {"relation": "location.country.capital", "direction": 1, "count": 1} in around["relations"]

    answered = await call(session, "ask", question=QUESTION)
    first = answered["answers"][0]
    assert first["answer"] == "Paris" and first["grounded"] and first["entity_id"] == "Paris"
    assert any("location.country.capital" in line for line in first["evidence"])
    assert 0.0 < first["confidence"] < 1.0 and 0.0 < answered["confidence"] < 1.0 and answered["sure"] in (True, False)
    assert answered["topics"] == [{"id": "France", "name": "France"}]

    rows = await call(
        session,
        "cypher",
        query="MATCH (:Entity {id: $id})-[:`location.country.capital`]->(c) RETURN c.name AS capital",
        parameters={"id": "France"},
    )
    assert rows["rows"] == [{"capital": "Paris"}] and rows["truncated"] is False

    message = await refused(session, "cypher", query="MATCH (c:Entity {id: 'Paris'}) SET c.name = 'Lutetia'")
    assert "read-only" in message


def test_an_agent_answers_over_stdio_and_nothing_is_written(default_data):
    before = snapshot(default_data)

    async def session() -> None:
        async with stdio_session(env_for(default_data.settings)) as s:
            await agent_route(s)

    anyio.run(session)
    assert snapshot(default_data) == before
    assert default_data.run_text("MATCH (r:Retrieval) RETURN count(r) AS n") == [{"n": 0}]


def test_an_agent_answers_over_http_and_nothing_is_written(default_data, mcp_url):
    before = snapshot(default_data)

    async def session() -> None:
        async with http_session(mcp_url) as s:
            await agent_route(s)

    anyio.run(session)
    assert snapshot(default_data) == before
    assert default_data.run_text("MATCH (r:Retrieval) RETURN count(r) AS n") == [{"n": 0}]


def test_results_are_capped_and_say_so(mcp_url):
    """The HTTP server here returns at most 3 rows per call: France's 4 nationals come back as 3,
    flagged, and its triples page by 3 without overlap until the last page."""

    async def session() -> None:
        async with http_session(mcp_url) as s:
            people = await call(s, "follow", entity="France", relations=["people.person.nationality"], directions=[-1])
            assert len(people["entities"]) == 3 and people["truncated"] is True
            rows = await call(s, "cypher", query="UNWIND range(1, 10) AS x RETURN x")
            assert rows["rows"] == [{"x": 1}, {"x": 2}, {"x": 3}] and rows["truncated"] is True
            assert (await call(s, "link_entities", text=QUESTION, limit=3))["truncated"] is True

            total = sum(r["count"] for r in (await call(s, "neighbours", entity="France"))["relations"])
            seen, page = [], 0
            while page is not None:
                got = await call(s, "neighbours", entity="France", page=page, page_size=3)
                assert len(got["triples"]) <= 3
                seen += [(t["head_id"], t["relation"], t["tail_id"]) for t in got["triples"]]
                page = got["next_page"]
            assert len(seen) == len(set(seen)) == total

            message = await refused(s, "neighbours", entity="France", page_size=4)
            assert "page_size" in message

    anyio.run(session)


def test_bad_input_is_a_clear_tool_error(mcp_url):
    async def session() -> None:
        async with http_session(mcp_url) as s:
            message = await refused(s, "follow", entity="Atlantis of the North", relations=["location.country.capital"])
            assert "entity: 'Atlantis of the North' is neither the id nor the name" in message
            message = await refused(s, "follow", entity="France", relations=["location.country.capitol"])
            assert "'location.country.capitol', not a relation of this graph" in message
            message = await refused(s, "relation_paths", question="  ", topic="France")
            assert "question: must be a non-empty string" in message
            message = await refused(s, "ask", question="Who wrote the song about nothing in particular?")
            assert "no entity of the graph is mentioned" in message
            message = await refused(s, "cypher", query="MATCH (n RETURN n")
            assert "Neo4j rejected the query" in message

    anyio.run(session)


def test_the_http_endpoint_asks_for_the_service_token_and_keeps_the_apps_lifespan(default_data):
    """`mount_mcp` runs the SDK's session manager inside the app's own lifespan (which still runs), with a
    fresh manager each time the app starts, so the same app can be served twice."""
    events = []

    @asynccontextmanager
    async def own(_app):
        events.append("started")
        yield
        events.append("stopped")

    async def session(base: str) -> None:
        async with http_session(f"{base}/mcp", headers={"Authorization": f"Bearer {TOKEN}"}) as s:
            got = await call(s, "neighbours", entity="Paris", relation="location.country.capital")
            assert [t["head"] for t in got["triples"]] == ["France"]

    with Kgdb(Graph.connect(default_data.settings)) as kg:
        app = FastAPI(lifespan=own)
        mount_mcp(app, kg, ServiceOptions(token=TOKEN, workers=1))
        with serving(app) as base:
            plain = httpx.post(f"{base}/mcp", json={}, headers={"Accept": "application/json, text/event-stream"})
            assert plain.status_code == 401 and "Bearer" in plain.json()["error"]["message"]
            wrong = httpx.post(f"{base}/mcp", json={}, headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 403
            anyio.run(session, base)
        with serving(app) as base:
            anyio.run(session, base)
    assert events == ["started", "stopped", "started", "stopped"]
