"""`kgdb serve` over real HTTP (uvicorn on a free port) against the real Neo4j: answers with their
evidence and run, read-only mode, the bearer token, the body, response and time limits, and the
JSON errors that name the parameter at fault."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest

from kgdb.api import Kgdb
from kgdb.cypher import Graph
from support.service_app import QUESTION, france_kg, retrieval_nodes, serving

TOKEN = "a-test-token-of-some-length"


@pytest.fixture(scope="module")
def kg(neo4j_settings, tmp_path_factory):
    """One warm `Kgdb` over the tiny France graph, shared by the module's services (as `kgdb serve` holds one)."""
    with france_kg(neo4j_settings, tmp_path_factory.mktemp("service")) as kg:
        yield kg


@pytest.fixture(scope="module")
def url(kg):
    with serving(kg) as base:
        yield base


def post(base: str, path: str, body, **kw) -> httpx.Response:
    return httpx.post(f"{base}{path}", json=body, timeout=120, **kw)


def test_ask_answers_with_evidence_run_graph_and_browser_link(url, kg):
    r = post(url, "/v1/ask", {"question": QUESTION})
    assert r.status_code == 200, r.text
    out = r.json()
    first = out["answers"][0]
    assert first["answer"] == "Paris" and first["grounded"] and first["evidence"]
    assert 0.0 < first["confidence"] < 1.0 and 0.0 < out["confidence"] < 1.0 and isinstance(out["sure"], bool)
    assert out["run"] and out["topics"] == ["France"]
    # every field of `kgdb ask --json`
    assert set(kg.ask(QUESTION, write=False).to_json()) <= set(out)
    nodes = {n["id"]: n["role"] for n in out["graph"]["nodes"]}
    assert nodes["France"] == "topic" and nodes["Paris"] == "answer"
    assert {"source": "France", "target": "Paris", "relation": "location.country.capital"} in out["graph"]["edges"]
    assert out["run"] in out["browser_query"]
    http_port = kg.settings.neo4j_http_port
    assert out["browser_url"].startswith("http://") and f":{http_port}/browser/?" in out["browser_url"]
    assert "cmd=edit&arg=" in out["browser_url"]
    # the run it wrote is listed and shown
    runs = httpx.get(f"{url}/v1/runs", params={"limit": 5}).json()["runs"]
    assert out["run"] in [x["run"] for x in runs]
    shown = httpx.get(f"{url}/v1/runs/{out['run']}").json()
    assert shown["run"] == out["run"] and shown["question"] == QUESTION and shown["triples"]


def test_read_only_service_writes_nothing_and_refuses_a_write(kg):
    with serving(kg, read_only=True) as base:
        before = retrieval_nodes(kg)
        r = post(base, "/v1/ask", {"question": QUESTION})
        assert r.status_code == 200, r.text
        assert r.json()["run"] is None and r.json()["answers"][0]["answer"] == "Paris"
        assert r.json()["browser_url"] is None
        retrieved = post(base, "/v1/retrieve", {"question": QUESTION, "retriever": "cosine", "k": 5})
        assert retrieved.status_code == 200 and retrieved.json()["run"] is None
        refused = post(base, "/v1/ask", {"question": QUESTION, "write": True})
        assert refused.status_code == 403
        assert refused.json()["error"] == {
            "type": "read_only",
            "message": "this service is read-only (--read-only): it writes no runs",
            "parameter": "write",
        }
        assert retrieval_nodes(kg) == before


def test_token_is_required_on_every_route_but_health(kg):
    with serving(kg, token=TOKEN) as base:
        missing = post(base, "/v1/ask", {"question": QUESTION})
        assert missing.status_code == 401 and missing.json()["error"]["type"] == "unauthorized"
        assert missing.headers["www-authenticate"].startswith("Bearer")
        wrong = post(base, "/v1/ask", {"question": QUESTION}, headers={"Authorization": "Bearer not-the-token"})
        assert wrong.status_code == 403 and wrong.json()["error"]["parameter"] == "Authorization"
        assert httpx.get(f"{base}/v1/ready").status_code == 401
        assert httpx.get(f"{base}/v1/health").status_code == 200
        good = httpx.get(f"{base}/v1/ready", headers={"Authorization": f"Bearer {TOKEN}"})
        assert good.status_code == 200 and good.json()["entities"] > 0


@pytest.mark.parametrize(
    ("token", "said"),
    [(None, "without a token: set KGDB_SERVE_TOKEN"), ("short", "with a 5-character KGDB_SERVE_TOKEN")],
)
def test_serve_refuses_to_listen_beyond_loopback_without_a_real_token(token, said):
    env = {k: v for k, v in os.environ.items() if k != "KGDB_SERVE_TOKEN"} | {"COLUMNS": "400"}
    if token:
        env["KGDB_SERVE_TOKEN"] = token
    done = subprocess.run(
        [sys.executable, "-m", "kgdb", "serve", "--host", "0.0.0.0", "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert f"refusing to listen on 0.0.0.0 (beyond this machine) {said}" in done.stderr


def test_oversize_body_is_refused_from_its_length_and_while_streaming(kg):
    with serving(kg, max_body_bytes=1000) as base:
        big = {"question": "x" * 2000}
        declared = post(base, "/v1/ask", big)
        assert declared.status_code == 413 and declared.json()["error"]["type"] == "body_too_large"
        assert "1,000 bytes" in declared.json()["error"]["message"]

        def chunks():  # no Content-Length: the limit is found while the body streams in
            data = json.dumps(big).encode()
            for i in range(0, len(data), 256):
                yield data[i : i + 256]

        streamed = httpx.post(
            f"{base}/v1/ask", content=chunks(), headers={"Content-Type": "application/json"}, timeout=60
        )
        assert streamed.status_code == 413 and streamed.json()["error"]["parameter"] == "body"


@pytest.mark.parametrize(
    ("body", "parameter"),
    [
        ({"question": QUESTION, "k": 0}, "k"),
        ({"question": ""}, "question"),
        ({"question": QUESTION, "topics": [""]}, "topics[0]"),
        ({"question": QUESTION, "topics": "France"}, "topics"),
        ({"question": QUESTION, "kk": 3}, "kk"),
        ({"k": 3}, "question"),
    ],
)
def test_invalid_fields_are_422_naming_the_field(url, body, parameter):
    r = post(url, "/v1/ask", body)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["type"] == "validation" and r.json()["error"]["parameter"] == parameter


def test_malformed_json_and_bad_query_parameters_are_422(url):
    r = httpx.post(f"{url}/v1/ask", content=b'{"question": ', headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and r.json()["error"]["type"] == "validation"
    r = httpx.get(f"{url}/v1/runs", params={"limit": "many"})
    assert r.status_code == 422 and r.json()["error"]["parameter"] == "limit"


def test_kgdb_input_errors_are_422_naming_the_parameter(url):
    r = post(url, "/v1/ask", {"question": QUESTION, "reasoner": "no-such-reasoner"})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["parameter"] is not None
    r = post(url, "/v1/ask", {"question": "hello there"})  # names no entity of the graph
    assert r.status_code == 422 and "no entity of the graph is mentioned" in r.json()["error"]["message"]


def test_unknown_run_and_unknown_entity_are_404(url):
    r = httpx.get(f"{url}/v1/runs/no-such-run")
    assert r.status_code == 404 and r.json()["error"] == {
        "type": "not_found",
        "message": "no retrieval run 'no-such-run' (see `kgdb runs list`)",
        "parameter": "run",
    }
    r = post(url, "/v1/paths", {"source": "France", "targets": ["Atlantis"]})
    assert r.status_code == 404 and r.json()["error"]["parameter"] == "targets"
    assert httpx.get(f"{url}/v1/nowhere").json()["error"]["type"] == "not_found"


def test_deadline_is_504(kg):
    with serving(kg, deadline_s=0.001) as base:
        r = post(base, "/v1/ask", {"question": QUESTION})
        assert r.status_code == 504 and r.json()["error"]["type"] == "deadline"


def test_response_over_the_limit_is_refused_naming_what_sizes_it(kg):
    with serving(kg, max_response_bytes=300, read_only=True) as base:
        r = post(base, "/v1/ask", {"question": QUESTION})
        assert r.status_code == 422
        assert r.json()["error"]["type"] == "response_too_large" and r.json()["error"]["parameter"] == "k"


def test_link_paths_retrieve_explain_and_ready(url):
    linked = post(url, "/v1/link", {"text": QUESTION, "k": 3}).json()["entities"]
    assert linked[0]["id"] == "France" and linked[0]["mention"]
    paths = post(url, "/v1/paths", {"source": "France", "targets": ["Paris"]}).json()["paths"]
    steps = [(s["head_name"], s["relation"], s["tail_name"]) for p in paths for s in p["triples"]]
    assert ("France", "location.country.capital", "Paris") in steps
    top = post(url, "/v1/retrieve", {"question": QUESTION, "retriever": "cosine", "k": 3, "write": False}).json()
    assert top["run"] is None and ("France", "Paris") in [(t["head"], t["tail"]) for t in top["top"]]
    plan = post(url, "/v1/explain", {}).json()
    assert plan["retriever"] == "relation-paths" and plan["decisions"]
    ready = httpx.get(f"{url}/v1/ready").json()
    assert ready["status"] == "ready" and ready["entities"] == 7


def test_a_lost_database_is_503(neo4j_settings):
    """A service whose Neo4j is gone (nothing listens on its port) answers 503, never 500."""
    import neo4j

    from kgdb.server_home import free_port

    dead = neo4j_settings.with_overrides(neo4j_uri=f"bolt://127.0.0.1:{free_port()}")
    driver = neo4j.GraphDatabase.driver(dead.neo4j_uri, auth=("neo4j", "x"), connection_acquisition_timeout=5)
    with Kgdb(Graph(dead, driver=driver)) as kg, serving(kg) as base:
        assert httpx.get(f"{base}/v1/health").status_code == 200
        ready = httpx.get(f"{base}/v1/ready", timeout=60)
        assert ready.status_code == 503 and ready.json()["error"]["type"] == "database_unavailable"
        runs = httpx.get(f"{base}/v1/runs", timeout=60)
        assert runs.status_code == 503


def test_kgdb_serve_warms_up_prints_its_url_and_answers(kg, tmp_path):
    """The command as a user runs it: it loads the models before listening, says where it listens,
    and its first answer comes from the warm models."""
    import time

    from kgdb.server_home import free_port

    port = free_port()
    s = kg.settings
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KGDB_LLM_", "KGDB_SERVE_"))} | {
        "KGDB_NEO4J_URI": s.neo4j_uri,
        "KGDB_NEO4J_PASSWORD": s.neo4j_password.get_secret_value(),
        "KGDB_CACHE_DIR": str(s.cache_dir),
        "KGDB_CHECKPOINTS_DIR": str(s.checkpoints_dir),
        "KGDB_RUNS_DIR": str(s.runs_dir),
        "COLUMNS": "400",
    }
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kgdb", "serve", "--read-only", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 240
        while f"{base}/v1" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        printed = log.read_text()
        assert "connecting to Neo4j at" in printed and "warmed up in" in printed and "read-only" in printed
        for _ in range(100):  # the URL is printed just before uvicorn binds the port
            try:
                ready = httpx.get(f"{base}/v1/ready")
                break
            except httpx.ConnectError:
                time.sleep(0.1)
        assert ready.status_code == 200
        r = post(base, "/v1/ask", {"question": QUESTION})
        assert r.status_code == 200 and r.json()["answers"][0]["answer"] == "Paris" and r.json()["run"] is None
        assert sum(r.json()["timings_ms"].values()) < 30_000
    finally:
        proc.terminate()
        proc.wait(timeout=60)
