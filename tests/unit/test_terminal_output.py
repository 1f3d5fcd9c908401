"""Terminal control characters that come with data (ESC `[2J` clears the screen, OSC `]0;` sets the
window title, BEL rings) are printed as visible escapes in strings, tables and text; newlines, tabs and
plain text are left as they are."""

from __future__ import annotations

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
