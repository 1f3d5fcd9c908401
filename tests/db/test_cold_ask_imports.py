"""Real `kgdb ask` processes against the test Neo4j (cosine, the extractive reasoner, plain ask with
the shipped ranker) never import torch: the torch-free route of a cold `kgdb ask`."""

from __future__ import annotations

import pytest

from support.cli import MODEL_SIDE, run_python

TRIPLES = [
    ("France", "location.country.capital", "Paris"),
    ("France", "location.country.official_language", "French"),
    ("Paris", "location.location.containedby", "France"),
    ("Jamaica", "location.country.capital", "Kingston"),
]


@pytest.mark.parametrize(
    "retriever",
    [["--retriever", "cosine", "--reasoner", "extractive"], ["--reasoner", "extractive"], []],
    ids=["cosine", "plain-extractive-falls-back", "plain-ask-portable-rrp"],
)
def test_what_a_cold_ask_imports(kept_graph, tmp_path, retriever):
    """`kgdb ask` with cosine, `kgdb ask --reasoner extractive` on a graph without a checkpoint (it
    falls back to the shipped cosine-dde and says so), and plain `kgdb ask` without an LLM (the shipped
    portable RRP ranker, scored in numpy) import neither torch nor sentence-transformers."""

    graph = kept_graph(TRIPLES)
    s = graph.settings
    env = {
        "KGDB_NEO4J_URI": s.neo4j_uri,
        "KGDB_NEO4J_PASSWORD": s.neo4j_password.get_secret_value(),
        "KGDB_CACHE_DIR": str(tmp_path / "cache"),
        "KGDB_CHECKPOINTS_DIR": str(tmp_path / "ckpt"),
        "KGDB_RUNS_DIR": str(tmp_path / "runs"),
    }
    # The CLI exactly as `kgdb ask` runs it, then what the process imported.
    code = (
        "import sys\nfrom kgdb.cli import main\nsys.argv = ['kgdb', 'ask', 'What is the capital of France?', "
        f"*{retriever!r}, '--json']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        f"print('HEAVY', sorted(m for m in {MODEL_SIDE!r} if m in sys.modules))"
    )
    out = run_python(code, env)
    assert out.returncode == 0, out.stderr
    assert '"answer": "Paris"' in out.stdout
    # no checkpoint for this graph: the shipped cosine-dde, scored in numpy; or, plain, the shipped portable ranker
    expected = {"cosine": "cosine", "extractive": "cosine-dde"}.get(retriever[1] if retriever else "", "relation-paths")
    assert f'"retriever": "{expected}"' in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "HEAVY []"
