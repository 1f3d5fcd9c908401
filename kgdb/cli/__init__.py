"""The `kgdb` command line (typer + rich)."""

from __future__ import annotations

import atexit
import gc
import importlib
import sys
import threading
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.markup import escape

from kgdb.cli.common import err_console, eval_app, runs_app
from kgdb.config import load_settings
from kgdb.errors import KgdbError

if TYPE_CHECKING:
    app: typer.Typer  # at run time `kgdb.cli.app` is `_app` with every command (see __getattr__)

# The modules that add commands to `app`, in the order `kgdb --help` lists their commands.
COMMAND_MODULES = (
    "admin",
    "ask",
    "embed",
    "evaluate",
    "label",
    "llm",
    "load",
    "mcp",
    "retrieval",
    "retrievers",
    "serve",
    "train",
)
# Which of them a top-level command needs: `kgdb ask` imports one module instead of all twelve
# (the server's, the loaders', training's ... cost a cold `kgdb ask` about 0.2 s). A command
# missing here still works, through every module; tests/unit/test_fast_ask.py keeps this complete.
MODULES_OF_COMMAND = {
    "init": ("admin",),
    "status": ("admin",),
    "neo4j": ("admin",),
    "config": ("admin",),
    "ask": ("ask",),
    "eval": ("evaluate", "retrievers"),
    "embed": ("embed",),
    "label": ("label",),
    "llm": ("llm",),
    "load": ("load",),
    "repair": ("load",),
    "mcp": ("mcp",),
    "link": ("retrieval",),
    "subgraph": ("retrieval",),
    "paths": ("retrieval",),
    "chains": ("retrieval",),
    "runs": ("retrieval",),
    "retrievers": ("retrievers",),
    "retrieve": ("retrievers",),
    "serve": ("serve",),
    "splits": ("train",),
    "train": ("train",),
}
# The global options that take a value (the word after them is not the command).
VALUE_OPTIONS = frozenset({"--uri", "--user", "--password", "--database"})

_app = typer.Typer(
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


@_app.callback()
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


_registering = False


def _register(modules: tuple[str, ...]) -> None:
    # Each module adds its commands to `app` (or to the shared eval/runs sub-apps) when imported.
    global _registering
    _registering = True  # their `from kgdb.cli import app` gets `_app` as it is
    try:
        for name in modules:
            importlib.import_module(f"kgdb.cli.{name}")
    finally:
        _registering = False
    added = {group.typer_instance for group in _app.registered_groups}
    for sub_app, name in ((eval_app, "eval"), (runs_app, "runs")):
        if sub_app not in added:
            _app.add_typer(sub_app, name=name)


def modules_for(args: list[str]) -> tuple[str, ...]:
    """The command modules a command line needs: its command's, else all (`--help`, a typo, completion)."""
    takes_value = False
    for arg in args:
        if takes_value:
            takes_value = False
        elif arg.startswith("-"):
            takes_value = arg in VALUE_OPTIONS
        else:
            return MODULES_OF_COMMAND.get(arg, COMMAND_MODULES)
    return COMMAND_MODULES


def __getattr__(name: str) -> Any:
    # `from kgdb.cli import app` (tests, scripts, CliRunner) gets every command; `main()` imports
    # only what its command line needs.
    if name == "app":
        if not _registering:
            _register(COMMAND_MODULES)
        return _app
    raise AttributeError(f"module 'kgdb.cli' has no attribute {name!r}")


# The first second of a command is start-up: imports and the first answer make some 500k objects
# that live until the exit. The collector is off meanwhile: each of its full passes walks them all
# again (~0.05 s of a cold `kgdb ask`); a command that runs longer gets it back after that second.
START_UP_S = 1.0


def _start_up_without_collector() -> None:
    gc.disable()
    back_on = threading.Timer(START_UP_S, gc.enable)
    back_on.daemon = True  # never keeps a finished command waiting
    back_on.start()
    atexit.register(_exit_without_collecting)  # registered first: runs last, after every other exit hook


def _exit_without_collecting() -> None:
    # Python's shutdown walks every object with the collector several times as it clears the modules
    # (0.15 s of CPU after a `kgdb ask` has printed its answer). Frozen, they are only freed. Not with
    # torch loaded: extension modules of the model side count their objects at exit and would report
    # frozen ones as leaked (see kgdb.heap, which unfreezes them at exit for that reason).
    if "torch" not in sys.modules:
        gc.freeze()


def main() -> None:
    _start_up_without_collector()
    _register(modules_for(sys.argv[1:]))
    try:
        _app()
    except KgdbError as exc:
        # soft_wrap: one error is one line, however long, so logs and `grep` keep it whole
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/]: loads can be resumed by running the same command again")
        sys.exit(130)
