"""MkDocs hook: the CLI reference page is generated from the typer app at build time, so it cannot drift.

A page that contains the marker `<!-- kgdb-cli-reference -->` gets, in its place, one section per command of
`kgdb` (groups walked recursively): its help text, its usage line and a table of its arguments and options
with their types and defaults, read from the click command typer builds (`typer.main.get_command`). typer may carry its own copy of click, so the objects are read by their
attributes (`param_type_name`, `list_commands`, `context_class`), never checked against `click` classes.
"""

from __future__ import annotations

import html

import typer
from rich.text import Text

MARKER = "<!-- kgdb-cli-reference -->"


def _plain(text: str | None) -> str:
    # typer's rich_markup_mode="rich": help strings may hold [bold] tags and escaped \[brackets].
    return Text.from_markup(text or "").plain.strip()


def _cell(text: str) -> str:
    return html.escape(" ".join(text.split()), quote=False).replace("|", "\\|")


def _default(param) -> str:
    if getattr(param, "is_flag", False) and not param.default:
        return ""
    value = param.default
    if value is None or callable(value) or value == () or value == []:
        return ""
    if isinstance(value, (list, tuple)):
        value = ", ".join(str(v) for v in value)
    return f"`{value}`"


def _kind(param) -> str:
    if getattr(param, "is_flag", False):
        return "flag"
    if hasattr(param.type, "choices"):
        return " \\| ".join(f"`{c}`" for c in param.type.choices)
    return getattr(param.type, "name", "text").lower()


def _names(param) -> str:
    if param.param_type_name == "argument":
        return f"`{param.human_readable_name}` (argument)"
    names = [*param.opts, *param.secondary_opts]
    return " / ".join(f"`{n}`" for n in names)


def _command(cmd, path: list[str], ctx, out: list[str]) -> None:
    level = "#" * min(len(path) + 1, 4)
    out += [f"{level} `{' '.join(path)}`", ""]
    help_text = _plain(cmd.help)
    if help_text:
        out += [html.escape(help_text, quote=False), ""]
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    out += ["```", f"{' '.join(path)} {usage}".rstrip(), "```", ""]
    params = [
        p
        for p in cmd.get_params(ctx)
        if not getattr(p, "hidden", False)
        and p.name != "help"
        and p.name not in ("install_completion", "show_completion")
    ]
    if params:
        out += ["| name | type | default | description |", "|---|---|---|---|"]
        for p in params:
            desc = _plain(getattr(p, "help", None))
            if getattr(p, "required", False):
                desc = f"Required. {desc}".strip()
            out.append(f"| {_names(p)} | {_kind(p)} | {_default(p)} | {_cell(desc)} |")
        out.append("")
    if hasattr(cmd, "list_commands"):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            _command(sub, [*path, name], sub.context_class(sub, info_name=name, parent=ctx), out)


def cli_reference() -> str:
    from kgdb.cli import app

    root = typer.main.get_command(app)
    out: list[str] = []
    _command(root, ["kgdb"], root.context_class(root, info_name="kgdb"), out)
    return "\n".join(out)


def on_page_markdown(markdown: str, page, config, files) -> str:  # MkDocs calls hooks with these four arguments
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, cli_reference())
