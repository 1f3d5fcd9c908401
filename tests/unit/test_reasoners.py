"""The OpenAI-compatible reasoner against a real local HTTP server with scripted replies."""

from __future__ import annotations

import socket

import pytest

from kgdb.config import Settings
from kgdb.qa.prompts import build_prompt
from kgdb.qa.reasoners import Evidence, LLMError, make_reasoner
from kgdb.qa.reasoners.openai_compatible import OpenAIReasoner
from support.openai_server import OpenAIServer

PROMPT = build_prompt("triples", "what is the capital of France", ["(France,location.country.capital,Paris)"])
BARE = Evidence(PROMPT.question)  # nothing to ground answers on: the `ans:` lines count as written


def reasoner(server: OpenAIServer, **kw) -> OpenAIReasoner:
    return OpenAIReasoner(server.base_url, "kgdb-test-model", "test-key", **kw)


def test_answer_parsed_usage_recorded_and_decoding_fixed():
    with OpenAIServer(script=[{"content": "France's capital is Paris.\nans: Paris"}]) as server:
        out = reasoner(server).reason(PROMPT, BARE)
    assert out.answers == ["Paris"] and out.llm_used and out.calls == 1
    assert out.completion_tokens == 6
    assert out.prompt_tokens == sum(len(m["content"].split()) for m in PROMPT.messages)
    sent = server.requests[0]
    assert sent["temperature"] == 0 and sent["seed"] == 0 and sent["model"] == "kgdb-test-model"
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "user"]
    assert "(France,location.country.capital,Paris)" in sent["messages"][-1]["content"]


def test_retry_after_is_honoured():
    """The openai client's own retries wait as long as the endpoint's retry-after asks."""
    import time

    with OpenAIServer(script=[{"status": 429, "retry_after_ms": 1500}, {"content": "ans: Paris"}]) as server:
        start = time.perf_counter()
        out = reasoner(server, max_retries=1).reason(PROMPT, BARE)
        waited = time.perf_counter() - start
    assert out.answers == ["Paris"] and server.calls == 2
    assert waited >= 1.4


def test_429_and_5xx_are_retried_with_backoff():
    script = [{"status": 429}, {"status": 503}, {"content": "ans: Paris"}]
    with OpenAIServer(script=script) as server:
        out = reasoner(server, max_retries=3).reason(PROMPT, BARE)
    assert out.answers == ["Paris"] and server.calls == 3 and out.calls == 1


def test_retries_are_bounded():
    with OpenAIServer(script=[{"status": 500}] * 5) as server:
        with pytest.raises(LLMError, match=r"server error \(HTTP 500\), still failing after 3 attempt"):
            reasoner(server, max_retries=2).reason(PROMPT, BARE)
        assert server.calls == 3


def test_rate_limit_error_names_429():
    with OpenAIServer(script=[{"status": 429}] * 2) as server, pytest.raises(LLMError, match=r"rate limited \(429\)"):
        reasoner(server, max_retries=1).reason(PROMPT, BARE)


@pytest.mark.parametrize(
    "status, message",
    [
        (401, r"refused the API key \(401\).*KGDB_LLM_API_KEY"),
        (404, r"404.*KGDB_LLM_BASE_URL"),
        (400, r"rejected the request \(400\): scripted"),
    ],
)
def test_client_errors_fail_at_once_with_a_clear_line(status, message):
    with OpenAIServer(script=[{"status": status}, {"content": "ans: never"}]) as server:
        with pytest.raises(LLMError, match=message):
            reasoner(server).reason(PROMPT, BARE)
        assert server.calls == 1


def test_timeout_is_retried_then_reported():
    with OpenAIServer(script=[{"delay": 1.0, "content": "ans: late"}, {"content": "ans: Paris"}]) as server:
        out = reasoner(server, timeout=0.3, max_retries=1).reason(PROMPT, BARE)
        assert out.answers == ["Paris"]
    with (
        OpenAIServer(script=[{"delay": 1.0, "content": "ans: late"}] * 2) as server,
        pytest.raises(LLMError, match="timed out"),
    ):
        reasoner(server, timeout=0.3, max_retries=1).reason(PROMPT, BARE)


def test_endpoint_down_is_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = OpenAIReasoner(f"http://127.0.0.1:{port}/v1", "m", max_retries=1)
    with pytest.raises(LLMError, match="cannot connect.*KGDB_LLM_BASE_URL"):
        r.reason(PROMPT, BARE)


@pytest.mark.parametrize("raw", ["this is not json", '{"object": "chat.completion", "choices": []}'])
def test_malformed_body_is_a_clear_error(raw):
    with OpenAIServer(script=[{"raw": raw}]) as server, pytest.raises(LLMError, match="malformed"):
        reasoner(server).reason(PROMPT, BARE)


def test_reply_without_ans_lines_gets_one_follow_up():
    script = [{"content": "Paris, I think."}, {"content": "ans: Paris\nans: paris"}]
    with OpenAIServer(script=script) as server:
        out = reasoner(server).reason(PROMPT, BARE)
    assert out.answers == ["Paris"] and out.calls == 2 and not out.malformed
    assert out.completion_tokens == 3 + 4
    follow = server.requests[1]["messages"]
    assert follow[-2] == {"role": "assistant", "content": "Paris, I think."} and "ans:" in follow[-1]["content"]


def test_reply_that_stays_malformed_is_marked_not_raised():
    with OpenAIServer(script=[{"content": "no idea"}, {"content": "still no idea"}]) as server:
        out = reasoner(server).reason(PROMPT, BARE)
    assert out.answers == [] and out.malformed and out.calls == 2


def test_refusal_is_not_followed_up():
    with OpenAIServer(script=[{"content": "ans: not available"}]) as server:
        out = reasoner(server).reason(PROMPT, BARE)
    assert out.refused and out.answers == [] and server.calls == 1


def test_mids_in_answers_map_to_names():
    with OpenAIServer(script=[{"content": "ans: m.05qtj\nans: m.0unnamed"}]) as server:
        out = reasoner(server).reason(PROMPT, BARE, names={"m.05qtj": "Paris"})
    assert out.answers == ["Paris", "m.0unnamed"]


def test_make_reasoner_from_settings():
    with OpenAIServer(script=[{"content": "ans: Paris"}]) as server:
        settings = Settings(
            llm_base_url=server.base_url, llm_model="kgdb-test-model", llm_api_key="k", llm_max_retries=0
        )
        r = make_reasoner("auto", settings)
        assert r.name == "openai:kgdb-test-model"
        assert r.reason(PROMPT, BARE).answers == ["Paris"]
    with pytest.raises(LLMError, match="KGDB_LLM_MODEL"):
        make_reasoner("openai", Settings(llm_model=None))


def test_vllm_reasoner_says_what_to_install():
    pytest.importorskip("openai")
    try:
        import vllm  # noqa: F401

        pytest.skip("vllm is installed here")
    except ImportError:
        pass
    with pytest.raises(LLMError, match=r"kgdb\[vllm\]"):
        make_reasoner("vllm", Settings(llm_model="some/model"))


def test_reasoners_are_chosen_by_registered_name():
    from kgdb.qa.reasoners import ReasonerKind, UnknownReasonerError, reasoner_choices, reasoner_help, register_reasoner

    assert reasoner_choices()[0] == "auto" and {"extractive", "openai", "vllm", "rrp"} <= set(reasoner_choices())
    with pytest.raises(UnknownReasonerError, match="unknown reasoner 'nope'; choose one of auto, ") as err:
        make_reasoner("nope", Settings())
    assert err.value.path == "--reasoner"
    with pytest.raises(ValueError, match="other than 'auto'"):
        register_reasoner(ReasonerKind("auto", lambda settings, **options: None, "shadows the policy"))
    with pytest.raises(TypeError):
        register_reasoner("echo")
    register_reasoner(ReasonerKind("echo-test", lambda settings, **options: ("built", options), "echoes its options"))
    assert make_reasoner("echo-test", Settings(), max_answers=3) == ("built", {"max_answers": 3})
    assert (
        make_reasoner("echo-test", Settings(), embedder="unused")[1] == {}
    )  # only reasoners that read embeddings get it
    assert "echo-test (echoes its options)" in reasoner_help("the policy's choice")
