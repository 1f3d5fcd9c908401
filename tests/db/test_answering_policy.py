"""The answering policy on a real Neo4j: which retriever, checkpoint, planner, reasoner and format
answer, and why, on a fresh graph, a graph with its own RRP model, a graph embedded with another
model and with an LLM configured (a real HTTP server); a reasoner registered from outside the package,
used through `kgdb ask` and `Kgdb.ask`; the stand-ins `kgdb retrieve` and `Kgdb.retrieve` share with
`kgdb ask`; a reload of the same data is the same graph to a checkpoint; bad API inputs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from kgdb.api import Kgdb
from kgdb.cli import app
from kgdb.cypher.tables import graph_fingerprint
from kgdb.embeddings import get_embedder, resolve_model_path
from kgdb.errors import InputError
from kgdb.loaders.writer import write_graph
from kgdb.models.default import shipped_checkpoint
from kgdb.pipeline.model_choice import Fallback, GraphFacts, choose_retriever_model
from kgdb.pipeline.vectors import data_fingerprint
from kgdb.qa.policy import AnswerRequest, choose_answering
from kgdb.qa.reasoners import ReasonerKind, Reasoning, reasoner_choices, register_reasoner
from support.openai_server import OpenAIServer

pytestmark = pytest.mark.usefixtures("one_thread")

TRIPLES = [
    ("Jamaica", "location.country.capital", "Kingston"),
    ("Jamaica", "location.country.official_language", "Jamaican English"),
    ("Kingston", "location.location.containedby", "Jamaica"),
    ("Usain Bolt", "people.person.nationality", "Jamaica"),
    ("France", "location.country.capital", "Paris"),
    ("France", "location.country.official_language", "French"),
]


@pytest.fixture
def settings_for(neo4j_settings, tmp_path):
    def settings(**overrides):
        return neo4j_settings.with_overrides(
            cache_dir=tmp_path / "cache",
            checkpoints_dir=tmp_path / "ckpt",
            runs_dir=tmp_path / "runs",
            llm_model=None,
            **overrides,
        )

    return settings


def env_for(settings, **extra) -> dict[str, str]:
    env = {
        "KGDB_NEO4J_URI": settings.neo4j_uri,
        "KGDB_NEO4J_PASSWORD": settings.neo4j_password.get_secret_value(),
        "KGDB_CACHE_DIR": str(settings.cache_dir),
        "KGDB_CHECKPOINTS_DIR": str(settings.checkpoints_dir),
        "KGDB_RUNS_DIR": str(settings.runs_dir),
    }
    return {**env, **extra}


def cli(settings, *args, **env):
    with pytest.MonkeyPatch.context() as mp:
        for key in ("KGDB_LLM_MODEL", "KGDB_LLM_BASE_URL", "KGDB_LLM_API_KEY"):
            mp.delenv(key, raising=False)
        return CliRunner().invoke(app, list(args), env=env_for(settings, **env), catch_exceptions=True)


def explain(settings, *args, **env) -> dict:
    result = cli(settings, "ask", "what is the capital of jamaica?", "--explain", "--json", *args, **env)
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.output)


def own_ranker(graph, settings) -> str:
    """An rrp-ranker checkpoint recorded as trained on this graph, as `kgdb train rrp-ranker` records it."""
    folder = settings.checkpoints_dir / "rrp-ranker-here"
    shutil.copytree(shipped_checkpoint("rrp-ranker"), folder)
    config = json.loads((folder / "config.json").read_text())
    config.update(
        graph_fingerprint=graph_fingerprint(graph)[0], dataset="this graph", created="2099-01-01T00:00:00+0000"
    )
    (folder / "config.json").write_text(json.dumps(config))
    return folder.name


# ------------------------------------------------------------------ four plans, each naming why


def test_plan_on_a_fresh_graph_is_the_shipped_ranker_without_an_llm(kept_graph, settings_for):
    kept_graph(TRIPLES)
    plan = explain(settings_for())
    assert (plan["retriever"], plan["checkpoint"], plan["planner"], plan["reasoner"], plan["format"]) == (
        "relation-paths",
        "rrp-ranker-portable",
        "trained",
        "rrp",
        "triples",
    )
    assert "no LLM is configured and no RRP model was trained on this graph" in plan["why"]["retriever"]
    assert "portable rrp-ranker shipped with kgdb" in plan["why"]["checkpoint"]
    assert "KGDB_LLM_MODEL is unset" in plan["why"]["reasoner"]
    assert any("kgdb train rrp-ranker" in note for note in plan["notes"])
    table = cli(settings_for(), "ask", "what is the capital of jamaica?", "--explain")
    flat = " ".join(table.output.split())
    assert table.exit_code == 0 and "Answering plan (nothing was answered)" in flat and "Kingston" not in flat


def test_plan_on_a_graph_with_its_own_rrp_model_names_it(kept_graph, settings_for):
    graph = kept_graph(TRIPLES)
    settings = settings_for()
    name = own_ranker(graph, settings)
    plan = explain(settings)
    assert plan["retriever"] == "relation-paths" and plan["checkpoint"] == name and plan["reasoner"] == "rrp"
    assert f"an RRP model (rrp-ranker {name}) was trained on this graph" in plan["why"]["retriever"]
    assert plan["why"]["checkpoint"] == "the newest rrp-ranker trained on this graph" and plan["notes"] == []
    answered = json.loads(cli(settings, "ask", "what is the capital of jamaica?", "--json", "--no-write").output)
    assert answered["plan"]["checkpoint"] == name and answered["answers"][0]["answer"] == "Kingston"


def test_plan_on_a_graph_embedded_with_another_model_says_why_rrp_does_not_answer(graph, settings_for, tmp_path):
    other = tmp_path / "another-minilm"  # the same weights under another name: another embedding model to kgdb
    shutil.copytree(resolve_model_path("all-MiniLM-L6-v2"), other)
    write_graph(graph, TRIPLES, embedder=get_embedder(str(other)))
    settings = settings_for(embedding_model=str(other))
    plan = explain(settings)
    assert (plan["retriever"], plan["checkpoint"], plan["reasoner"]) == ("cosine", None, "extractive")
    assert "does not fit this graph's embedding model" in plan["notes"][0]
    assert "the shipped cosine-dde checkpoint does not fit this graph" in plan["why"]["checkpoint"]
    assert [d["value"] for d in plan["decisions"] if d["part"] == "retriever"] == ["subgraphrag", "cosine"]
    assert plan["why"]["retriever"] == "stands in for subgraphrag"
    answered = cli(settings, "ask", "what is the capital of jamaica?", "--no-write")
    assert answered.exit_code == 0, answered.output
    assert "Kingston" in answered.output


def test_plan_with_an_llm_configured_asks_it(kept_graph, settings_for):
    kept_graph(TRIPLES)
    settings = settings_for()
    with OpenAIServer(script=[{"content": "ans: Kingston"}]) as server:
        env = {"KGDB_LLM_BASE_URL": server.base_url, "KGDB_LLM_MODEL": "kgdb-test-model"}
        plan = explain(settings, **env)
        assert (plan["retriever"], plan["checkpoint"], plan["reasoner"], plan["format"]) == (
            "cosine-dde",
            "cosine-dde-webqsp",
            "openai",
            "triples",
        )
        assert "an LLM is configured (KGDB_LLM_MODEL=kgdb-test-model)" in plan["why"]["reasoner"]
        assert (
            # the policy chose the retriever: its note names no checkpoint the user never asked for
            plan["why"]["checkpoint"].startswith("no retriever was trained on this graph")
            and "subgraphrag" not in plan["why"]["checkpoint"]
            and "cosine-dde checkpoint shipped with kgdb" in plan["why"]["checkpoint"]
        )
        answered = cli(settings, "ask", "what is the capital of jamaica?", "--json", "--no-write", **env)
    data = json.loads(answered.output)
    read = plan.pop("question_reading")  # --explain also shows how the question was read and linked
    assert data["plan"] == plan and data["llm_used"] and [a["answer"] for a in data["answers"]] == ["Kingston"]
    assert data["question_reading"] == read and read["topics"]["chosen"][0]["name"] == "Jamaica"
    assert server.calls == 1  # --explain asked nothing


def test_evaluation_keeps_the_method_it_names(kept_graph, settings_for):
    graph = kept_graph(TRIPLES)
    request = AnswerRequest(retriever="cosine-dde", reasoner="extractive", fallback=Fallback.SHIPPED)
    plan = choose_answering(graph, settings_for(), request)
    assert plan.retriever == "cosine-dde" and plan.checkpoint.name == "cosine-dde-webqsp"
    with pytest.raises(Exception, match="no subgraphrag checkpoint"):
        choose_answering(graph, settings_for(), AnswerRequest(retriever="subgraphrag", fallback=Fallback.SHIPPED))


# ------------------------------------------------------------------ retrieval shares the policy


def test_retrieve_without_a_checkpoint_is_served_like_ask(kept_graph, settings_for):
    graph = kept_graph(TRIPLES)
    settings = settings_for()
    result = cli(
        settings, "retrieve", "what is the capital of jamaica?", "--retriever", "cosine-dde", "--no-write", "--json"
    )
    assert result.exit_code == 0, (result.output, result.exception)
    data = json.loads(result.output)
    assert data["retriever"] == "cosine-dde" and any(
        "cosine-dde checkpoint shipped with kgdb" in n for n in data["notes"]
    )
    kg = Kgdb(graph)
    kg.settings = settings
    r = kg.retrieve(
        "what is the capital of jamaica?", retriever="subgraphrag", k=5, write=False
    )  # the README's default
    assert r.retriever == "cosine-dde" and "no subgraphrag checkpoint" in r.notes[0]
    assert r.triples[0].tail == "Kingston"


def test_a_reload_of_the_same_data_is_the_same_graph_to_a_checkpoint(kept_graph, settings_for):
    graph = kept_graph(TRIPLES)
    settings = settings_for()
    fingerprint, info = graph_fingerprint(graph)
    folder = settings.checkpoints_dir / "cosine-dde-here"
    shutil.copytree(shipped_checkpoint("cosine-dde"), folder)
    config = json.loads((folder / "config.json").read_text())
    config.update(graph_fingerprint=fingerprint, graph_data=data_fingerprint(info), dataset="these triples")
    (folder / "config.json").write_text(json.dumps(config))
    graph.run_auto("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS")
    write_graph(graph, TRIPLES, embedder=get_embedder())  # the same file again: a new schema creation time
    facts = GraphFacts.of(graph)
    assert facts.fingerprint != fingerprint and facts.data == data_fingerprint(info)
    choice = choose_retriever_model(facts, settings, "cosine-dde")
    assert choice.checkpoint.name == "cosine-dde-here" and choice.note is None
    kg = Kgdb(graph)
    kg.settings = settings
    assert kg.retriever("cosine-dde").describe()["notes"] == []  # no "trained on another graph"
    config["graph_data"] = "0" * 16  # other data: the note is back
    (folder / "config.json").write_text(json.dumps(config))
    kg._pipelines.clear()
    pipe = kg.retriever("cosine-dde", checkpoint=str(folder))
    assert any("was trained on another graph" in n for n in pipe.describe()["notes"])


# ------------------------------------------------------------------ a reasoner from outside the package


class FirstTail:
    """Answers with the tail of the best retrieved triple: a reasoner a user writes."""

    name = "toy"
    uses_llm = False

    def reason(self, prompt, evidence=None, names=None) -> Reasoning:
        tail = evidence.triples[0].tail if evidence and evidence.triples else None
        return Reasoning([tail] if tail else [], f"ans: {tail}", self.name, False, refused=tail is None)

    def settings(self) -> dict:
        return {"reasoner": self.name}


def test_a_registered_reasoner_answers_through_the_api(kept_graph, settings_for):
    graph = kept_graph(TRIPLES)
    register_reasoner(ReasonerKind("toy", lambda settings, **options: FirstTail(), "the tail of the best triple"))
    assert "toy" in reasoner_choices()
    kg = Kgdb(graph)
    kg.settings = settings_for()
    res = kg.ask("what is the capital of jamaica?", retriever="cosine", reasoner="toy", k=5, write=False)
    assert [a.answer for a in res.answers] == ["Kingston"] and res.plan["reasoner"] == "toy"
    assert res.plan["why"]["reasoner"] == "asked for (--reasoner)"
    given = kg.ask("what is the capital of france?", retriever="cosine", reasoner=FirstTail(), k=5, write=False)
    assert [a.answer for a in given.answers] == ["Paris"] and given.plan["why"][
        "reasoner"
    ] == "a reasoner object passed by the caller"


def test_a_reasoner_installed_by_entry_point_answers_through_the_cli(kept_graph, settings_for, tmp_path):
    """A package of its own (found by its `kgdb.reasoners` entry point), `kgdb ask --reasoner toy` in a new process."""
    kept_graph(TRIPLES)
    site = tmp_path / "site"
    (site / "toy_reasoner-0.1.dist-info").mkdir(parents=True)
    (site / "toy_reasoner-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: toy-reasoner\nVersion: 0.1\n"
    )
    (site / "toy_reasoner-0.1.dist-info" / "entry_points.txt").write_text("[kgdb.reasoners]\ntoy = toy_reasoner:KIND\n")
    (site / "toy_reasoner.py").write_text(
        textwrap.dedent("""
        from kgdb.qa.reasoners import ReasonerKind, Reasoning

        class FirstTail:
            name, uses_llm = "toy", False

            def reason(self, prompt, evidence=None, names=None):
                tail = evidence.triples[0].tail
                return Reasoning([tail], "ans: " + tail, self.name, False)

            def settings(self):
                return {"reasoner": self.name}

        KIND = ReasonerKind("toy", lambda settings, **options: FirstTail(), "the tail of the best triple")
    """)
    )
    settings = settings_for()
    env = {**os.environ, **env_for(settings), "PYTHONPATH": str(site), "COLUMNS": "400"}
    env.pop("KGDB_LLM_MODEL", None)
    kgdb = [sys.executable, "-m", "kgdb"]
    helped = subprocess.run([*kgdb, "ask", "--help"], env=env, capture_output=True, text=True, timeout=120)
    assert "toy (the tail of the best triple)" in helped.stdout  # the help is built from the registry
    asked = subprocess.run(
        [
            *kgdb,
            "ask",
            "what is the capital of jamaica?",
            "--retriever",
            "cosine",
            "--reasoner",
            "toy",
            "--json",
            "--no-write",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert asked.returncode == 0, asked.stderr
    data = json.loads(asked.stdout)
    assert data["reasoner"] == "toy" and [a["answer"] for a in data["answers"]] == ["Kingston"]


# ------------------------------------------------------------------ the API's inputs


@pytest.mark.parametrize(
    ("call", "parameter"),
    [
        (lambda kg: kg.ask("what is the capital of jamaica?", topics=[1, 2]), "topics[0]"),
        (lambda kg: kg.ask("what is the capital of jamaica?", topics="Jamaica"), "topics"),
        (lambda kg: kg.ask(42), "question"),
        (lambda kg: kg.ask("what is the capital of jamaica?", k="10"), "k"),
        (lambda kg: kg.ask("what is the capital of jamaica?", reasoner=3), "reasoner"),
        (lambda kg: kg.retrieve("what is the capital of jamaica?", retriever="cosine", hops=0), "hops"),
        (lambda kg: kg.retrieve("what is the capital of jamaica?", retriever="cosine", write="no"), "write"),
    ],
)
def test_api_refuses_bad_inputs_naming_the_parameter(graph, call, parameter):
    with pytest.raises(InputError) as err:
        call(Kgdb(graph))
    assert err.value.path == parameter
