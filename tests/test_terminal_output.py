"""Terminal control characters that come with data, file names or questions (ESC `[2J` clears the
screen, OSC `]0;` sets the window title, BEL rings) are printed as visible escapes by every command;
`--json` output stays exact."""

from __future__ import annotations

import json
import subprocess

from rich.table import Table
from rich.text import Text

from kgdb.cli.common import SafeConsole, visible

HOSTILE = "Gotham\x1b[2J\x1b]0;pwned\x07 City\u202e"


def _printed(*renderables) -> str:
    console = SafeConsole(width=200, force_terminal=True, color_system="truecolor")
    with console.capture() as cap:
        for r in renderables:
            console.print(r, highlight=False)
    return cap.get()


def test_control_characters_in_strings_tables_and_text_are_printed_escaped():
    table = Table("name")
    table.add_row(HOSTILE)
    out = _printed(f"[bold]{HOSTILE}[/]", table, Text(HOSTILE, style="red"))
    assert "\x1b[2J" not in out and "\x1b]0;" not in out and "\x07" not in out and "\u202e" not in out
    assert out.count("Gotham\\x1b[2J\\x1b]0;pwned\\x07 City\\u202e") == 2, out  # rich's Text drops a BEL itself
    assert "Gotham\\x1b[2J\\x1b]0;pwned City\\u202e" in out
    assert "\x1b[1m" in out and "\x1b[31m" in out  # rich's own styling still reaches the terminal


def test_newlines_and_tabs_are_kept_and_plain_text_is_unchanged():
    assert visible("a\tb\nc") == "a\tb\nc"
    assert visible("Zoë [/b] ‘x’") == "Zoë [/b] ‘x’"


def test_a_command_error_naming_a_hostile_file_is_printed_escaped(neo4j_settings, tmp_path):
    from test_load_cli import KGDB, env_for  # imports the CLI: only tests that run it

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
    from test_load_cli import KGDB, env_for  # imports the CLI: only tests that run it

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
