"""kgdb.toml is checked like any input: a bad file, key or value is one error naming the file and
the key, in every command, and `KGDB_CONFIG` naming a file that is not there is an error, not a
silent fall-back to the defaults."""

from __future__ import annotations

import os
import subprocess

import pytest

from kgdb.config import Settings
from kgdb.errors import InputError
from support.cli import KGDB


@pytest.fixture
def toml(tmp_path, monkeypatch):
    path = tmp_path / "kgdb.toml"
    monkeypatch.setenv("KGDB_CONFIG", str(path))
    for name in list(os.environ):
        if name.startswith("KGDB_") and name != "KGDB_CONFIG":
            monkeypatch.delenv(name)
    return path


def _refused(path, *needles: str) -> str:
    with pytest.raises(InputError) as err:
        Settings()
    message = str(err.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    for needle in needles:
        assert needle in message, message
    return message


@pytest.mark.parametrize(
    "text, key, why",
    [
        ("neo4j_bolt_port = true", "neo4j_bolt_port", "an integer"),
        ("neo4j_bolt_port = 7687.5", "neo4j_bolt_port", "an integer"),
        ("llm_timeout = nan", "llm_timeout", "finite"),
        ("llm_timeout = false", "llm_timeout", "a number"),
        ("neo4j_uri = 7687", "neo4j_uri", "str"),
        ("cache_dir = ['a']", "cache_dir", "Path"),
        ("neo4j_heap = {size = '1g'}", "neo4j_heap", "str"),
    ],
    ids=["port-bool", "port-fraction", "timeout-nan", "timeout-bool", "uri-number", "path-list", "heap-table"],
)
def test_a_value_of_the_wrong_type_names_file_and_key(toml, text, key, why):
    toml.write_text(text + "\n", encoding="utf-8")
    _refused(toml, f"key {key}", why)


def test_a_port_given_as_true_never_becomes_a_uri(toml):
    toml.write_text("neo4j_bolt_port = true\n", encoding="utf-8")
    with pytest.raises(InputError):
        Settings()
    toml.write_text("neo4j_bolt_port = 17711\n", encoding="utf-8")
    assert Settings().neo4j_uri == "bolt://localhost:17711"


def test_unknown_keys_and_sections_are_named(toml):
    toml.write_text("neo4j_url = 'bolt://x:1'\n[neo4j]\nport = 1\n", encoding="utf-8")
    _refused(toml, "neo4j_url", "neo4j")


def test_a_file_that_is_not_utf8_is_one_error_naming_it(toml):
    toml.write_bytes(b"neo4j_user = 'caf\xe9'\n")
    _refused(toml, "UTF-8")


def test_deeply_nested_toml_is_refused_not_a_recursion_traceback(toml):
    toml.write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        Settings()
    assert str(err.value).startswith(f"{toml}: ")


def test_kgdb_config_naming_a_missing_file_is_an_error(toml):
    _refused(toml, "KGDB_CONFIG", "not found")


def test_kgdb_config_set_but_empty_is_an_error(monkeypatch):
    monkeypatch.setenv("KGDB_CONFIG", "")
    with pytest.raises(InputError, match="KGDB_CONFIG"):
        Settings()


def test_every_command_reports_a_bad_config_in_one_line(tmp_path):

    path = tmp_path / "kgdb.toml"
    path.write_bytes(b"\xff\xfeneo4j_bolt_port = 1\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KGDB_")}
    for args in (["config", "show"], ["runs", "list"]):
        out = subprocess.run(
            [*KGDB, *args], capture_output=True, text=True, timeout=120, env={**env, "KGDB_CONFIG": str(path)}
        )
        lines = [line for line in out.stderr.splitlines() if line.strip()]
        assert out.returncode == 1 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
        assert str(path) in lines[0] and "UTF-8" in lines[0]
