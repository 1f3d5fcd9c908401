"""`kgdb mcp`: the graph tools for LLM agents over the Model Context Protocol, on stdin and stdout.

An MCP client (a desktop assistant, an agent framework) starts this command and speaks the protocol on
its standard streams, so nothing but the protocol may reach stdout: kgdb's messages and logs go to stderr.
"""

from __future__ import annotations

from typing import Annotated

import typer

from kgdb.cli import app
from kgdb.cli.common import open_graph


@app.command("mcp")
def mcp(
    ctx: typer.Context,
    deadline: Annotated[
        float, typer.Option("--deadline", min=0.1, help="Seconds one tool call may take before it is stopped.")
    ] = 60.0,
    cypher_timeout: Annotated[
        float,
        typer.Option(
            "--cypher-timeout", min=0.1, help="Seconds the cypher tool's query may run before Neo4j stops it."
        ),
    ] = 10.0,
    row_cap: Annotated[
        int, typer.Option("--row-cap", min=1, help="Most rows, entities or triples one tool call returns.")
    ] = 100,
    max_chars: Annotated[
        int, typer.Option("--max-chars", min=1000, help="Most characters of one tool result (as JSON).")
    ] = 50_000,
) -> None:
    """Serve read-only graph tools to an LLM agent over MCP on stdio (link_entities, relation_paths,
    neighbours, follow, ask, cypher). Nothing is written to the graph."""
    from kgdb.api import Kgdb
    from kgdb.service.graph_tools import ToolLimits
    from kgdb.service.mcp_server import run_stdio

    limits = ToolLimits(deadline_s=deadline, cypher_timeout_s=cypher_timeout, row_cap=row_cap, max_chars=max_chars)
    with Kgdb(open_graph(ctx)) as kg:
        run_stdio(kg, limits=limits)
