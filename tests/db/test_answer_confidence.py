"""The answer model on a real server: `kgdb ask` prints a confidence beside every answer and "not sure" below
the threshold, `--json` and the Python API carry it, the run's answers are written back with it for Neo4j
Browser, the Browser query is printed only when asked for, and unsure questions can be escalated to an LLM."""

from __future__ import annotations

import json

import pytest

from kgdb.qa.ask import AskPipeline
from support.bradfield import QUESTIONS, bradfield_graph
from support.cli import invoke as cli
from support.openai_server import OpenAIServer

pytestmark = pytest.mark.usefixtures("one_thread")

AWARDS = "what awards did john bradfield win?"


@pytest.fixture
def loaded(kept_graph, tmp_path):
    return bradfield_graph(kept_graph, tmp_path)


def test_every_answer_carries_a_calibrated_confidence_and_the_run_keeps_it(loaded):
    graph, settings = loaded
    res = AskPipeline(graph, settings, retriever=None, reasoner="rrp").ask(AWARDS, ["John Bradfield"])
    assert {a.answer for a in res.answers} == {"Telford Medal", "Peter Nicol Russell Medal"}
    assert 0.0 < res.confidence < 1.0 and res.min_confidence is not None
    assert res.sure == (res.confidence >= res.min_confidence)
    assert all(a.confidence is not None and 0.0 < a.confidence < 1.0 for a in res.answers)
    payload = res.to_json()
    assert payload["confidence"] == res.confidence and payload["answers"][0]["confidence"] == res.answers[0].confidence
    # written back: the run's confidence and its answers in order, each with its own, for Browser
    rows = graph.run("browser/run_answers", run=res.run)
    assert rows and all(r["confidence"] == pytest.approx(res.confidence) and r["sure"] == res.sure for r in rows)
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert [r["answer"] for r in rows][: len(res.answers)] == [a.answer for a in res.answers]
    assert [r["answer_confidence"] for r in rows][: len(res.answers)] == pytest.approx(
        [a.confidence for a in res.answers]
    )


def test_ask_says_not_sure_below_the_threshold_and_names_the_competitors(loaded):
    _, settings = loaded
    args = ("--topic", "John Bradfield", "--reasoner", "rrp", "--no-write")
    unsure = cli(settings, "ask", AWARDS, *args, "--min-confidence", "1.0")
    assert unsure.exit_code == 0, unsure.output
    out = " ".join(unsure.output.split())
    assert "Not sure:" in out and "below 1.00" in out and "competing:" in out
    sure = cli(settings, "ask", AWARDS, *args, "--min-confidence", "0")
    out = " ".join(sure.output.split())
    assert "Answer:" in out and "(confidence 0." in out and "Not sure" not in out
    # the answers table shows each answer's confidence, not "grounded: yes"
    assert "┃ confidence ┃" in sure.output and "┃ grounded ┃" not in sure.output
    payload = json.loads(cli(settings, "ask", AWARDS, *args, "--json", "--min-confidence", "1.0").output)
    assert payload["sure"] is False and payload["min_confidence"] == 1.0
    bad = cli(settings, "ask", AWARDS, *args, "--min-confidence", "1.5")
    assert bad.exit_code != 0 and "--min-confidence" in bad.output


def test_the_browser_query_is_printed_only_when_asked_for(loaded):
    _, settings = loaded
    args = ("what is the capital of jamaica?", "--reasoner", "rrp")
    plain = cli(settings, "ask", *args)
    assert plain.exit_code == 0, plain.output
    assert "MATCH (ret:Retrieval" not in plain.output and "-v" in plain.output
    verbose = cli(settings, "ask", *args, "-v")
    assert "MATCH (ret:Retrieval" in verbose.output
    only = cli(settings, "ask", *args, "--browser-query")
    assert only.output.lstrip().startswith("//") and "Kingston" not in only.output


def test_without_an_answer_model_answers_keep_the_ranker_order_and_no_confidence(loaded):
    _, settings = loaded
    res = cli(
        settings,
        "ask",
        AWARDS,
        "--topic",
        "John Bradfield",
        "--reasoner",
        "rrp",
        "--no-write",
        "--json",
        env={"KGDB_ANSWER_MODEL": "none"},
    )
    payload = json.loads(res.output)
    assert payload["confidence"] is None and payload["sure"] is None
    assert all(a["confidence"] is None for a in payload["answers"])
    missing = cli(settings, "ask", AWARDS, "--no-write", env={"KGDB_ANSWER_MODEL": "/nonexistent/answer-model"})
    assert missing.exit_code != 0 and "/nonexistent/answer-model" in str(missing.exception)


def test_escalation_sends_only_unsure_questions_to_the_llm(loaded, tmp_path):
    """`--escalate-below`: questions the answer model is sure of are answered without the LLM, the others by the
    candidates reasoner over a real HTTP endpoint; `eval qa` counts each route and the tokens spent."""
    _, settings = loaded
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n", encoding="utf-8")
    with OpenAIServer(responder=lambda messages: "ans: Kingston") as server:
        env = {"KGDB_LLM_BASE_URL": server.base_url, "KGDB_LLM_MODEL": "kgdb-test-model"}
        base = ("eval", "qa", "--questions", str(qfile), "--split", "all", "--retriever", "relation-paths")
        never = cli(
            settings, *base, "--reasoner", "candidates", "--escalate-below", "0", "--out", str(tmp_path / "a"), env=env
        )
        assert never.exit_code == 0, never.output
        assert server.calls == 0  # every question answered without the LLM
        routes = json.loads((tmp_path / "a" / "metrics.json").read_text())["escalation"]
        assert routes["escalated"] == 0 and routes["n"] == len(QUESTIONS) and routes["prompt_tokens"] == 0
        always = cli(
            settings, *base, "--reasoner", "candidates", "--escalate-below", "1", "--out", str(tmp_path / "b"), env=env
        )
        assert always.exit_code == 0, always.output
        routes = json.loads((tmp_path / "b" / "metrics.json").read_text())["escalation"]
        assert routes["escalated"] == len(QUESTIONS) and server.calls >= len(QUESTIONS) and routes["prompt_tokens"] > 0
        assert "went to the LLM" in " ".join(always.output.split())
    # escalation without an LLM reasoner is refused up front, naming the option
    refused = cli(settings, "ask", AWARDS, "--reasoner", "rrp", "--escalate-below", "0.5", "--no-write")
    assert refused.exit_code != 0 and "--escalate-below" in str(refused.exception)
