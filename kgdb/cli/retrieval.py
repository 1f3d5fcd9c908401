"""`kgdb link`, `kgdb subgraph`, `kgdb paths`, `kgdb chains` and `kgdb runs list|show|prune`."""

from __future__ import annotations

import time
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from kgdb.cli import app
from kgdb.cli.common import console, open_graph, runs_app, settings_from
from kgdb.errors import InputError
from kgdb.limits import DEFAULT_CAP, MAX_HOPS


def _embedder(ctx: typer.Context):
    from kgdb.embeddings import get_embedder

    s = settings_from(ctx)
    return get_embedder(s.embedding_model, s.device, s.embedding_batch_size)


@app.command("link")
def link(
    ctx: typer.Context,
    question: str = typer.Argument(..., help="Free-text question."),
    k: int = typer.Option(5, "-k", "--top", min=1, help="How many entities to show."),
) -> None:
    """Link a question to topic entities (full-text exact+fuzzy, re-ranked by vector similarity)."""
    from kgdb.cypher.linking import link_entities
    from kgdb.pipeline.vectors import vectors_on_demand
    from kgdb.reading import read_question

    embedder = _embedder(ctx)
    vector = embedder.encode_one(question)
    with open_graph(ctx) as graph:
        start = time.perf_counter()
        linked = link_entities(
            graph,
            read_question(question),
            vector,
            k=k,
            entity_vectors=vectors_on_demand(graph, settings_from(ctx)),
            encode=embedder.encode,
        )
        ms = (time.perf_counter() - start) * 1000
    table = Table("rank", "id", "name", "score", "mention")
    for i, e in enumerate(linked, 1):
        table.add_row(str(i), escape(e.id), escape(e.name), f"{e.score:.3f}", escape(e.mention or "(vector)"))
    console.print(table)
    console.print(f"{len(linked)} candidates in {ms:.1f} ms")


@app.command("subgraph")
def subgraph(
    ctx: typer.Context,
    question: str = typer.Argument(..., help="Free-text question (embedded for the cap rule and linking)."),
    topic: Optional[list[str]] = typer.Option(
        None, "--topic", "-t", help="Topic entity name or id (repeatable); default: the best linked entity."
    ),
    hops: int = typer.Option(2, "--hops", min=1, max=MAX_HOPS, help="Radius around the topic entities."),
    cap: int = typer.Option(
        DEFAULT_CAP,
        "--cap",
        min=1,
        help="Most triples expanded from one node (beyond it: relations most similar to the question).",
    ),
    show: int = typer.Option(10, "--show", min=0, help="Print this many triples."),
) -> None:
    """Extract the topic-centred subgraph of a question and print its size and timing."""
    from kgdb.cypher.linking import question_topics
    from kgdb.cypher.retrieval import fetch_subgraph
    from kgdb.pipeline.vectors import vectors_on_demand
    from kgdb.reading import read_question

    embedder = _embedder(ctx)
    vector = embedder.encode_one(question)
    settings = settings_from(ctx)
    with open_graph(ctx) as graph:
        # the policy retrieve and ask use
        found = question_topics(
            graph,
            read_question(question),
            vector,
            topic or None,
            entity_vectors=vectors_on_demand(graph, settings),
            encode=embedder.encode,
        )
        topics = found.ids
        if found.linked:
            best = found.linked[0]
            console.print(
                f"linked topic: {best.name} ({best.id}, score {best.score:.3f})", markup=False, highlight=False
            )
        if found.note():
            console.print(f"note: {found.note()}", markup=False, highlight=False)
        sg = fetch_subgraph(
            graph,
            topics,
            vector,
            hops=hops,
            cap=cap,
            question=question,
            **settings.fetch_bounds,
        )
    console.print(
        f"subgraph of {', '.join(topics)}: {sg.num_triples} triples, {sg.num_nodes} entities "
        f"({int(sg.is_cvt.sum())} CVT), {len(set(sg.relation_names))} relation types; hops={hops} cap={cap}; "
        f"{sg.meta['seconds'] * 1000:.1f} ms (triples per level: {sg.meta['levels']})"
        + (
            f"; truncated at KGDB_FETCH_MAX_TRIPLES={settings.fetch_max_triples}"
            if sg.meta.get("budget_reached")
            else ""
        )
        + (
            f"; {sg.meta['hubs_skipped']} hubs not expanded (KGDB_FETCH_HUB_SCAN={settings.fetch_hub_scan})"
            if sg.meta.get("hubs_skipped")
            else ""
        ),
        markup=False,
        highlight=False,
    )
    for i in range(min(show, sg.num_triples)):
        h, r, t = sg.triple(i)
        console.print(f"  {h} → [{r}] → {t}", markup=False, highlight=False)


@app.command("paths")
def paths(
    ctx: typer.Context,
    source: str = typer.Option(..., "--from", help="Topic entity (name or id)."),
    target: list[str] = typer.Option(..., "--to", help="Answer entity (name or id; repeatable)."),
    directed_only: bool = typer.Option(False, "--directed-only", help="No undirected fallback."),
) -> None:
    """All shortest paths between two entities (both directions, parallel relations kept)."""
    from kgdb.cypher.linking import resolve_topics
    from kgdb.cypher.paths import shortest_path_triples

    with open_graph(ctx) as graph:
        src = resolve_topics(graph, [source])
        dst = resolve_topics(graph, target)
        start = time.perf_counter()
        found = shortest_path_triples(graph, src, dst, undirected=not directed_only)
        ms = (time.perf_counter() - start) * 1000
    for p in found:
        steps = [p.triples[0][1]] + [x for _, _, r, t in p.triples for x in (f"[{r}]", t)]
        console.print(f"({p.direction}, {p.length} hops) " + " → ".join(steps), markup=False, highlight=False)
    console.print(f"{len(found)} shortest paths in {ms:.1f} ms")


@app.command("chains")
def chains(
    ctx: typer.Context,
    run: str = typer.Argument(..., help="Run id (see `kgdb runs list`)."),
    max_hops: int = typer.Option(2, "--max-hops", "-L", min=1, help="Longest chain (triples)."),
    unlimited: bool = typer.Option(False, "--unlimited", help="No length limit (ReG's CWQ setting)."),
) -> None:
    """Evidence chains of a run: BFS over its scored triples from the topic entities (ReG Alg. 1)."""
    from kgdb.cypher.chains import evidence_chains

    with open_graph(ctx) as graph:
        result = evidence_chains(graph, run, max_hops=None if unlimited else max_hops)
    if result.question:
        console.print(f"question: {result.question}", markup=False, highlight=False)
    console.print(result.render(), markup=False, highlight=False)
    console.print(
        f"{len(result.chains)} chains from {', '.join(result.anchors)}; {len(result.unreachable)} triples on no chain",
        markup=False,
        highlight=False,
    )


@runs_app.command("list")
def runs_list(
    ctx: typer.Context,
    qid: Optional[str] = typer.Option(None, "--qid", help="Only runs of this question."),
    limit: int = typer.Option(50, "--limit", min=1),
) -> None:
    """Retrieval runs in the graph, newest first."""
    from kgdb.cypher.writeback import list_runs

    with open_graph(ctx) as graph:
        runs = list_runs(graph, qid=qid, limit=limit)
    table = Table("run", "qid", "retriever", "k", "triples", "created")
    for r in runs:
        table.add_row(
            escape(r.run),
            escape(r.qid or ""),
            escape(r.retriever or ""),
            str(r.k),
            str(r.triples),
            escape(r.created or ""),
        )
    console.print(table)
    console.print(f"{len(runs)} runs")


@runs_app.command("show")
def runs_show(ctx: typer.Context, run: str = typer.Argument(...), top: int = typer.Option(20, "--top", min=0)) -> None:
    """One run: question, topic entities and its scored triples by rank."""
    from kgdb.cypher.writeback import show_run

    with open_graph(ctx) as graph:
        info = show_run(graph, run)
    console.print(
        f"run {info['run']}: {info['retriever']} k={info['k']} qid={info['qid']} created {info['created']}",
        markup=False,
        highlight=False,
    )
    console.print(f"question: {info['question']}\ntopics: {', '.join(info['topics'])}", markup=False, highlight=False)
    for t in info["triples"][:top]:
        console.print(
            f"  {t['rank']:>4}  {t['score']:.4f}  {t['h_name']} → [{t['rel']}] → {t['t_name']}",
            markup=False,
            highlight=False,
        )
    console.print(f"{len(info['triples'])} scored triples")


@runs_app.command("prune")
def runs_prune(
    ctx: typer.Context,
    run: Optional[list[str]] = typer.Argument(None, help="Run ids to delete."),
    retriever: Optional[str] = typer.Option(None, "--retriever", help="Delete this retriever's runs."),
    qid: Optional[str] = typer.Option(None, "--qid", help="Delete this question's runs."),
    before: Optional[str] = typer.Option(None, "--before", help="Delete runs created before this ISO datetime."),
    all_runs: bool = typer.Option(False, "--all", help="Delete every run (asks first on a terminal)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before --all (what scripts pass)."),
) -> None:
    """Delete runs (their Retrieval node and SCORED edges) by id or by filter."""
    from datetime import datetime

    from kgdb.cypher.writeback import prune_runs

    if not (run or retriever or qid or before or all_runs):
        raise InputError("name runs to prune, or use --retriever/--qid/--before, or --all", path="kgdb runs prune")
    if before is not None:
        try:
            datetime.fromisoformat(before)
        except ValueError:
            raise InputError(
                f"{before!r} is not an ISO date or datetime (e.g. 2026-01-31 or 2026-01-31T12:00:00)", path="--before"
            ) from None
    with open_graph(ctx) as graph:
        if all_runs and not yes:
            _confirm_prune_all(len(graph.run("runs_older_than", retriever=None, qid=None, before=None)))
        if run:
            known = {r["run"] for r in graph.run("runs_older_than", retriever=None, qid=None, before=None)}
            unknown = [r for r in run if r not in known]
            if unknown:
                # Nothing is deleted when one id is wrong: a typo must not half-apply a prune.
                raise InputError(
                    f"no such run: {', '.join(unknown)} (see `kgdb runs list`); nothing deleted", path="RUN"
                )
        runs, edges = prune_runs(graph, runs=list(run) if run else None, retriever=retriever, qid=qid, before=before)
    console.print(f"deleted {runs} runs and {edges} scored triples")


def _confirm_prune_all(runs: int) -> None:
    """--all cannot be undone: a person confirms it, a script says so with --yes."""
    import sys

    if not sys.stdin.isatty():
        raise InputError(
            f"--all deletes every run ({runs:,}) and cannot be undone: pass --yes to confirm (no terminal to ask on)",
            path="kgdb runs prune",
        )
    if not typer.confirm(f"Delete all {runs:,} runs and their scored triples?", default=False):
        console.print("nothing deleted")
        raise typer.Exit(1)
