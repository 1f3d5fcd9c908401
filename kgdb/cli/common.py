"""Shared CLI plumbing: the console, effective settings and the database connection."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from kgdb.config import Settings, load_settings

if TYPE_CHECKING:
    from kgdb.cypher import Graph

console = Console()
err_console = Console(stderr=True)

# Sub-apps that several command modules add commands to.
eval_app = typer.Typer(help="Evaluate retrieval or question answering on a question set.", no_args_is_help=True)
runs_app = typer.Typer(help="List, show and prune retrieval runs written back to the graph.", no_args_is_help=True)


def settings_from(ctx: typer.Context) -> Settings:
    """Settings with the global --uri/--user/--password/--database overrides applied."""
    root = ctx.find_root()
    if not isinstance(root.obj, Settings):
        root.obj = load_settings()
    return root.obj


def open_graph(ctx: typer.Context) -> "Graph":
    from kgdb.cypher import Graph  # the driver costs ~0.3 s to import: only commands that connect pay it

    return Graph.connect(settings_from(ctx))


def progress() -> Progress:
    """The one progress-bar layout every long job uses."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )
