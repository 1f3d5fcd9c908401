"""`kgdb embed [--all]`: fill the entity name vectors a lazy load left out, resumably."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from kgdb.cli import app
from kgdb.cli.common import open_graph, say, settings_from


@app.command("embed")
def embed(
    ctx: typer.Context,
    all_entities: Annotated[
        bool,
        typer.Option(
            "--all", help="Every entity without a vector, not only those around the loaded questions' topics."
        ),
    ] = False,
) -> None:
    """Fill missing entity name vectors (after `kgdb load ... --embeddings lazy`).

    Plain `kgdb embed` covers the topic entities of the loaded questions (`kgdb load questions`) and
    their direct neighbours, where every retrieval of those questions starts; `--all` covers every
    entity. Vectors are written only where still missing, page by page, so a killed run resumes
    where it stopped, it can run in the background (`nohup kgdb embed --all &`) next to retrievals
    (which fill the vectors they touch themselves), and a rerun writes 0. Runs on the GPU when
    sentence-transformers finds one (KGDB_DEVICE).
    """
    from kgdb.cli.load import phase_progress
    from kgdb.cypher.schema import init_schema
    from kgdb.cypher.tables import graph_fingerprint
    from kgdb.embeddings import get_embedder
    from kgdb.loaders.writer import embed_missing, missing_entity_embeddings

    settings = settings_from(ctx)
    with open_graph(ctx) as graph:
        _, info = graph_fingerprint(graph)
        model = info.get("model") or settings.embedding_model  # the model the graph was embedded with
        embedder = get_embedder(model, settings.device, settings.embedding_batch_size)
        init_schema(graph, embedder.name, embedder.dim)  # records the model of a --no-embed graph; refuses another dim
        scope = None if all_entities else (graph.single("embed_scope") or {}).get("idx") or []
        what = "every entity" if scope is None else f"{len(scope):,} entities around the loaded questions' topics"
        say("embedding the names of {} that have no vector yet, with {}", what, model)
        t0 = time.perf_counter()
        with phase_progress() as (_, report):
            done = embed_missing(graph, embedder, progress=report, scope=scope)
        seconds = time.perf_counter() - t0
        left = missing_entity_embeddings(graph)
    entity, relation = done.get("entity", 0), done.get("relation", 0)
    rate = f", {entity / seconds:,.0f} names/s on {embedder.device}" if entity and seconds else ""
    say(
        "wrote {} entity vectors and {} relation vectors in {} s{}; {} entity names still without a vector{}",
        f"{entity:,}",
        f"{relation:,}",
        f"{seconds:.1f}",
        rate,
        f"{left:,}",
        "" if all_entities or not left else " (`kgdb embed --all` fills them)",
    )
