"""Grounded answers from any LLM reply, prompts fitted to the endpoint's context in tokens, and
requests that queue for a local server's one slot: against the real HTTP stub server."""

from __future__ import annotations

import threading
import time

import pytest

from kgdb.protocol import ScoredPath
from kgdb.qa.prompts import build_prompt, load_template
from kgdb.qa.reasoners import Evidence, LLMError
from kgdb.qa.reasoners.candidates import CandidatesReasoner
from kgdb.qa.reasoners.openai_compatible import OpenAIReasoner
from kgdb.qa.reasoners.replies import ANS_LINE, FREE_TEXT, SCHEMA, SCHEMA_AFTER_PROSE, Names, read_reply
from kgdb.qa.token_budget import context_from_error, forget_endpoints
from support.evidence import T
from support.openai_server import OpenAIServer, echo_first_evidence

TRIPLES = [
    T("France", "location.country.capital", "Paris", 1.0, "France", "Paris"),
    T("France", "location.location.contains", "Lyon", 0.5, "France", "Lyon"),
    T("Paris", "location.location.containedby", "Île-de-France", 0.4, "Paris", "Île-de-France"),
]
QUESTION = "what is the capital of France"
EVIDENCE = Evidence(QUESTION, TRIPLES, ["France"], ["France"], set())
LINES = [f"({t.head},{t.relation},{t.tail})" for t in TRIPLES]
NAMES = Names(["France", "Paris", "Lyon", "Île-de-France"], QUESTION)


@pytest.fixture(autouse=True)
def _fresh_endpoints():
    forget_endpoints()  # every stub server is a new endpoint, even on a reused port
    yield
    forget_endpoints()


@pytest.mark.parametrize(
    "reply, answers, mode",
    [
        ('{"answers": ["Paris"]}', ["Paris"], SCHEMA),
        ('{"answers": ["Paris", "Ly', ["Paris"], SCHEMA),  # cut off by max_tokens
        ("Paris", ["Paris"], FREE_TEXT),
        ("The capital of France is Paris.", ["Paris"], FREE_TEXT),
        ("(Paris)", ["Paris"], FREE_TEXT),
        ("- paris", ["Paris"], FREE_TEXT),
        ("Reasoning first.\nans: Paris", ["Paris"], ANS_LINE),
        ("ans: The capital is Paris", ["Paris"], ANS_LINE),
        ("ans: ILE-DE-FRANCE", ["Île-de-France"], ANS_LINE),
    ],
)
def test_a_reply_in_any_form_yields_the_evidence_entity_it_names(reply, answers, mode):
    out = read_reply(reply, NAMES, structured=reply.startswith("{"))
    assert out.answers == answers and all(out.modes[a] == mode for a in answers) and not out.malformed


def test_names_the_question_contains_are_not_taken_for_answers():
    out = read_reply("France has its capital in Paris.", NAMES)
    assert out.answers == ["Paris"]


def test_the_worked_example_answers_are_dropped_as_not_in_the_evidence():
    example = load_template("triples", 1).sections["example_assistant"]
    out = read_reply(example, NAMES)
    assert out.answers == [] and "Pritzker Architecture Prize" in out.dropped


def test_a_refusal_is_a_refusal_not_a_malformed_reply():
    out = read_reply("ans: not available", NAMES)
    assert out.refused and not out.malformed and out.answers == []
    assert read_reply("I cannot tell.", NAMES).malformed


def test_the_context_length_in_a_servers_error_is_read():
    assert context_from_error("Requested tokens (5000) exceed context window of 2048") == 2048
    assert context_from_error("This model's maximum context length is 4096 tokens. However, ...") == 4096
    assert context_from_error("bad request") is None


def _reasoner(server: OpenAIServer, **kw) -> OpenAIReasoner:
    return OpenAIReasoner(server.base_url, "kgdb-test-model", "test-key", **kw)


def test_structured_output_constrains_answers_to_evidence_names_and_drops_the_example():
    with OpenAIServer(responder=echo_first_evidence, structured="json") as server:
        out = _reasoner(server).reason(build_prompt("triples", QUESTION, LINES), EVIDENCE)
    sent = server.requests[0]
    enum = sent["response_format"]["json_schema"]["schema"]["properties"]["answers"]["items"]["enum"]
    assert set(enum) == {"France", "Paris", "Lyon", "Île-de-France"}
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]  # no worked example to copy
    assert out.answers == ["Paris"] and out.modes == {"Paris": SCHEMA} and out.budget["structured_output"]


def test_llama_cpp_pythons_server_gets_the_schema_in_its_own_dialect():
    with OpenAIServer(responder=echo_first_evidence, structured="llama-cpp-python") as server:
        out = _reasoner(server).reason(build_prompt("triples", QUESTION, LINES), EVIDENCE)
    sent = server.requests[0]["response_format"]
    assert sent["type"] == "json_object" and "Paris" in sent["schema"]["properties"]["answers"]["items"]["enum"]
    assert not server.rejected and out.answers == ["Paris"] and out.modes == {"Paris": SCHEMA}
    assert out.budget["tokenizer"] == "/extras/tokenize"


def test_an_endpoint_without_structured_output_is_asked_in_prose_from_then_on():
    with OpenAIServer(responder=lambda m: "The capital of France is Paris.", structured="reject") as server:
        r = _reasoner(server)
        first = r.reason(build_prompt("triples", QUESTION, LINES), EVIDENCE)
        second = r.reason(build_prompt("triples", QUESTION, LINES), EVIDENCE)
    assert len(server.rejected) == 1 and server.calls == 2  # support detected once per endpoint
    assert "response_format" not in server.requests[1]
    assert first.answers == second.answers == ["Paris"] and first.modes == {"Paris": FREE_TEXT}


def test_a_server_that_ignores_the_schema_is_read_tolerantly():
    with OpenAIServer(responder=lambda m: "Paris", structured="ignore") as server:
        r = _reasoner(server)
        out = r.reason(build_prompt("triples", QUESTION, LINES), EVIDENCE)
        r.reason(build_prompt("triples", QUESTION, LINES), EVIDENCE)
    assert out.answers == ["Paris"] and r.endpoint.structured is False
    assert "response_format" not in server.requests[-1]


def _many_lines(n: int) -> tuple[list[str], Evidence]:
    triples = [
        T(
            "France",
            f"rel.r{i}",
            f"Place{i} in a region with a very long descriptive name here",
            1.0 - i / n,
            "France",
            f"p{i}",
        )
        for i in range(n)
    ]
    return [f"({t.head},{t.relation},{t.tail})" for t in triples], Evidence(
        QUESTION, triples, ["France"], ["France"], set()
    )


@pytest.mark.parametrize("report_context", [True, False])
def test_a_100_line_prompt_is_fitted_to_a_small_context_and_the_cut_recorded(report_context):
    lines, evidence = _many_lines(100)
    with OpenAIServer(
        responder=lambda m: "ans: Place0 in a region with a very long descriptive name here",
        context=1500,
        report_context=report_context,
    ) as server:
        out = _reasoner(server, structured=False).reason(build_prompt("triples", QUESTION, lines), evidence)
    assert out.answers == ["Place0 in a region with a very long descriptive name here"]
    assert 0 < out.budget["lines_sent"] < 100 and out.budget["lines_cut"] == 100 - out.budget["lines_sent"]
    assert out.budget["context"] == 1500
    sent = server.requests[-1]
    assert "Place0 in a region" in sent["messages"][-1]["content"]  # the best-ranked lines stay
    assert "Place99 in a region" not in sent["messages"][-1]["content"]
    assert len(server.rejected) == (0 if report_context else 1)  # learnt from the server's 400 otherwise


def test_a_request_that_cannot_fit_is_one_clear_error():
    with OpenAIServer(context=40) as server, pytest.raises(LLMError, match=r"context holds 40 .*--n_ctx"):
        _reasoner(server, structured=False).reason(build_prompt("triples", QUESTION, LINES), EVIDENCE)
    assert server.calls == 0


def test_requests_to_a_one_slot_local_server_go_one_at_a_time():
    active, most = 0, 0
    lock = threading.Lock()

    def slow(messages):
        nonlocal active, most
        with lock:
            active += 1
            most = max(most, active)
        time.sleep(0.2)
        with lock:
            active -= 1
        return "ans: Paris"

    with OpenAIServer(responder=slow) as server:
        r = _reasoner(server)
        assert r.timeout == 600.0 and r.endpoint.slots == 1
        threads = [
            threading.Thread(target=r.reason, args=(build_prompt("triples", QUESTION, LINES), EVIDENCE))
            for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert server.calls == 4 and most == 1


def test_the_llm_chooses_among_the_no_llm_answerers_candidates():
    paths = (
        ScoredPath(0.9, ("France", "Lyon"), ("location.location.contains",), (1,), ("France", "Lyon")),
        ScoredPath(0.8, ("France", "Paris"), ("location.country.capital",), (1,), ("France", "Paris")),
    )
    evidence = Evidence(QUESTION, TRIPLES, ["France"], ["France"], set(), paths=paths, from_paths=True)
    with OpenAIServer(responder=lambda m: "ans: Paris", structured="json") as server:
        out = CandidatesReasoner(_reasoner(server)).reason(build_prompt("paths", QUESTION, []), evidence)
    user = server.requests[0]["messages"][-1]["content"]
    assert "1. Lyon (via France → location.location.contains → Lyon)" in user and "2. Paris" in user
    enum = server.requests[0]["response_format"]["json_schema"]["schema"]["properties"]["answers"]["items"]["enum"]
    assert enum == ["Lyon", "Paris"] and out.answers == ["Paris"] and out.modes == {"Paris": SCHEMA}


def test_a_prose_reply_with_nothing_readable_is_asked_again_held_to_a_schema_that_requires_an_answer():
    with OpenAIServer(responder=lambda m: "I think the question asks about a city.", structured="json") as server:
        out = _reasoner(server, structured=False).reason(build_prompt("triples", QUESTION, LINES), EVIDENCE)
    first, again, held = server.requests
    assert "response_format" not in first and "response_format" not in again  # prose, then the follow-up turn
    listed = held["response_format"]["json_schema"]["schema"]["properties"]["answers"]
    assert listed["minItems"] == 1 and set(listed["items"]["enum"]) == {"France", "Paris", "Lyon", "Île-de-France"}
    assert len(out.answers) == 1 and out.answers[0] in listed["items"]["enum"]
    assert out.modes == {out.answers[0]: SCHEMA_AFTER_PROSE} and not out.malformed


def test_without_structured_output_an_unreadable_reply_stays_unanswered_and_the_schema_is_not_tried_twice():
    with OpenAIServer(responder=lambda m: "I think the question asks about a city.", structured="reject") as server:
        r = _reasoner(server, structured=False)
        first = r.reason(build_prompt("triples", QUESTION, LINES), EVIDENCE)
        r.reason(build_prompt("triples", QUESTION, LINES), EVIDENCE)
    assert first.answers == [] and first.malformed
    assert len(server.rejected) == 1 and server.calls == 4  # two prose turns per question, one refused schema
