"""A database killed in the middle of `eval qa` or `eval retrieval` ends the run with one clear
line: no question is recorded from a failed query, a rerun resumes where it stopped and gives the
metrics of an undisturbed run, and `eval retrieval` never leaves two runs of one question.

These tests stop and restart a server, so they start their own on free ports (as tests/conftest.py
does for the shared one) rather than stopping the one other tests use; sharing nothing else, they run in
the background from the session's start (`support.head_start`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from kgdb.config import Settings
from kgdb.cypher import Graph
from support import head_start
from support.cli import KGDB
from support.graphs import load
from support.jamaica import QUESTIONS, TRIPLES
from support.spare_servers import base_settings, environment, spare_server

PASSWORD = "kgdb-fault-password"


_fault_server: list = []


def _loaded(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """The fault server (started on first use), the Jamaica graph on it, and many copies of its questions
    (own ids: a run long enough to stop the server in its middle)."""
    if not _fault_server:
        server = spare_server(tmp_path_factory.mktemp("neo4j-faults"), PASSWORD)
        server.start(log=lambda *_: None)
        settings = base_settings().with_overrides(neo4j_uri=server.bolt_uri, neo4j_password=PASSWORD)
        with Graph.connect(settings) as graph:
            load(graph, TRIPLES)
        rows = [{**q, "id": f"{q['id']}-{copy}"} for copy in range(8) for q in QUESTIONS]
        questions = tmp_path_factory.mktemp("eval-faults") / "many.jsonl"
        questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        _fault_server.append((server, settings, questions, len(rows)))
    return _fault_server[0]


def _env(settings: Settings, tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in environment().items() if not k.startswith("KGDB_")}
    return {
        **env,
        "COLUMNS": "300",
        "KGDB_NEO4J_URI": settings.neo4j_uri,
        "KGDB_NEO4J_PASSWORD": PASSWORD,
        "KGDB_CACHE_DIR": str(tmp / "cache"),
        "KGDB_CHECKPOINTS_DIR": str(tmp / "ckpt"),
        "KGDB_RUNS_DIR": str(tmp / "runs"),
        "KGDB_CONFIG": os.devnull,
    }


def _kgdb(env, *args: str) -> subprocess.CompletedProcess:

    return subprocess.run([*KGDB, *args], capture_output=True, text=True, env=env, timeout=600)


def _lines(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "qid" in rec:
            out.append(rec)
    return out


def _stop_midway(server, env, args: list[str], log: Path, after: int) -> subprocess.CompletedProcess:
    """Run `kgdb *args`, kill the server once `log` holds `after` records, and wait for the command."""

    proc = subprocess.Popen([*KGDB, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and len(_lines(log)) < after:
        time.sleep(0.05)
    assert proc.poll() is None, f"the run ended before the server could be stopped: {proc.communicate()}"
    pid = server.pid()
    os.kill(pid, signal.SIGKILL)  # killed, as an out-of-memory killer or a crash would
    psutil.Process(pid).wait(timeout=60)
    try:
        out, err = proc.communicate(timeout=600)
    finally:
        server.start(log=lambda *_: None)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _eval_qa_stopped_midway(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    server, settings, questions, total = _loaded(tmp_path_factory)
    tmp_path = tmp_path_factory.mktemp("eval-faults-run")
    env = _env(settings, tmp_path)
    args = [
        "eval",
        "qa",
        "--questions",
        str(questions),
        "--retriever",
        "cosine",
        "--reasoner",
        "extractive",
        "--concurrency",
        "2",
    ]
    clean = _kgdb(env, *args, "--out", str(tmp_path / "clean"))
    assert clean.returncode == 0, clean.stderr
    expected = json.loads((tmp_path / "clean" / "metrics.json").read_text())

    out_dir = tmp_path / "stopped"
    stopped = _stop_midway(server, env, [*args, "--out", str(out_dir)], out_dir / "results.jsonl", after=5)
    line = _one_line(stopped.stderr)
    assert stopped.returncode == 1 and "evaluation stopped" in line and "run the same command again" in line, line
    kept = _lines(out_dir / "results.jsonl")
    assert 5 <= len(kept) < total
    assert not [r for r in kept if r.get("stage") or r.get("error")], "a failed query was recorded as an answer"

    resumed = _kgdb(env, *args, "--out", str(out_dir))
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming:" in resumed.stdout
    metrics = json.loads((out_dir / "metrics.json").read_text())
    assert metrics["overall"] == expected["overall"] and metrics["errors"] == expected["errors"]
    assert metrics["settings"]["kgdb_version"]


def _no_topic_rows_asked_again(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Files written before the rule may hold such rows: they are recomputed, not kept."""
    server, settings, questions, total = _loaded(tmp_path_factory)
    tmp_path = tmp_path_factory.mktemp("eval-faults-run")
    env = _env(settings, tmp_path)
    args = [
        "eval",
        "qa",
        "--questions",
        str(questions),
        "--retriever",
        "cosine",
        "--reasoner",
        "extractive",
        "--out",
        str(tmp_path / "out"),
    ]
    assert _kgdb(env, *args).returncode == 0
    results = tmp_path / "out" / "results.jsonl"
    rows = _lines(results)
    fake = {
        **rows[0],
        "stage": "no_topic_in_graph",
        "answers": [],
        "error": "none of the topics is an entity of the graph",
    }
    results.write_text("".join(json.dumps(r) + "\n" for r in [fake, *rows[1:]]), encoding="utf-8")
    again = _kgdb(env, *args)
    assert again.returncode == 0 and "resuming: " + str(total - 1) in again.stdout, again.stdout
    final = {r["qid"]: r for r in _lines(results)}
    assert final[rows[0]["qid"]].get("stage") is None and final[rows[0]["qid"]]["answers"] == rows[0]["answers"]


def _eval_retrieval_stopped_midway(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    server, settings, questions, total = _loaded(tmp_path_factory)
    tmp_path = tmp_path_factory.mktemp("eval-faults-run")
    env = _env(settings, tmp_path)
    out_dir = tmp_path / "eval"
    args = [
        "eval",
        "retrieval",
        "--questions",
        str(questions),
        "--retriever",
        "cosine",
        "--cap",
        "50",
        "--hops",
        "2",
        "--write",
        "--out",
        str(out_dir),
    ]
    log = out_dir / f"eval-many-{_tag(questions)}-all-cosine-cap50-hops2.jsonl"
    with Graph.connect(settings) as graph:
        graph.run_auto("MATCH (r:Retrieval) DETACH DELETE r")
        graph.run_auto("MATCH ()-[s:SCORED]->() DELETE s")
    stopped = _stop_midway(server, env, args, log, after=5)
    line = _one_line(stopped.stderr)
    assert stopped.returncode == 1 and "evaluation stopped" in line and "run the same command again" in line, line
    kept = len(_lines(log))
    assert 5 <= kept < total

    resumed = _kgdb(env, *args)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming: {kept} of {total}" in resumed.stdout, resumed.stdout
    report = json.loads(log.with_suffix(".json").read_text())
    assert report["evaluated"] == total and report["kgdb_version"]
    with Graph.connect(settings) as graph:
        runs = graph.run_text("MATCH (r:Retrieval) RETURN r.qid AS qid, count(*) AS n")
    assert len(runs) == total and all(r["n"] == 1 for r in runs), runs

    log.unlink()  # evaluated again from scratch: each question's run is replaced, not added
    assert _kgdb(env, *args).returncode == 0
    with Graph.connect(settings) as graph:
        assert graph.run_text("MATCH (r:Retrieval) RETURN count(r) AS n")[0]["n"] == total


def _tag(path: Path) -> str:
    from kgdb.data.questions import file_tag

    return file_tag(path)


@pytest.mark.head_start.with_args(_eval_qa_stopped_midway)
def test_a_server_stopped_during_eval_qa_stops_the_run_and_a_rerun_resumes_to_the_undisturbed_metrics(tmp_path_factory):
    head_start.result(_eval_qa_stopped_midway, tmp_path_factory)


@pytest.mark.head_start.with_args(_no_topic_rows_asked_again)
def test_a_resumed_eval_qa_asks_again_rows_a_lost_server_recorded_as_no_topic(tmp_path_factory):
    head_start.result(_no_topic_rows_asked_again, tmp_path_factory)


@pytest.mark.head_start.with_args(_eval_retrieval_stopped_midway)
def test_a_server_stopped_during_eval_retrieval_resumes_without_duplicate_runs(tmp_path_factory):
    head_start.result(_eval_retrieval_stopped_midway, tmp_path_factory)
