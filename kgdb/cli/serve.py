"""`kgdb serve`: the HTTP API (`kgdb.service.app`) on uvicorn, with the graph's models loaded before
the first request, so the first answer is as fast as the next."""

from __future__ import annotations

import time
from typing import Annotated, Optional

import typer
from rich.markup import escape

from kgdb.cli import app
from kgdb.cli.common import console, open_graph, settings_from
from kgdb.config import mask_uri
from kgdb.service.options import (
    DEFAULT_DEADLINE_S,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_PORT,
    TOKEN_ENV,
    ServiceOptions,
    default_workers,
)


@app.command("serve")
def serve(
    ctx: typer.Context,
    host: Annotated[
        str, typer.Option("--host", help=f"Address to listen on; beyond loopback only with {TOKEN_ENV} set.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="TCP port.")] = DEFAULT_PORT,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Write nothing: asks keep no run, a request to write is refused.")
    ] = False,
    deadline: Annotated[
        float, typer.Option("--deadline", min=0.001, help="Seconds a request may take before it is answered 504.")
    ] = DEFAULT_DEADLINE_S,
    workers: Annotated[
        Optional[int],
        typer.Option(
            "--workers", min=1, help="Requests computed at once, on worker threads (default: 4 per CPU core)."
        ),
    ] = None,
    max_body_bytes: Annotated[
        int, typer.Option("--max-body-bytes", min=1, help="Largest request body (413 above it).")
    ] = DEFAULT_MAX_BODY_BYTES,
    max_response_bytes: Annotated[
        int, typer.Option("--max-response-bytes", min=1, help="Largest response (refused, 422, above it).")
    ] = DEFAULT_MAX_RESPONSE_BYTES,
    warm_up: Annotated[
        bool, typer.Option("--warm-up/--no-warm-up", help="Answer one question before listening (loads the models).")
    ] = True,
) -> None:
    """Serve the HTTP API (`/v1/ask`, `/v1/retrieve`, ...; OpenAPI at `/docs`) with the models kept warm."""
    import uvicorn

    from kgdb.api import Kgdb
    from kgdb.service.app import create_app
    from kgdb.service.warm_up import warm_up as warm

    options = ServiceOptions.from_env(
        host=host,
        port=port,
        read_only=read_only,
        deadline_s=deadline,
        workers=workers or default_workers(),
        max_body_bytes=max_body_bytes,
        max_response_bytes=max_response_bytes,
    )
    options.check_exposure()  # before anything is loaded: one clear line
    start = time.perf_counter()
    settings = settings_from(ctx)
    # plain lines, not a spinner: a service's output usually goes to a log
    console.print(f"connecting to Neo4j at {escape(mask_uri(settings.neo4j_uri))} ...", highlight=False)
    kg = Kgdb(open_graph(ctx))
    try:
        if warm_up:
            console.print("loading the text encoder and models (one warm-up question, nothing written) ...")
            console.print(escape(warm(kg, write=not options.read_only)), highlight=False)
        service = create_app(kg, options)
        console.print(
            f"[bold]kgdb serve[/] ready in {time.perf_counter() - start:.1f} s: {escape(options.url)}/v1 "
            f"(API docs {escape(options.url)}/docs); {options.workers} workers, deadline {options.deadline_s:g} s"
            + (", read-only" if options.read_only else "")
            + (", bearer token required" if options.token else ""),
            highlight=False,
        )
        uvicorn.run(service, host=options.host, port=options.port, log_level="warning", access_log=False)
    finally:
        kg.close()
