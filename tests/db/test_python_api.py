"""The README's "Python API" example, run as written against a real Neo4j.

README.md carries the example as one ```python block between `<!-- api-example:start -->` and
`<!-- api-example:end -->`; `EXAMPLE` (tests/support/api_example.py) is the same code, so it is
exercised even before (or if) the README block is missing. The example reads the server from KGDB_NEO4J_URI /
KGDB_NEO4J_PASSWORD, which the tests point at the fixture's server.
"""

from __future__ import annotations

import pytest

from support.api_example import END, EXAMPLE, START, readme_example

pytestmark = pytest.mark.usefixtures("one_thread")

TRIPLES = [
    ("France", "location.country.capital", "Paris"),
    ("France", "location.country.official_language", "French"),
    ("France", "location.location.containedby", "Europe"),
    ("Paris", "location.location.containedby", "France"),
    ("Paris", "travel.travel_destination.tourist_attractions", "Eiffel Tower"),
    ("Jamaica", "location.country.capital", "Kingston"),
]


@pytest.fixture
def api_env(kept_graph, neo4j_settings, tmp_path, monkeypatch):
    """The tiny graph loaded, and the environment a user would set for the example."""
    graph = kept_graph(TRIPLES)
    s = neo4j_settings
    monkeypatch.setenv("KGDB_NEO4J_URI", s.neo4j_uri)
    monkeypatch.setenv("KGDB_NEO4J_USER", s.neo4j_user)
    monkeypatch.setenv("KGDB_NEO4J_PASSWORD", s.neo4j_password.get_secret_value())
    monkeypatch.setenv("KGDB_NEO4J_DATABASE", s.neo4j_database)
    monkeypatch.setenv("KGDB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KGDB_CHECKPOINTS_DIR", str(tmp_path / "ckpt"))
    monkeypatch.setenv("KGDB_RUNS_DIR", str(tmp_path / "runs"))
    for key in ("KGDB_LLM_MODEL", "KGDB_LLM_BASE_URL", "KGDB_LLM_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    return graph


def run_example(code: str, graph, capsys) -> str:
    exec(compile(code, "<README Python API example>", "exec"), {"__name__": "__readme_example__"})
    out = capsys.readouterr().out
    assert "(France, location.country.capital, Paris)" in out  # retrieved
    assert "['Paris']" in out  # answered by the extractive reasoner
    assert "France → [location.country.capital] → Paris" in out  # a chain of the run
    runs = graph.run_text("MATCH (r:Retrieval) RETURN r.run AS run, r.retriever AS retriever")
    assert len(runs) == 2 and {r["retriever"] for r in runs} == {"cosine"}  # write_back + ask
    assert graph.driver.verify_connectivity() is None  # the fixture's own connection still works
    return out


def test_python_api_example(api_env, capsys):
    run_example(EXAMPLE, api_env, capsys)


def test_readme_python_api_example(api_env, capsys):
    code = readme_example()
    if code is None:
        pytest.skip(f"README.md has no {START} ... {END} section yet")
    run_example(code, api_env, capsys)


def test_api_ask_without_a_retriever_chooses_as_kgdb_ask(api_env):
    """`Kgdb.ask` with no retriever named picks what `kgdb ask` picks: no LLM and nothing trained on
    this graph, so the portable RRP ranker shipped with kgdb answers, and the result says so."""
    import kgdb

    with kgdb.connect() as kg:
        res = kg.ask("what is the capital of france?", write=False)
    assert res.retriever == "relation-paths" and "portable rrp-ranker shipped with kgdb" in res.retriever_note
    assert [a.answer for a in res.answers] == ["Paris"] and not res.reasoning.llm_used
