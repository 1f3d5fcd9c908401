"""`kgdb neo4j ...`, `kgdb config show`, `kgdb init`, `kgdb status`: the server and the schema."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from kgdb.cli import app
from kgdb.cli.common import console, open_graph, say, settings_from
from kgdb.config import mask_uri
from kgdb.server import server_from_settings

neo4j_app = typer.Typer(help="Install and run a local Neo4j 5.26 server without Docker.", no_args_is_help=True)
config_app = typer.Typer(help="Show the effective configuration.", no_args_is_help=True)
app.add_typer(neo4j_app, name="neo4j")
app.add_typer(config_app, name="config")


def _server(ctx: typer.Context, home: Optional[Path], bolt_port: Optional[int], http_port: Optional[int]):
    settings = settings_from(ctx).with_overrides(neo4j_home=home, neo4j_bolt_port=bolt_port, neo4j_http_port=http_port)
    return server_from_settings(settings)


def _log(message: str) -> None:
    say("{}", message)


HomeOpt = typer.Option(None, "--home", help="Server folder \\[env KGDB_NEO4J_HOME].")
BoltOpt = typer.Option(None, "--bolt-port", help="Bolt port \\[env KGDB_NEO4J_BOLT_PORT, default 7687].")
HttpOpt = typer.Option(None, "--http-port", help="HTTP/Browser port \\[env KGDB_NEO4J_HTTP_PORT, default 7474].")


@neo4j_app.command("install")
def neo4j_install(
    ctx: typer.Context,
    home: Optional[Path] = HomeOpt,
    bolt_port: Optional[int] = BoltOpt,
    http_port: Optional[int] = HttpOpt,
    jars_only: bool = typer.Option(
        False,
        "--jars-only",
        help="Only resolve the jars into the shared cache; create "
        "no server home (what CI needs: its tests start their own server).",
    ),
) -> None:
    """Resolve Neo4j community + Browser jars from Maven Central into a shared cache, then write neo4j.conf
    and set the initial password (idempotent; a running server's conf is left alone)."""
    server = _server(ctx, home, bolt_port, http_port)
    if jars_only:
        server.install_jars(log=_log)
    else:
        server.install(log=_log)


@neo4j_app.command("start")
def neo4j_start(
    ctx: typer.Context,
    home: Optional[Path] = HomeOpt,
    bolt_port: Optional[int] = BoltOpt,
    http_port: Optional[int] = HttpOpt,
) -> None:
    """Start the local server in the background (installing it first if needed) and wait until Bolt answers and
    its databases are online (a database a full disk keeps offline is named, with the disk, and the server stopped)."""
    server = _server(ctx, home, bolt_port, http_port)
    if not server.jars_installed():
        server.install(log=_log)
    server.start(log=_log)


@neo4j_app.command("stop")
def neo4j_stop(ctx: typer.Context, home: Optional[Path] = HomeOpt) -> None:
    """Stop the local server."""
    _server(ctx, home, None, None).stop(log=_log)


@neo4j_app.command("status")
def neo4j_status(ctx: typer.Context, home: Optional[Path] = HomeOpt) -> None:
    """Say whether the local server runs, and where (exit code 0 when it runs, 3 when it does not)."""
    server = _server(ctx, home, None, None)
    if server.running():
        say(
            "running (pid {}): Bolt {}, Browser {}, home {}",
            server.pid(),
            server.bolt_uri,
            server.browser_link,
            server.home,
        )
        return
    if server.jars_installed() and (server.conf_dir / "neo4j.conf").is_file():  # jars alone: the shared cache
        say("installed in {}, not running: `kgdb neo4j start`", server.home)
    else:
        say("not installed in {}: `kgdb neo4j install`", server.home)
    raise typer.Exit(3)  # the LSB status code for "not running": scripts can test it


@neo4j_app.command("logs")
def neo4j_logs(
    ctx: typer.Context,
    home: Optional[Path] = HomeOpt,
    lines: int = typer.Option(50, "--lines", "-n", help="How many lines."),
) -> None:
    """Print the end of the server log."""
    console.print(_server(ctx, home, None, None).log_tail(lines) or "(no log yet)", highlight=False, markup=False)


@config_app.command("show")
def config_show(ctx: typer.Context) -> None:
    """Print the effective settings (defaults < kgdb.toml < KGDB_* env < flags), password masked."""
    table = Table("setting", "value", title="kgdb settings")
    for key, value in settings_from(ctx).masked().items():
        table.add_row(key, escape(str(value)))
    console.print(table)


@app.command("init")
def init(ctx: typer.Context) -> None:
    """Create constraints, full-text and vector indexes (idempotent; `load` runs it too)."""
    from kgdb.cypher.schema import init_schema
    from kgdb.embeddings import get_embedder

    settings = settings_from(ctx)
    dim = get_embedder(settings.embedding_model, settings.device, settings.embedding_batch_size).dim
    with open_graph(ctx) as graph:
        for name in init_schema(graph, settings.embedding_model, dim):
            say("ok  {}", name)
    console.print(f"Schema ready (embedding dimension {dim}).")


@app.command("status")
def status(ctx: typer.Context) -> None:
    """Counts of what the connected database holds."""
    from kgdb.cypher.schema import counts

    with open_graph(ctx) as graph:
        table = Table("what", "count", title=escape(f"{mask_uri(graph.settings.neo4j_uri)} / {graph.database}"))
        table.columns[1].no_wrap, table.columns[1].justify = True, "right"
        for key, value in counts(graph).items():
            table.add_row(key, f"{value:,}")
    console.print(table)
