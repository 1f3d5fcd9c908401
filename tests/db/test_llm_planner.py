"""The LLM relation-path planner (`--planner llm`) on a real Neo4j and the real OpenAI-protocol HTTP
test server: a planned 2-hop path answers through `kgdb ask --reasoner rrp --planner llm`; the
prompt lists only the relations around the topics; paths naming unknown relations are dropped and
noted; a reply without a path gets exactly one follow-up, then the fallback; no LLM settings is one
clear line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from kgdb.cli import app
from kgdb.data.relation_paths import TripleArrays
from kgdb.qa.reasoners.openai_compatible import OpenAIReasoner
from kgdb.rrp.llm_planner import FOLLOW_UP, DeferredPlanner, LLMPathPlanner
from kgdb.rrp.retriever import RelationPathRetriever
from support.graphs import load
from support.movies import TRIPLES, path_answers
from support.openai_server import OpenAIServer
from support.plugins import FixedPlanner

pytestmark = pytest.mark.usefixtures("one_thread")

QUESTION = "who directed the films starring Lise Meitner"
TWO_HOP = (("movie.starred_actors", -1), ("movie.directed_by", 1))


@pytest.fixture
def movies(graph, tmp_path):
    load(graph, TRIPLES)
    env = {
        "KGDB_CACHE_DIR": str(tmp_path / "cache"),
        "KGDB_CHECKPOINTS_DIR": str(tmp_path / "ckpt"),
        "KGDB_RUNS_DIR": str(tmp_path / "runs"),
        "KGDB_CONFIG": str(tmp_path / "none.toml"),
    }
    (tmp_path / "none.toml").write_text(
        "", encoding="utf-8"
    )  # an empty config file: no LLM settings from the user's own
    base = ["--uri", graph.settings.neo4j_uri, "--password", graph.settings.neo4j_password.get_secret_value()]
    return graph, env, base


def _planner_retriever(graph, server, fallback=None) -> RelationPathRetriever:
    planner = LLMPathPlanner(OpenAIReasoner(server.base_url, "kgdb-test-model", max_retries=0), fallback=fallback)
    return RelationPathRetriever(graph, graph.settings, planner=planner, write=False)


def _listed(request) -> list[str]:
    """The relations the planning prompt listed for the real question (its last user turn)."""
    user = request["messages"][3]["content"]
    block = user.split("Relations around the topic entities:\n", 1)[1].split("\n\nQuestion:", 1)[0]
    return block.splitlines()


def test_llm_planned_two_hop_path_answers_through_kgdb_ask(movies):
    graph, env, base = movies
    gold = path_answers(TripleArrays.from_triples(TRIPLES), "Lise Meitner", TWO_HOP)
    assert gold  # the tiny graph has an answer to ground to
    reply = "The films she starred in, then their directors.\nmovie.starred_actors -> movie.directed_by\nmovie.starred_actors"
    with OpenAIServer(script=[{"content": reply}]) as server:
        out = CliRunner().invoke(
            app,
            base + ["ask", QUESTION, "--topic", "Lise Meitner", "--reasoner", "rrp", "--planner", "llm", "--json"],
            env={**env, "KGDB_LLM_BASE_URL": server.base_url, "KGDB_LLM_MODEL": "kgdb-test-model"},
        )
        assert out.exit_code == 0, out.output
        assert server.calls == 1
        # Only the relations at the topic entity: Lise Meitner acts, so directed_by / written_by are not listed.
        assert _listed(server.requests[0]) == ["movie.starred_actors"]
        assert "generate valid relation paths" in server.requests[0]["messages"][0]["content"]
    payload = json.loads(out.output)
    assert payload["retriever"] == "relation-paths" and payload["llm_used"] is False  # the RRP reasoner answers, no LLM
    assert sorted(a["answer"] for a in payload["answers"]) == gold
    assert all(a["grounded"] for a in payload["answers"])
    usage = payload["planner_usage"]
    assert usage["calls"] == 1 and usage["prompt_tokens"] > 0 and usage["completion_tokens"] == len(reply.split())
    assert usage["template"] == "plan_paths_v1"


def test_unknown_relations_are_dropped_and_noted(movies):
    graph, *_ = movies
    reply = "movie.produced_by -> movie.directed_by\n2. movie.starred_actors -> movie.directed_by\nmovie.starred_actors -> movie.budget"
    with OpenAIServer(script=[{"content": reply}]) as server:
        res = _planner_retriever(graph, server).retrieve(QUESTION, ["Lise Meitner"])
        assert server.calls == 1  # a usable path came back: no follow-up
    gold = path_answers(TripleArrays.from_triples(TRIPLES), "Lise Meitner", TWO_HOP)
    assert {p.relations for p in res.paths} == {("movie.starred_actors", "movie.directed_by")}
    assert sorted(e.id for e in res.entities) == gold
    (note,) = [n for n in res.notes if "LLM planner" in n]
    assert "dropped 2 relation path(s)" in note and "movie.budget, movie.produced_by" in note
    assert res.llm_usage["calls"] == 1


def test_the_retriever_describes_the_llm_planner(movies):
    graph, *_ = movies
    with OpenAIServer() as server:
        described = _planner_retriever(graph, server, fallback=FixedPlanner(("movie.starred_actors",))).describe()
    assert described["planner"] == "llm" and described["planner_settings"]["prompt_template"] == "plan_paths_v1"
    assert (
        described["planner_settings"]["llm"]["model"] == "kgdb-test-model"
        and described["planner_settings"]["fallback"] == "fixed"
    )


def test_garbage_gets_one_follow_up_then_the_fallback(movies):
    graph, *_ = movies
    garbage = [{"content": "I am not sure what you mean."}, {"content": "Sorry, no idea."}]
    with OpenAIServer(script=garbage) as server:
        res = _planner_retriever(graph, server).retrieve(QUESTION, ["Lise Meitner"])
        assert server.calls == 2  # exactly one follow-up
        follow = server.requests[1]["messages"]
        assert (
            follow[-2] == {"role": "assistant", "content": "I am not sure what you mean."}
            and follow[-1]["content"] == FOLLOW_UP
        )
    assert res.paths == [] and res.entities == []
    assert any("no usable relation path after one follow-up and no trained planner" in n for n in res.notes)
    assert res.llm_usage["calls"] == 2

    fallback = FixedPlanner(("movie.starred_actors",))
    with OpenAIServer(script=garbage) as server:
        res = _planner_retriever(graph, server, fallback=fallback).retrieve(QUESTION, ["Lise Meitner"])
        assert server.calls == 2
    assert {p.relations for p in res.paths} == {("movie.starred_actors",)}
    assert any("the trained planner (fixed) planned instead" in n for n in res.notes)


def test_the_trained_fallback_is_loaded_only_when_the_llm_gives_no_path(movies):
    graph, *_ = movies
    loads = []

    def load():
        loads.append(1)
        return FixedPlanner(("movie.starred_actors",))

    fallback = DeferredPlanner("rrp-ranker-movies", load)
    with OpenAIServer(script=[{"content": "movie.starred_actors -> movie.directed_by"}]) as server:
        _planner_retriever(graph, server, fallback=fallback).retrieve(QUESTION, ["Lise Meitner"])
    assert loads == []  # the LLM planned: no weights or embedding model loaded for the fallback
    garbage = [{"content": "no idea"}, {"content": "still no idea"}] * 2
    with OpenAIServer(script=garbage) as server:
        retriever = _planner_retriever(graph, server, fallback=fallback)
        first = retriever.retrieve(QUESTION, ["Lise Meitner"])
        second = retriever.retrieve(QUESTION, ["Lise Meitner"])
    assert loads == [1]  # loaded once, on the first miss
    assert {p.relations for p in first.paths} == {p.relations for p in second.paths} == {("movie.starred_actors",)}
    assert any("the trained planner (rrp-ranker-movies) planned instead" in n for n in first.notes)


def test_missing_llm_settings_is_one_clear_line(movies):
    _, env, base = movies
    run_env = {**os.environ, **env, "KGDB_LLM_BASE_URL": "", "KGDB_LLM_MODEL": ""}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from kgdb.cli import main; main()",
            *base,
            "ask",
            QUESTION,
            "--reasoner",
            "rrp",
            "--planner",
            "llm",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=run_env,
    )
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("error:") and "KGDB_LLM_BASE_URL" in lines[0] and "KGDB_LLM_MODEL" in lines[0]


def test_with_nothing_trained_the_shipped_ranker_plans_when_the_llm_gives_no_path(movies, tmp_path):
    from kgdb.rrp.llm_planner import llm_planner
    from kgdb.rrp.path_ranker import RankedPathPlanner

    graph, *_ = movies
    garbage = [{"content": "no idea"}, {"content": "still no idea"}]
    with OpenAIServer(script=garbage) as server:
        settings = graph.settings.with_overrides(
            llm_base_url=server.base_url,
            llm_model="kgdb-test-model",
            llm_max_retries=0,
            checkpoints_dir=tmp_path / "ckpt",
            cache_dir=tmp_path / "cache",
        )
        planner = llm_planner(graph, settings)
        assert planner.fallback.name == "the portable rrp-ranker shipped with kgdb"
        res = RelationPathRetriever(graph, settings, planner=planner, write=False).retrieve(
            "who directed [Film A]", ["Film A"]
        )
    assert isinstance(planner.fallback._planner, RankedPathPlanner)
    assert res.paths and res.paths[0].relations == ("movie.directed_by",)
    assert any(
        "the trained planner (the portable rrp-ranker shipped with kgdb) planned instead" in n for n in res.notes
    )
