"""What the `kgdb label` tests share: the toy question file's size, the settings a run reads, and the
relation names the graph numbers."""

from __future__ import annotations

from support.openai_server import OpenAIServer

TRAIN = 7  # toy.jsonl: 7 train, 2 val, 1 test questions by the hash rule


def label_env(tmp_path, server: OpenAIServer | None) -> dict[str, str]:
    env = {
        "KGDB_CACHE_DIR": str(tmp_path / "cache"),
        "KGDB_CHECKPOINTS_DIR": str(tmp_path / "ckpt"),
        "KGDB_RUNS_DIR": str(tmp_path / "runs"),
        "KGDB_LLM_MODEL": "" if server is None else "kgdb-test-model",
        "KGDB_LLM_BASE_URL": "" if server is None else server.base_url,
        "KGDB_LLM_API_KEY": "test",
        "KGDB_LLM_MAX_RETRIES": "0",
    }
    return env


def connection_args(graph) -> list[str]:
    return ["--uri", graph.settings.neo4j_uri, "--password", graph.settings.neo4j_password.get_secret_value()]


def relation_names(graph) -> dict[int, str]:
    return {r["idx"]: r["name"] for r in graph.run_text("MATCH (r:Relation) RETURN r.idx AS idx, r.name AS name")}
