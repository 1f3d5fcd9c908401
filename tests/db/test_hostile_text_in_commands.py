"""Terminal control characters in a file name or a question are printed as visible escapes by real
commands against a real Neo4j, and `--json` output stays exact."""

from __future__ import annotations

import json
import subprocess

from support.cli import KGDB, env_for


def test_a_command_error_naming_a_hostile_file_is_printed_escaped(neo4j_settings, tmp_path):

    name = tmp_path / "x\x1b[2J\x1b]0;title\x07.tsv"
    out = subprocess.run(
        [*KGDB, "load", "freebase-subset", str(name), "--no-embed"],
        capture_output=True,
        env=env_for(neo4j_settings),
        timeout=300,
    )
    err = out.stderr.decode()
    assert out.returncode == 1 and "file not found" in err, err
    assert "\x1b" not in err and "\x07" not in err and "x\\x1b[2J\\x1b]0;title\\x07.tsv" in err


def test_ask_prints_a_hostile_question_escaped_and_json_exact(graph, tmp_path):

    path = tmp_path / "gotham.tsv"
    path.write_text("Gotham City\tlocation.location.containedby\tMetropolis\n", encoding="utf-8")
    env = env_for(graph.settings)
    assert (
        subprocess.run(
            [*KGDB, "load", "freebase-subset", str(path)], env=env, capture_output=True, timeout=300
        ).returncode
        == 0
    )
    question = "where is gotham city?\x1b[2J\x1b]0;pwned\x07"
    args = [*KGDB, "ask", question, "--topic", "Gotham City", "--retriever", "cosine"]
    shown = subprocess.run(args, env=env, capture_output=True, timeout=300)
    text = shown.stdout.decode()
    assert shown.returncode == 0, shown.stderr.decode()
    assert "\x1b[2J" not in text and "\x07" not in text and "gotham city?\\x1b[2J\\x1b]0;pwned\\x07" in text, text
    exact = subprocess.run([*args, "--json"], env=env, capture_output=True, timeout=300)
    assert exact.returncode == 0, exact.stderr.decode()
    assert json.loads(exact.stdout)["question"] == question
