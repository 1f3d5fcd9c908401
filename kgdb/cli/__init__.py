"""The `kgdb` command line (typer + rich)."""

from __future__ import annotations

import sys
from typing import Optional

import typer
from rich.markup import escape

from kgdb.cli.common import err_console, eval_app, runs_app
from kgdb.config import load_settings
from kgdb.errors import KgdbError

app = typer.Typer(
    name="kgdb",
    help="Graph-database-backed retrieval for knowledge-graph question answering (Neo4j + PyTorch).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def _print_version(value: bool) -> None:
    # An eager option's callback runs while the options are parsed, before typer asks for a command.
    if value:
        from kgdb import __version__

        typer.echo(f"kgdb {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    ctx: typer.Context,
    uri: Optional[str] = typer.Option(None, "--uri", help="Bolt URI of Neo4j \\[env KGDB_NEO4J_URI]."),
    user: Optional[str] = typer.Option(None, "--user", help="Neo4j user \\[env KGDB_NEO4J_USER]."),
    password: Optional[str] = typer.Option(None, "--password", help="Neo4j password \\[env KGDB_NEO4J_PASSWORD]."),
    database: Optional[str] = typer.Option(None, "--database", help="Neo4j database \\[env KGDB_NEO4J_DATABASE]."),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Log every Cypher query (name and parameters) and model step to stderr."
    ),
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print kgdb's version and exit."
    ),
) -> None:
    if verbose:
        import logging

        from rich.logging import RichHandler

        logging.basicConfig(
            level=logging.DEBUG,
            format="%(name)s: %(message)s",
            handlers=[RichHandler(console=err_console, show_path=False)],
        )
        for noisy in ("neo4j", "urllib3", "httpx", "httpcore", "openai", "filelock", "sentence_transformers", "fsspec"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    ctx.obj = load_settings(neo4j_uri=uri, neo4j_user=user, neo4j_password=password, neo4j_database=database)


def _register() -> None:
    # Each module adds its commands to `app` (or to the shared eval/runs sub-apps).
    from kgdb.cli import admin, ask, embed, label, llm, load, mcp, retrieval, retrievers, serve, train  # noqa: F401

    app.add_typer(eval_app, name="eval")
    app.add_typer(runs_app, name="runs")


_register()


def main() -> None:
    try:
        app()
    except KgdbError as exc:
        # soft_wrap: one error is one line, however long, so logs and `grep` keep it whole
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/]: loads can be resumed by running the same command again")
        sys.exit(130)
