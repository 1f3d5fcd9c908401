"""Plugins of a package of their own (tests/support/plugin_dist: a module and its dist-info with entry
points) answer through the real `kgdb ask` in a new process, on the default subset, with no edit in
kgdb: a question-level retriever, a relation-path planner and a reasoner; `kgdb ask --help` lists
each with the summary it registered."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from kgdb.cli import app
from support import ROOT
from support.cli import kgdb

PLUGINS = ROOT / "tests" / "support" / "plugin_dist"
QUESTION = "what is the capital of france?"


def environment(graph, tmp_path) -> dict[str, str]:
    """What a `kgdb` process needs for the throw-away server, with the plugins' folder on its path."""
    settings = graph.settings
    return {
        "KGDB_CACHE_DIR": str(tmp_path / "cache"),
        "KGDB_CHECKPOINTS_DIR": str(tmp_path / "ckpt"),
        "KGDB_RUNS_DIR": str(tmp_path / "runs"),
        "KGDB_NEO4J_URI": settings.neo4j_uri,
        "KGDB_NEO4J_PASSWORD": settings.neo4j_password.get_secret_value(),
        "KGDB_LLM_MODEL": "",
        "PYTHONPATH": str(PLUGINS),
    }


def ask(settings, env, *args: str) -> dict:
    out = kgdb(settings, "ask", QUESTION, "--topic", "France", "--json", "--no-write", *args, **env)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def test_a_plugin_retriever_planner_and_reasoner_answer_on_the_default_subset(graph, tmp_path):
    env = environment(graph, tmp_path)
    loaded = CliRunner().invoke(app, ["load", "freebase-subset"], env=env)
    assert loaded.exit_code == 0, (loaded.output, loaded.exception)

    data = ask(graph.settings, env, "--retriever", "demo-neighbours", "--reasoner", "demo-far-end")
    assert (data["retriever"], data["reasoner"], data["plan"]["planner"]) == ("demo-neighbours", "demo-far-end", None)
    assert [a["answer"] for a in data["answers"]] == ["Paris"] and data["answers"][0]["grounded"]
    assert data["evidence"][0] == "(France,location.country.capital,Paris)"

    data = ask(graph.settings, env, "--planner", "demo-words", "--reasoner", "rrp")
    assert (data["retriever"], data["plan"]["planner"], data["reasoner"]) == ("relation-paths", "demo-words", "rrp")
    assert "the demo-words planner (--planner demo-words) plans relation paths" in data["plan"]["why"]["retriever"]
    assert data["answers"][0]["answer"] == "Paris" and not data["llm_used"]


def test_ask_help_lists_the_plugins_with_their_summaries(graph, tmp_path):
    env = environment(graph, tmp_path)
    out = kgdb(graph.settings, "ask", "--help", **env)
    assert out.returncode == 0, out.stderr
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", out.stdout).split())  # the help panel's lines as one text
    for line in (
        "demo-neighbours (demo plugin: the triples around the topics, those whose relation words the question uses first)",
        "demo-words (demo plugin: one-hop relation paths whose words the question uses)",
        "demo-far-end (demo plugin: the far end of the best evidence triple)",
        "relation-paths (RRP:",
        "llm (the OpenAI-compatible LLM",
    ):
        assert line in text, line
    unknown = kgdb(graph.settings, "ask", QUESTION, "--planner", "nope", **env)
    assert (
        unknown.returncode != 0 and "unknown planner 'nope'; choose one of demo-words, llm, trained" in unknown.stderr
    )
