"""Fixtures shared by the database tests: the test server as a LocalServer, and small graphs loaded
together with the question files a command reads. Every test in this folder is marked `db`
(tests/conftest.py)."""

from __future__ import annotations

import json

import pytest

from kgdb.config import Settings
from kgdb.data.relation_paths import TripleArrays
from kgdb.server import LocalServer, server_from_settings
from support import head_start, jamaica, movies
from support.server import SHORT_LIVED_JVM
from support.spare_servers import base_settings, environment, jars


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests that await background work run last (in their order), so the work has the session to finish."""
    items.sort(key=lambda item: item.get_closest_marker("head_start") is not None)


@pytest.fixture(scope="session", autouse=True)
def head_starts(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Begins the work the selected tests mark with `head_start`, in their order (`support.head_start`),
    once the session's server is up where a selected test needs it: its start is what every test waits for."""
    for read_once in (jars, base_settings, environment):  # here, before any test changes the environment
        read_once()
    if any("neo4j_settings" in getattr(item, "fixturenames", ()) for item in request.session.items):
        request.getfixturevalue("neo4j_settings")
    for item in request.session.items:
        for mark in item.iter_markers("head_start"):
            head_start.begin(mark.args[0], tmp_path_factory)
    yield
    head_start.finish()


@pytest.fixture
def local_server(neo4j_settings):
    """The fixture's throw-away local server as a LocalServer (skipped for remote/Docker servers)."""
    home = neo4j_settings.neo4j_home
    if not (home / "run" / "kgdb-neo4j.pid").is_file() or home == Settings().neo4j_home:
        pytest.skip("--bulk needs the throw-away local server of tests/conftest.py")
    return LocalServer(
        home=home,
        password=neo4j_settings.neo4j_password.get_secret_value(),
        bolt_port=neo4j_settings.neo4j_bolt_port,
        http_port=neo4j_settings.neo4j_http_port,
        heap="1g",
        pagecache="512m",
        lib_dir=server_from_settings(Settings()).lib,
        jvm_options=SHORT_LIVED_JVM,
    )


@pytest.fixture
def movie_files(kept_graph, tmp_path):
    """The movie graph loaded, its 1- and 2-hop MetaQA-style question files (`N-hop/qa.txt`), and the
    settings, environment and connection arguments a `kgdb` command over them needs."""
    graph = kept_graph(movies.TRIPLES)
    arrays = TripleArrays.from_triples(movies.TRIPLES)
    files = []
    for hop, templates in movies.TEMPLATES.items():
        lines = []
        for text, path, topics in templates:
            for topic in topics:
                answers = movies.path_answers(arrays, topic, path)
                if answers:
                    lines.append(f"{text.format(topic)}\t{'|'.join(answers)}")
        folder = tmp_path / f"{hop}-hop"
        folder.mkdir()
        (folder / "qa.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        files.append(folder / "qa.txt")
    settings = graph.settings.with_overrides(
        cache_dir=tmp_path / "cache", checkpoints_dir=tmp_path / "ckpt", runs_dir=tmp_path / "runs"
    )
    env = {
        "KGDB_CACHE_DIR": str(settings.cache_dir),
        "KGDB_CHECKPOINTS_DIR": str(settings.checkpoints_dir),
        "KGDB_RUNS_DIR": str(settings.runs_dir),
    }
    base = ["--uri", settings.neo4j_uri, "--password", settings.neo4j_password.get_secret_value()]
    return graph, settings, files, env, base


def _jamaica_questions(graph) -> None:
    rows = [
        {
            "id": q["id"],
            "text": q["question"],
            "answers": q["answer"],
            "answer_entities": q["a_entity"],
            "topics": q["q_entity"],
            "hop": None,
        }
        for q in jamaica.QUESTIONS
    ]
    graph.run("load_questions", rows=rows)


@pytest.fixture
def toy(kept_graph, tmp_path):
    """The Jamaica graph with its questions loaded as :Question nodes, and the same questions as a file
    (`toy.jsonl`)."""
    graph = kept_graph(jamaica.TRIPLES, then=_jamaica_questions)
    path = tmp_path / "toy.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in jamaica.QUESTIONS), encoding="utf-8")
    return graph, path
