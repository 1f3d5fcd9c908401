"""`kgdb ask` and `kgdb eval qa` end to end on a real Neo4j, with the extractive reasoner and with a
real local OpenAI-compatible HTTP server."""

from __future__ import annotations

import json
import shutil
import socket

import pytest

from kgdb.errors import InputError, KgdbError
from kgdb.qa.ask import AskPipeline
from support.bradfield import QUESTIONS, bradfield_graph
from support.cli import invoke as cli
from support.openai_server import OpenAIServer, echo_first_evidence

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def loaded(kept_graph, tmp_path):
    return bradfield_graph(kept_graph, tmp_path)


def test_ask_extractive_answers_with_grounded_evidence(loaded):
    graph, settings = loaded
    pipe = AskPipeline(graph, settings, retriever="subgraphrag", k=20, fmt="triples")
    assert pipe.retriever_note and "cosine-dde" in pipe.retriever_note  # no checkpoint: the shipped default, says so
    res = pipe.ask("what is the capital of jamaica?")
    assert res.reasoning and not res.reasoning.llm_used
    assert [a.answer for a in res.answers][:1] == ["Kingston"]
    assert res.answers[0].grounded and res.answers[0].evidence
    assert res.run and res.topics == ["Jamaica"]
    assert f'{{run: "{res.run}"}}' in res.browser_query and "$run" not in res.browser_query
    assert set(res.timings) >= {"embed", "link", "fetch", "score", "write", "chains", "prompt", "reason"}
    assert "(Jamaica,location.country.capital,Kingston)" in res.evidence_lines
    data = res.to_json()
    assert data["llm_used"] is False and data["run"] == res.run


def test_ask_bad_inputs(loaded):
    graph, settings = loaded
    pipe = AskPipeline(graph, settings, retriever="cosine", k=10, write=False)
    with pytest.raises(InputError, match="the question is empty"):
        pipe.ask("   ")
    with pytest.raises(KgdbError, match="no entity of the graph is mentioned"):
        pipe.ask("zzqx vvrk?")
    with pytest.raises(InputError, match="--format"):
        AskPipeline(graph, settings, retriever="cosine", fmt="xml")
    with pytest.raises(InputError, match="--cap"):  # relation paths have their own frontier bound
        AskPipeline(graph, settings, retriever="relation-paths", cap=5)
    for retriever in ("cosine", "relation-paths"):  # relation paths once took k=0 as "answer from no evidence"
        with pytest.raises(InputError, match="--k: must be positive, got 0"):
            AskPipeline(graph, settings, retriever=retriever, k=0)
    with pytest.raises(InputError, match="--chain-hops: must be positive, got 0"):
        AskPipeline(graph, settings, retriever="cosine", chain_hops=0)
    capped = AskPipeline(graph, settings, retriever="cosine", k=10, cap=1, write=False)
    assert capped.settings_json()["cap"] == 1  # recorded with every answer and eval qa run


def test_ask_through_openai_server_with_chains(loaded):
    graph, settings = loaded
    with OpenAIServer(responder=echo_first_evidence) as server:
        s = settings.with_overrides(llm_base_url=server.base_url, llm_model="kgdb-test-model", llm_max_retries=0)
        pipe = AskPipeline(graph, s, retriever="cosine", k=20, fmt="chains")
        res = pipe.ask("what is the capital of france?", topics=["France"])
        sent = server.requests[-1]["messages"][-1]["content"]
        paths = AskPipeline(graph, s, retriever="cosine", k=20, fmt="paths").ask(
            "what is the capital of france?", topics=["France"]
        )
        sent_paths = server.requests[-1]["messages"][-1]["content"]
    assert sent.startswith("Evidence Chains:\nChain 1. France → [")
    assert sent_paths.startswith("Reasoning Paths:\nFrance → location.") and "[" not in sent_paths.split("Question:")[0]
    assert paths.answers and paths.reasoning.llm_used
    r = res.reasoning
    assert r.llm_used and r.calls == 1 and r.prompt_tokens > 50 and r.completion_tokens > 0
    assert res.answers and res.answers[0].grounded and res.answers[0].evidence


def test_cli_ask_falls_back_when_the_shipped_ranker_does_not_fit(loaded, tmp_path, monkeypatch):
    """A graph embedded with another model than the shipped ranker's: plain `kgdb ask` answers with the
    default retriever and the extractive reasoner instead, and says why RRP did not answer."""
    from kgdb.models import default

    graph, settings = loaded
    misfit = tmp_path / "rrp-ranker-portable"
    shutil.copytree(default.SHIPPED["rrp-ranker"], misfit)
    config = json.loads((misfit / "config.json").read_text())
    config["embedding_model"] = "another-embedding-model"
    (misfit / "config.json").write_text(json.dumps(config))
    monkeypatch.setitem(default.SHIPPED, "rrp-ranker", misfit)
    result = cli(settings, "ask", "what is the capital of jamaica?", "--no-write")
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "the portable rrp-ranker shipped with kgdb does not fit this graph's embedding model" in out
    assert "Reasoner: rrp" not in out and "no LLM was used" in out and "Kingston" in out


def test_an_llm_answer_that_names_no_evidence_entity_is_dropped_and_listed(loaded):
    graph, settings = loaded
    with OpenAIServer(script=[{"content": "ans: Atlantis\nans: Paris"}]) as server:
        s = settings.with_overrides(llm_base_url=server.base_url, llm_model="m", llm_max_retries=0)
        res = AskPipeline(graph, s, retriever="cosine", k=20, write=False).ask("what is the capital of france?")
    assert [(a.answer, a.grounded) for a in res.answers] == [("Paris", True)]
    assert res.reasoning.dropped == ["Atlantis"]


def test_how_an_llm_reply_was_read_is_in_the_json_and_in_eval_records(loaded):
    from kgdb.data.questions import QuestionRecord
    from kgdb.qa.evaluate import question_record
    from kgdb.qa.metrics import MatchRules

    graph, settings = loaded
    with OpenAIServer(responder=lambda messages: "ans: Atlantis\nans: Paris") as server:
        s = settings.with_overrides(llm_base_url=server.base_url, llm_model="m", llm_max_retries=0)
        args = ["ask", "what is the capital of france?", "--json", "--no-write", "--retriever", "cosine"]
        llm = {"KGDB_LLM_BASE_URL": server.base_url, "KGDB_LLM_MODEL": "m", "KGDB_LLM_MAX_RETRIES": "0"}
        data = json.loads(cli(s, *args, "--k", "20", "--reasoner", "openai", env=llm).output)
        asker = AskPipeline(graph, s, retriever="cosine", k=20, write=False)
        rec = question_record(
            asker, QuestionRecord("q1", "what is the capital of france?", [], ["Paris"]), MatchRules()
        )
    for reading in (data["reading"], rec["reading"]):
        assert reading["dropped"] == ["Atlantis"] and set(reading["modes"]) == {"Paris"}
        assert "structured_output" in reading["budget"]
    extractive = json.loads(cli(settings, *args, "--reasoner", "extractive").output)
    assert extractive["reading"] is None  # no LLM: nothing was read from a reply


def test_cli_ask_without_llm(loaded):
    graph, settings = loaded
    # no LLM, nothing trained on this graph: the portable RRP ranker shipped with kgdb answers, and says so
    result = cli(settings, "ask", "what is the capital of jamaica?", "--timings")
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "Reasoner: rrp: no LLM was used" in out and "portable rrp-ranker shipped with kgdb" in out
    assert "Kingston" in out and "Run:" in out and "Timings" in out
    result = cli(
        settings, "ask", "what is the capital of jamaica?", "--timings", "--k", "20", "--reasoner", "extractive"
    )
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "no LLM was used" in out and "Kingston" in out and "Run:" in out and "cosine" in out
    assert "Timings" in out and "reason" in out
    as_json = cli(
        settings, "ask", "what is the capital of france?", "--json", "--no-write", "--retriever", "cosine", "--cap", "7"
    )
    data = json.loads(as_json.output)
    assert data["answers"][0]["answer"] == "Paris" and data["run"] is None
    assert data["retrieval"]["cap"] == 7 and data["retrieval"]["hops"] == 2  # how the evidence was fetched


def test_ask_fetches_with_the_checkpoints_radius_unless_told(loaded):
    graph, settings = loaded
    from kgdb.models.default import shipped_checkpoint

    one_hop = settings.checkpoints_dir / "cosine-dde-1hop"
    shutil.copytree(shipped_checkpoint("cosine-dde"), one_hop)
    config = json.loads((one_hop / "config.json").read_text())
    config["fetch"]["hops"] = 1  # as `kgdb train cosine-dde --hops 1` records it
    (one_hop / "config.json").write_text(json.dumps(config))
    args = [
        "ask",
        "what is the capital of france?",
        "--json",
        "--no-write",
        "--retriever",
        "cosine-dde",
        "--checkpoint",
        str(one_hop),
    ]
    assert json.loads(cli(settings, *args).output)["retrieval"]["hops"] == 1  # the checkpoint's, not a fixed 2
    assert json.loads(cli(settings, *args, "--hops", "2").output)["retrieval"]["hops"] == 2
    zero = cli(settings, *args, "--hops", "0")  # refused, not read as "unset"
    assert zero.exit_code == 1 and "--hops must be between 1 and 4, got 0" in str(zero.exception)


def test_cli_ask_bad_inputs(loaded):
    graph, settings = loaded
    empty = cli(settings, "ask", "  ")
    assert empty.exit_code == 1 and "the question is empty" in str(empty.exception)
    unlinked = cli(settings, "ask", "zzqx vvrk?", "--retriever", "cosine")
    assert unlinked.exit_code == 1 and "no entity of the graph is mentioned" in str(unlinked.exception)


def test_cli_ask_llm_down_still_shows_retrieval(loaded):
    graph, settings = loaded
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {"KGDB_LLM_BASE_URL": f"http://127.0.0.1:{port}/v1", "KGDB_LLM_MODEL": "m", "KGDB_LLM_MAX_RETRIES": "0"}
    result = cli(settings, "ask", "what is the capital of jamaica?", "--retriever", "cosine", "--no-write", env=env)
    assert result.exit_code == 1
    flat = " ".join(result.output.split())  # rich wraps long lines
    assert "reasoner failed" in flat and "cannot connect" in flat
    assert "(Jamaica,location.country.capital,Kingston)" in result.output


def test_cli_ask_malformed_llm_output(loaded):
    graph, settings = loaded
    # replies that name no entity of the evidence: nothing can be read from them
    with OpenAIServer(script=[{"content": "I cannot say."}, {"content": "I cannot say."}]) as server:
        env = {"KGDB_LLM_BASE_URL": server.base_url, "KGDB_LLM_MODEL": "m"}
        result = cli(
            settings,
            "ask",
            "what is the capital of jamaica?",
            "--retriever",
            "cosine",
            "--no-write",
            "--show-prompt",
            env=env,
        )
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "no answer could be read from its reply" in flat and "Triples:" in flat


def test_eval_qa_extractive_then_llm_resumable(loaded, tmp_path):
    graph, settings = loaded
    qfile = tmp_path / "questions.jsonl"
    qfile.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    out = tmp_path / "qa-extractive"
    args = [
        "eval",
        "qa",
        "--questions",
        str(qfile),
        "--split",
        "all",
        "--retriever",
        "cosine",
        "--k",
        "20",
        "--out",
        str(out),
    ]
    result = cli(settings, *args, "--reasoner", "extractive", "--concurrency", "2")
    assert result.exit_code == 0, result.output
    assert "Macro-F1" in result.output and "Hit@1" in result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["overall"]["n"] == 4 and metrics["overall"]["hit"] >= 75.0
    assert metrics["tokens"]["llm_calls"] == 0 and metrics["settings"]["reasoner"]["reasoner"] == "extractive"
    assert {"1-hop", "2-hop"} <= set(metrics["by_hop"])
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 4
    # resumable: a torn last line (crash) is ignored and that question redone; finished ones are not
    (out / "results.jsonl").write_text("\n".join(lines[:2]) + "\n" + lines[2][:30], encoding="utf-8")
    again = cli(settings, *args, "--reasoner", "extractive")
    assert again.exit_code == 0 and "resuming: 2 question(s)" in again.output
    done = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines() if x.endswith("}")]
    assert sorted(r["qid"] for r in done) == ["Q-1", "Q-2", "Q-3", "Q-4"]
    # a different reasoner into the same folder is refused
    clash = cli(
        settings,
        *args,
        "--reasoner",
        "openai",
        env={"KGDB_LLM_MODEL": "m", "KGDB_LLM_BASE_URL": "http://127.0.0.1:9/v1"},
    )
    assert clash.exit_code == 1 and "different run" in str(clash.exception)
    clash = cli(settings, *args, "--reasoner", "extractive", "--cap", "1")  # other subgraphs: not resumed into these
    assert clash.exit_code == 1 and "cap differ" in str(clash.exception)

    with OpenAIServer(responder=echo_first_evidence) as server:
        env = {"KGDB_LLM_BASE_URL": server.base_url, "KGDB_LLM_MODEL": "kgdb-test-model"}
        llm_out = tmp_path / "qa-llm"
        llm = cli(
            settings,
            "eval",
            "qa",
            "--questions",
            str(qfile),
            "--split",
            "all",
            "--retriever",
            "cosine",
            "--reasoner",
            "openai",
            "--k",
            "20",
            "--out",
            str(llm_out),
            env=env,
        )
    assert llm.exit_code == 0, llm.output
    m = json.loads((llm_out / "metrics.json").read_text())
    assert m["tokens"]["avg_prompt_tokens"] > 50 and m["tokens"]["avg_completion_tokens"] > 0
    # one call per question, plus at most one follow-up where the reply named nothing of the evidence
    assert m["tokens"]["llm_calls"] == server.calls and 4 <= server.calls <= 8
    recs = [json.loads(x) for x in (llm_out / "results.jsonl").read_text().splitlines()]
    assert all(r["reply"].startswith("The first triple answers it.") for r in recs)


def test_cli_ask_says_when_the_first_answers_share_one_score(loaded):
    """Two awards at the ends of one relation path: the answer table's caption says the path score did not
    order them and what did (the answer model, or nothing it reads), and a single answer has no such caption."""
    graph, settings = loaded
    args = ("--topic", "John Bradfield", "--reasoner", "rrp", "--no-write")
    tied = cli(settings, "ask", "what awards did john bradfield win?", *args)
    assert tied.exit_code == 0, tied.output
    out = " ".join(tied.output.split())
    assert "Telford Medal" in out and "Peter Nicol Russell Medal" in out
    assert "answers 1-2 share the best path score" in out
    assert "the answer model put the first first by its feature" in out or "keeps the path ranker's order" in out
    payload = json.loads(cli(settings, "ask", "what awards did john bradfield win?", *args, "--json").output)
    assert payload["tied_first"] == 2
    single = cli(settings, "ask", "what is the capital of jamaica?", "--reasoner", "rrp", "--no-write")
    assert single.exit_code == 0, single.output
    assert "Kingston" in single.output and "share the best path score" not in " ".join(single.output.split())
