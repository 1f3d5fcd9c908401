"""Every LLM call ends by its deadlines, whatever the server does: against a real local HTTP server that
answers one byte at a time or not at all. And a broken JSON reply is malformed, not a refusal."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from kgdb.config import Settings
from kgdb.qa.prompts import build_prompt
from kgdb.qa.reasoners import LLMError
from kgdb.qa.reasoners.base import Evidence, Reasoning
from kgdb.qa.reasoners.openai_compatible import OpenAIReasoner
from kgdb.qa.token_budget import forget_endpoints
from support.evidence import T
from support.openai_server import OpenAIServer

PROMPT = build_prompt("triples", "what is the capital of France", ["(France,location.country.capital,Paris)"])
BARE = Evidence(PROMPT.question)  # nothing to ground answers on: the `ans:` lines count as written
SLACK = 5.0  # seconds a test allows past a deadline before calling it missed


QUESTION = "what is the capital of France"
TRIPLES = [
    T("France", "location.country.capital", "Paris", 1.0, "France", "Paris"),
    T("France", "location.location.contains", "Lyon", 0.5, "France", "Lyon"),
]
EVIDENCE = Evidence(QUESTION, TRIPLES, ["France"], ["France"], set())
LINES = [f"({t.head},{t.relation},{t.tail})" for t in TRIPLES]


@pytest.fixture(autouse=True)
def _fresh_endpoints():
    forget_endpoints()  # every stub server is a new endpoint, even on a reused port
    yield
    forget_endpoints()


def reasoner(server: OpenAIServer, **kw: Any) -> OpenAIReasoner:
    """A reasoner with the endpoint already probed, so that only the calls a test times count."""
    r = OpenAIReasoner(server.base_url, "kgdb-test-model", "test-key", context=4096, concurrency=1, **kw)
    assert r.endpoint.slots == 1
    return r


def timed(call, within: float) -> tuple[float, BaseException | object]:
    """`call()` in a thread, waited for `within` seconds: (seconds it took, what it raised or returned).
    A call still running then fails the test at once instead of hanging it."""
    done: list[BaseException | object] = []

    def run() -> None:
        try:
            done.append(call())
        except BaseException as exc:  # noqa: BLE001 - handed to the test, which asserts on it
            done.append(exc)

    start = time.perf_counter()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(within)
    took = time.perf_counter() - start
    assert done, f"still waiting on the LLM after {took:.1f} s"
    return took, done[0]


@pytest.mark.parametrize("headers_first", [False, True], ids=["dribbled-headers", "dribbled-body"])
def test_a_reply_dribbled_one_byte_a_second_ends_at_the_request_deadline(headers_first):
    with OpenAIServer(script=[{"dribble": 1.0, "headers_first": headers_first, "content": "ans: Paris"}]) as server:
        r = reasoner(server, timeout=3, max_retries=0)
        took, raised = timed(lambda: r.reason(PROMPT, BARE), 3 + SLACK)
    assert isinstance(raised, LLMError), raised
    message = str(raised)
    assert server.base_url in message and "3 s" in message and "KGDB_LLM_TIMEOUT" in message
    assert 2.5 <= took <= 3 + SLACK


def test_retries_of_a_dribbled_reply_end_at_the_ask_deadline():
    script = [{"dribble": 1.0, "content": "ans: Paris"}] * 5
    with OpenAIServer(script=script) as server:
        r = reasoner(server, timeout=3, max_retries=4, ask_timeout=5)
        took, raised = timed(lambda: r.reason(PROMPT, BARE), 5 + SLACK)
    assert isinstance(raised, LLMError), raised
    assert server.base_url in str(raised) and "5 s" in str(raised) and "KGDB_LLM_ASK_TIMEOUT" in str(raised)
    assert 4.5 <= took <= 5 + SLACK and server.calls == 2


def test_a_silent_server_ends_at_the_ask_deadline_despite_retries():
    with OpenAIServer(script=[{"silent": True}] * 10) as server:
        r = reasoner(server, timeout=1, max_retries=8, ask_timeout=3)
        took, raised = timed(lambda: r.reason(PROMPT, BARE), 3 + SLACK)
    assert isinstance(raised, LLMError), raised
    assert server.base_url in str(raised) and "3 s" in str(raised)
    assert 2.5 <= took <= 3 + SLACK and server.calls >= 2  # the client's own retries ran within it


def test_the_ask_deadline_covers_the_follow_up_turns():
    """A question's follow-ups share its deadline: an unreadable reply, then silence."""
    with OpenAIServer(script=[{"content": "I am not sure."}, {"silent": True}]) as server:
        r = reasoner(server, timeout=10, max_retries=0, ask_timeout=2, structured=False)
        took, raised = timed(lambda: r.reason(PROMPT, BARE), 2 + SLACK)
    assert isinstance(raised, LLMError) and "2 s" in str(raised), raised
    assert took <= 2 + SLACK and server.calls == 2


def test_calls_that_share_a_deadline_end_together():
    """`complete` calls given one deadline (a plan and its follow-up turn) end by it together."""
    with OpenAIServer(script=[{"delay": 1.5, "content": "a -> b"}, {"silent": True}]) as server:
        r = reasoner(server, timeout=10, max_retries=0, ask_timeout=2.5)

        def both() -> str:
            deadline, usage = r.deadline(), Reasoning(answers=[], reply="", reasoner=r.name, llm_used=True)
            first = r.complete([{"role": "user", "content": "plan"}], usage, deadline=deadline)
            return first + r.complete([{"role": "user", "content": "again"}], usage, deadline=deadline)

        took, raised = timed(both, 2.5 + SLACK)
    assert isinstance(raised, LLMError) and "2.5 s" in str(raised), raised
    assert 2.0 <= took <= 2.5 + SLACK


def test_a_slot_wait_does_not_count_against_the_deadline():
    """Requests queued for a one-slot server start their clock when their turn comes."""
    with OpenAIServer(script=[{"delay": 1.5, "content": "ans: Paris"}] * 2) as server:
        r = reasoner(server, timeout=5, max_retries=0, ask_timeout=2)
        outs: list[Any] = []
        threads = [threading.Thread(target=lambda: outs.append(r.reason(PROMPT, BARE))) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
    assert [o.answers for o in outs] == [["Paris"], ["Paris"]]


def test_a_server_that_answers_in_time_is_unaffected():
    with OpenAIServer(script=[{"delay": 0.5, "content": "ans: Paris"}]) as server:
        out = reasoner(server, timeout=2, max_retries=0, ask_timeout=3).reason(PROMPT, BARE)
    assert out.answers == ["Paris"]


def test_deadlines_come_from_the_settings_with_the_ask_a_multiple_of_the_request():
    s = Settings(llm_base_url="http://127.0.0.1:9/v1", llm_model="m", llm_timeout=15)
    r = OpenAIReasoner.from_settings(s)
    assert r.timeout == 15 and r.ask_timeout == 40
    r = OpenAIReasoner.from_settings(s.with_overrides(llm_ask_timeout=20))
    assert r.ask_timeout == 20
    local = OpenAIReasoner("http://127.0.0.1:9/v1", "m")
    assert local.timeout == 600 and local.ask_timeout == 1210  # a CPU's worst case, not (retries + 1) x 600 s


@pytest.mark.parametrize("reply", ['{"answers": [', '{"answers": ["Par', '{"answers": Paris'])
def test_broken_json_under_response_format_is_malformed_not_a_refusal(reply):
    with OpenAIServer(script=[{"content": reply}], structured="json") as server:
        out = reasoner(server, max_retries=0).reason(build_prompt("triples", QUESTION, LINES), EVIDENCE)
    assert "response_format" in server.requests[0]
    assert out.malformed and not out.refused and out.answers == []


def test_valid_json_with_no_answer_under_response_format_stays_a_refusal():
    with OpenAIServer(script=[{"content": '{"answers": []}'}], structured="json") as server:
        out = reasoner(server, max_retries=0).reason(build_prompt("triples", QUESTION, LINES), EVIDENCE)
    assert out.refused and not out.malformed and out.answers == []


def test_a_cut_off_json_reply_still_yields_the_names_it_completed():
    with OpenAIServer(script=[{"content": '{"answers": ["Paris", "Ly'}], structured="json") as server:
        out = reasoner(server, max_retries=0).reason(build_prompt("triples", QUESTION, LINES), EVIDENCE)
    assert out.answers == ["Paris"] and not out.malformed and not out.refused


def test_the_endpoint_probe_ends_at_its_timeout_while_the_server_dribbles():
    """The first call to an endpoint reads its facts (models, context): a server sending one byte at a
    time there must not hold the question past the probe's timeout either."""
    import socket

    from kgdb.qa.token_budget import endpoint

    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def dribble() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" * 100:
                    if stop.wait(0.3):
                        return
                    conn.sendall(bytes([byte]))

    threading.Thread(target=dribble, daemon=True).start()
    forget_endpoints()
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        took, found = timed(lambda: endpoint(url, "kgdb-test-model", timeout=1.0), 1.0 * 4 + SLACK)
    finally:
        stop.set()
        forget_endpoints()
        listener.close()
    assert not isinstance(found, BaseException), found
    assert took <= 1.0 * 4 + SLACK  # a few probes of 1 s each at the most, not the dribble's whole length
