"""An LLM server that dies in the middle of `kgdb eval qa` ends the run as a lost database does: one clear
line naming the endpoint, a non-zero exit, no question recorded from a failed call (run again while the
server is down, it stops the same way); once the server is back, the same command resumes and asks each
missing question once.

The server is the OpenAI-protocol test server in its own process (tests/support/openai_server.py), told
to die on a request after answering a few, as a crashed server does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from kgdb.server_home import free_port
from support import ROOT
from support.cli import KGDB
from support.jamaica import QUESTIONS, TRIPLES
from support.openai_server import OpenAIServer, echo_first_evidence

SERVER = ROOT / "tests" / "support" / "openai_server.py"
ANSWERED = 5  # completions the first server gives before it dies


def _start_llm(port: int, log: Path, *extra: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", str(port), "--log", str(log), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1):
                return proc
        except OSError:
            assert proc.poll() is None, "the test LLM server did not start"
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("the test LLM server did not answer in 30 s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)


def _records(path: Path) -> list[dict]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if "qid" in rec:
            out.append(rec)
    return out


def _prompts(log: Path) -> list[str]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.is_file() else []


@pytest.fixture
def eval_env(kept_graph, tmp_path):
    graph = kept_graph(TRIPLES)
    rows = [{**q, "id": f"{q['id']}-{copy}"} for copy in range(3) for q in QUESTIONS]
    questions = tmp_path / "many.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    port = free_port()
    s = graph.settings
    env = {k: v for k, v in os.environ.items() if not k.startswith("KGDB_")}
    env.update(
        COLUMNS="300",
        KGDB_NEO4J_URI=s.neo4j_uri,
        KGDB_NEO4J_USER=s.neo4j_user,
        KGDB_NEO4J_PASSWORD=s.neo4j_password.get_secret_value(),
        KGDB_NEO4J_DATABASE=s.neo4j_database,
        KGDB_CACHE_DIR=str(tmp_path / "cache"),
        KGDB_CHECKPOINTS_DIR=str(tmp_path / "ckpt"),
        KGDB_RUNS_DIR=str(tmp_path / "runs"),
        KGDB_CONFIG=os.devnull,
        KGDB_LLM_BASE_URL=f"http://127.0.0.1:{port}/v1",
        KGDB_LLM_MODEL="kgdb-test-model",
        KGDB_LLM_MAX_RETRIES="1",
        KGDB_LLM_TIMEOUT="10",
    )
    args = [
        *KGDB,
        "eval",
        "qa",
        "--questions",
        str(questions),
        "--retriever",
        "cosine",
        "--reasoner",
        "openai",
        "--concurrency",
        "2",
        "--out",
        str(tmp_path / "out"),
    ]
    return env, args, port, len(rows), tmp_path


def test_a_dead_llm_stops_eval_qa_and_a_rerun_asks_the_missing_questions_once(eval_env):
    env, args, port, total, tmp = eval_env
    results = tmp / "out" / "results.jsonl"
    first_log, second_log = tmp / "first.log", tmp / "second.log"

    server = _start_llm(port, first_log, "--exit-after", str(ANSWERED))
    try:
        stopped = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    finally:
        _stop(server)
    lines = [line for line in stopped.stderr.splitlines() if line.strip()]
    assert stopped.returncode == 1, (stopped.returncode, stopped.stdout[-2000:], stopped.stderr[-2000:])
    assert len(lines) == 1 and "Traceback" not in stopped.stderr, stopped.stderr
    assert env["KGDB_LLM_BASE_URL"] in lines[0] and "run the same command again" in lines[0], lines[0]
    kept = _records(results)
    assert len(kept) == len(_prompts(first_log)) == ANSWERED
    assert not [r for r in kept if r.get("stage") or r.get("error")], "a failed LLM call was recorded as an answer"

    # Run again while the server is still down: the same clear stop, not "results of a different run".
    down = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    assert down.returncode == 1 and env["KGDB_LLM_BASE_URL"] in down.stderr, down.stderr[-2000:]
    assert "different run" not in down.stderr and "Traceback" not in down.stderr, down.stderr[-2000:]
    assert len(_records(results)) == ANSWERED

    server = _start_llm(port, second_log)
    try:
        resumed = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    finally:
        _stop(server)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resuming: {ANSWERED} question(s)" in resumed.stdout, resumed.stdout[-2000:]
    records = _records(results)
    assert sorted(r["qid"] for r in records) == sorted(f"{q['id']}-{c}" for c in range(3) for q in QUESTIONS)
    assert not [r for r in records if r.get("stage") or r.get("error")]
    assert len(_prompts(second_log)) == total - ANSWERED  # each missing question asked once, no other


def test_an_llm_failure_of_one_question_is_recorded_and_the_run_goes_on(eval_env):
    """The endpoint answers, it only refused one request: that is the question's own failure, as before."""
    env, args, port, total, tmp = eval_env
    refusal = {"status": 400, "message": "this request is not accepted"}
    with OpenAIServer(script=[refusal], responder=echo_first_evidence, port=port):
        done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    records = _records(tmp / "out" / "results.jsonl")
    failed = [r for r in records if r.get("stage")]
    assert len(records) == total and len(failed) == 1, failed
    assert failed[0]["stage"] == "reasoner" and "not accepted" in failed[0]["error"]
