"""The service's parts that need no database: the exposure rule, the evidence graph read from an
answer's evidence lines, and request validation (FastAPI's own test client; the tests over real HTTP
and a real Neo4j are in tests/db/test_service_http.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

import neo4j
import pytest
from fastapi.testclient import TestClient

from kgdb.api import Kgdb
from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.errors import InputError, KgdbError
from kgdb.server_home import free_port
from kgdb.service.app import create_app
from kgdb.service.evidence_graph import chain_line, evidence_graph, triple_line
from kgdb.service.options import ServiceOptions


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_loopback_needs_no_token(host):
    ServiceOptions(host=host).check_exposure()


def test_beyond_loopback_needs_a_long_token():
    with pytest.raises(KgdbError, match=r"refusing to listen on 0\.0\.0\.0 \(beyond this machine\) without a token"):
        ServiceOptions(host="0.0.0.0").check_exposure()
    with pytest.raises(KgdbError, match="with a 6-character KGDB_SERVE_TOKEN"):
        ServiceOptions(host="10.0.0.5", token="secret").check_exposure()
    ServiceOptions(host="0.0.0.0", token="x" * 16).check_exposure()
    assert "x" * 16 not in repr(ServiceOptions(token="x" * 16))  # never printed


def test_options_name_the_bad_one():
    with pytest.raises(InputError, match="--deadline"):
        ServiceOptions(deadline_s=0)
    with pytest.raises(InputError, match="--workers"):
        ServiceOptions(workers=0)
    assert ServiceOptions(host="0.0.0.0", port=9000).url == "http://127.0.0.1:9000"
    assert ServiceOptions(host="::1", port=9000).url == "http://[::1]:9000"


def test_triple_lines_split_where_known_names_end():
    known = {"Paris, Texas", "Lamar County"}
    assert triple_line("(Paris, Texas,location.location.containedby,Lamar County)", known) == (
        "Paris, Texas",
        "location.location.containedby",
        "Lamar County",
    )
    assert triple_line("(a,r,b)", set()) == ("a", "r", "b")
    assert triple_line("France → [r] → Paris", set()) is None


def test_chain_lines_give_every_step_and_merged_ends():
    known = {"France", "Paris", "Lyon"}
    assert chain_line("Chain 1. France → [capital] → Paris", known) == [("France", "capital", "Paris")]
    assert chain_line("France → [cities] → Paris; Lyon", known) == [
        ("France", "cities", "Paris"),
        ("France", "cities", "Lyon"),
    ]
    assert chain_line("A → B → [r] → C", {"C"}) == [("A → B", "r", "C")]  # a name holding an arrow


@dataclass
class _Answer:
    answer: str
    entity_id: str | None
    evidence: list[str]


@dataclass
class _Result:
    topics: list[str]
    topic_names: list[str]
    answers: list[_Answer]
    evidence_entities: list[str] = field(default_factory=list)


def test_evidence_graph_marks_topics_and_answers_and_resolves_the_rest():
    result = _Result(
        ["m.france"],
        ["France"],
        [_Answer("Paris", "m.paris", ["(France,capital,Paris)", "Paris → [containedby] → Île-de-France"])],
        ["France", "Paris", "Île-de-France"],
    )
    asked: list[list[str]] = []

    def resolve(names):
        asked.append(names)
        return {"Île-de-France": "m.idf"}

    g = evidence_graph(result, resolve)
    assert asked == [["Île-de-France"]]
    assert {(n.id, n.name, n.role) for n in g.nodes} == {
        ("m.france", "France", "topic"),
        ("m.paris", "Paris", "answer"),
        ("m.idf", "Île-de-France", "other"),
    }
    assert [(e.source, e.relation, e.target) for e in g.edges] == [
        ("m.france", "capital", "m.paris"),
        ("m.paris", "containedby", "m.idf"),
    ]


@pytest.fixture
def client():
    """The app over a driver to a port nothing listens on: validation answers before any query."""
    settings = Settings().with_overrides(neo4j_uri=f"bolt://127.0.0.1:{free_port()}")
    driver = neo4j.GraphDatabase.driver(settings.neo4j_uri, auth=("neo4j", "x"))
    with Kgdb(Graph(settings, driver=driver)) as kg:
        yield TestClient(create_app(kg, ServiceOptions(max_body_bytes=500)))


def test_validation_errors_name_the_field(client):
    r = client.post("/v1/ask", json={"question": "x", "k": 0})
    assert r.status_code == 422 and r.json()["error"]["parameter"] == "k"
    r = client.post("/v1/paths", json={"source": "a", "targets": []})
    assert r.status_code == 422 and r.json()["error"]["parameter"] == "targets"
    r = client.post("/v1/ask", json={"question": "x" * 600})
    assert r.status_code == 413 and r.json()["error"]["type"] == "body_too_large"
    assert client.get("/v1/health").json()["status"] == "ok"


def test_openapi_lists_every_operation_with_its_errors(client):
    spec = client.get("/openapi.json").json()
    ops = {(m.upper(), p) for p, item in spec["paths"].items() for m in item}
    assert {
        ("POST", "/v1/ask"),
        ("POST", "/v1/retrieve"),
        ("POST", "/v1/link"),
        ("POST", "/v1/paths"),
        ("GET", "/v1/runs"),
        ("GET", "/v1/runs/{run}"),
        ("POST", "/v1/explain"),
        ("GET", "/v1/health"),
        ("GET", "/v1/ready"),
    } <= ops
    assert {"401", "413", "422", "503", "504"} <= set(spec["paths"]["/v1/ask"]["post"]["responses"])
