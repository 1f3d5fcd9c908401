"""`kgdb load freebase-subset` and `kgdb load questions`: fill the graph, with a summary table."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator, List, Optional, TypeVar
from urllib.parse import urlparse

import typer
from rich.progress import Progress, TaskID
from rich.table import Table

from kgdb.cli import app
from kgdb.cli.common import console, open_graph, progress, say, settings_from
from kgdb.config import EMBEDDINGS_HELP, EmbeddingMode

T = TypeVar("T")

load_app = typer.Typer(help="Load knowledge graphs and question sets into Neo4j.", no_args_is_help=True)
app.add_typer(load_app, name="load")


@contextmanager
def phase_progress() -> Iterator[tuple[Progress, Callable[[str, int, int], None]]]:
    """One progress bar per phase, created the first time the phase reports."""
    tasks: dict[str, TaskID] = {}
    with progress() as bar:

        def report(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(phase, total=total or None)
            bar.update(tasks[phase], completed=done, total=total or None)

        yield bar, report


@dataclass(frozen=True)
class _Reading:
    """SOURCE and how to read it: the options of `kgdb.loaders.sources.open_stream`, by its names."""

    source: Path | None
    names: Path | None
    dataset: str | None
    relation_prefixes: list[str] | None
    mids_file: Path | None
    skip_bad: bool

    def open(self, opener: Callable[..., T], settings, report: Callable[[str, int, int], None]) -> T:
        """`opener` (`open_source` or `open_stream`) on SOURCE, its progress reported as the reading phase."""
        return opener(
            **asdict(self), cache_dir=settings.cache_dir, progress=lambda done, total: report("reading", done, total)
        )


def _embedder(settings, no_embed: bool):
    if no_embed:
        return None
    from kgdb.embeddings import get_embedder

    with console.status(f"loading embedding model {settings.embedding_model} ..."):
        return get_embedder(settings.embedding_model, settings.device, settings.embedding_batch_size)


@load_app.command("freebase-subset")
def freebase_subset(
    ctx: typer.Context,
    source: Optional[Path] = typer.Argument(
        None,
        help="Triples .tsv/.csv (head, relation, tail), RoG .parquet/.jsonl or a folder of them, "
        "or Freebase N-Triples .nt/.nt.gz. Omitted: the default subset shipped with kgdb (+ its questions).",
        show_default=False,
    ),
    names: Optional[Path] = typer.Option(
        None, "--names", help="`mid<TAB>name` file for a triple file (FB15k-237 layout)."
    ),
    dataset: Optional[str] = typer.Option(
        None, "--dataset", help="Fetch RoG `webqsp` or `cwq` from the Hugging Face hub."
    ),
    relation_prefix: Optional[List[str]] = typer.Option(
        None, "--relation-prefix", help="Keep only relations starting with this (repeatable), e.g. people.person."
    ),
    mids: Optional[Path] = typer.Option(None, "--mids", help="File of mids (one per line): keep triples touching one."),
    bulk: bool = typer.Option(
        False,
        "--bulk",
        help="Write CSVs and run neo4j-admin import on the LOCAL server "
        "(stops and restarts it; replaces the database).",
    ),
    replace: bool = typer.Option(False, "--replace", help="With --bulk: allow replacing a non-empty database."),
    skip_bad: bool = typer.Option(
        False, "--skip-bad", help="Skip malformed lines (counted and reported) instead of stopping."
    ),
    batch_size: int = typer.Option(20_000, "--batch-size", min=1, help="Rows per write transaction (Bolt path)."),
    no_embed: bool = typer.Option(
        False, "--no-embed", help="Skip the embedding phase (run the load again later to add them)."
    ),
    embeddings: EmbeddingMode = typer.Option(EmbeddingMode.auto, "--embeddings", help=EMBEDDINGS_HELP),
    break_lease: bool = typer.Option(
        False,
        "--break-lease",
        help="Remove the load lease a killed load on another machine left behind (only when no other load is running).",
    ),
    dedupe: bool = typer.Option(
        False,
        "--dedupe",
        help="First delete duplicate (head, relation, tail) relationships "
        "already stored (left by loads that ran at the same time), keeping one.",
    ),
) -> None:
    """Load a Freebase subset: entities, relationships, dense idx and name embeddings (idempotent, resumable)."""
    from kgdb.cypher.schema import counts
    from kgdb.loaders.sources import open_source

    settings = settings_from(ctx)
    reading = _Reading(source, names, dataset, relation_prefix, mids, skip_bad)
    if bulk:
        return _bulk(ctx, reading, replace, no_embed, embeddings)
    graph = open_graph(ctx)  # a wrong password fails before a long read
    try:
        seconds: dict[str, float] = {}
        with phase_progress() as (_, report):
            t0 = time.perf_counter()
            src = reading.open(open_source, settings, report)
            seconds["read"] = time.perf_counter() - t0
        say("Read {} triples from {}", f"{len(src.triples):,}", src.description)
        _report_bad(src)
        embedder = _embedder(settings, no_embed)
        with phase_progress() as (_, report):
            from kgdb.loaders.writer import write_graph

            stats = write_graph(
                graph,
                src.triples,
                src.names,
                embedder=embedder,
                batch_size=batch_size,
                progress=report,
                literals=src.literals,
                break_lease=break_lease,
                dedupe=dedupe,
                log=lambda msg: say("{}", msg),
                embeddings=embeddings,
            )
            qstats = _default_questions(graph, reading, report)
        stats.bad_lines = src.bad.count
        stats.seconds = {**seconds, **stats.seconds}
        _summary(stats, src, counts(graph), bulk=False)
        if qstats:
            console.print(f"Loaded {qstats.questions} example questions ({qstats.linked} topic links).")
        if stats.embeddings == EmbeddingMode.lazy and stats.entity_embeddings_left:
            console.print(
                f"Entity names embedded lazily ({embeddings.value}): {stats.entity_embeddings_left:,} names have no vector yet; "
                "retrieval, linking and training fill the ones they touch on use, `kgdb embed` fills those around the "
                "loaded questions' topics and `kgdb embed --all` the rest (resumable).",
                highlight=False,
                markup=False,
            )
        _browser_hint(settings)
    finally:
        graph.close()


def _report_bad(src) -> None:
    if src.names_unused:
        say("ignored {} name(s) given for ids that no loaded triple uses", f"{src.names_unused:,}")
    if src.bad.normalised:
        say("normalised {} value(s) (byte-order mark, surrounding whitespace, Unicode NFC)", f"{src.bad.normalised:,}")
    if src.bad.count:
        say("[yellow]skipped {} bad line(s)[/], e.g.:", f"{src.bad.count:,}")
        for example in src.bad.examples:
            console.print(f"  {example}", highlight=False, markup=False)


def _default_questions(graph, reading: _Reading, report):
    """The example questions of the default subset (loaded with it)."""
    if reading.source is not None or reading.dataset is not None:
        return None
    from kgdb.loaders.questions import read_question_file, write_questions
    from kgdb.loaders.sources import DEFAULT_QUESTIONS

    return write_questions(graph, read_question_file(DEFAULT_QUESTIONS), progress=report)


def _bulk(ctx, reading: _Reading, replace, no_embed, embeddings) -> None:
    """--bulk: the source is streamed into neo4j-admin import files (bounded memory), never held whole."""
    from kgdb.cypher.schema import counts
    from kgdb.loaders.bulk import bulk_load
    from kgdb.loaders.sources import open_stream
    from kgdb.server import server_from_settings

    settings = settings_from(ctx)
    embedder = _embedder(settings, no_embed)
    with phase_progress() as (_, report):
        stream = reading.open(open_stream, settings, report)
        stats = bulk_load(
            settings,
            server_from_settings(settings),
            stream,
            embedder=embedder,
            embeddings=embeddings,
            replace=replace,
            progress=report,
            log=lambda msg: say("{}", msg),
        )
    say("Read {} triples from {}", f"{stats.triples_in:,}", stream.description)
    _report_bad(stream)
    with open_graph(ctx) as graph:
        with phase_progress() as (_, report):
            qstats = _default_questions(graph, reading, report)
        stats.bad_lines = stream.bad.count
        _summary(stats, stream, counts(graph), bulk=True)
    if qstats:
        console.print(f"Loaded {qstats.questions} example questions ({qstats.linked} topic links).")
    _browser_hint(settings)


def _browser_hint(settings) -> None:
    uri = urlparse(settings.neo4j_uri)
    if uri.hostname in ("localhost", "127.0.0.1") and (uri.port or 7687) == settings.neo4j_bolt_port:
        from kgdb.server_home import browser_link

        console.print(
            f"See it in Neo4j Browser: {browser_link('localhost', settings.neo4j_http_port, settings.neo4j_bolt_port)} "
            "with MATCH p=(:Entity)-[]->(:Entity) RETURN p LIMIT 100",
            highlight=False,
            markup=False,
        )


def _summary(stats, src, db: dict, bulk: bool) -> None:
    table = Table("", "this load", "database now", title="kgdb load summary")
    for column in table.columns[1:]:
        column.no_wrap, column.justify = True, "right"  # numbers are never folded or cut
    table.add_row("triples (distinct)", f"{stats.triples_in:,}", f"{db.get('triples', 0):,}")
    if not bulk:
        table.add_row("  created / already there", f"{stats.triples_created:,} / {stats.triples_existing:,}", "")
    table.add_row("entities", f"{stats.entities:,}", f"{db.get('entities', 0):,}")
    table.add_row("  CVT nodes", f"{stats.cvt:,}", f"{db.get('cvt', 0):,}")
    table.add_row("  literals", f"{stats.literals:,}", f"{db.get('literals', 0):,}")
    table.add_row("relation types", f"{stats.relation_types:,}", f"{db.get('relations', 0):,}")
    table.add_row(
        f"entity embeddings ({stats.embeddings})", f"{stats.entity_embeddings:,}", f"{db.get('entity_embeddings', 0):,}"
    )
    table.add_row("relation embeddings", f"{stats.relation_embeddings:,}", f"{db.get('relation_embeddings', 0):,}")
    if src.bad.count:
        table.add_row("bad lines skipped", f"{src.bad.count:,}", "")
    if src.filtered:
        table.add_row("triples filtered out", f"{src.filtered:,}", "")
    if src.names_unused:
        table.add_row("names for ids in no loaded triple (ignored)", f"{src.names_unused:,}", "")
    if src.bad.normalised:
        table.add_row("values normalised (BOM, whitespace, NFC)", f"{src.bad.normalised:,}", "")
    if stats.duplicates_removed:
        table.add_row("duplicate triples removed", f"{stats.duplicates_removed:,}", "")
    for phase, secs in stats.seconds.items():
        table.add_row(f"seconds: {phase}", f"{secs:.1f}", "")
    write_secs = stats.seconds.get("import" if bulk else "triples", 0.0)
    if write_secs:
        table.add_row(
            "triples/s" + (" (neo4j-admin import)" if bulk else ""), f"{stats.triples_in / write_secs:,.0f}", ""
        )
    whole = sum(stats.seconds.values())
    if whole:
        table.add_row("triples/s, whole load (read to embeddings)", f"{stats.triples_in / whole:,.0f}", "")
    console.print(table)


@load_app.command("questions")
def questions(
    ctx: typer.Context,
    file: Path = typer.Argument(
        ..., help="JSONL (id, question, q_entity, a_entity, answer[, hop]), RoG .parquet, or MetaQA k-hop/qa.txt."
    ),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="Skip malformed records (counted) instead of stopping."),
) -> None:
    """Load a question set as (:Question)-[:ABOUT]->(:Entity) (idempotent)."""
    from kgdb.loaders.badlines import BadLines
    from kgdb.loaders.questions import read_question_file, write_questions

    bad = BadLines(skip=skip_bad)
    rows = read_question_file(file, bad)
    with open_graph(ctx) as graph, phase_progress() as (_, report):
        stats = write_questions(graph, rows, progress=report)
    say(
        "Loaded {} questions from {}: {} of {} topic entities found in the graph ({} missing){}",
        f"{stats.questions:,}",
        file,
        f"{stats.linked:,}",
        f"{stats.topics:,}",
        f"{stats.missing_topics:,}",
        f"; skipped {bad.count:,} bad records" if bad.count else "",
    )


@app.command("repair")
def repair(
    ctx: typer.Context,
    break_lease: bool = typer.Option(False, "--break-lease", help="Remove a load lease a killed load left behind."),
) -> None:
    """Delete duplicate (head, relation, tail) relationships, keeping one of each (holds the load lease)."""
    from kgdb.cypher.schema import counts
    from kgdb.loaders.lease import load_lease, remove_duplicate_triples

    with open_graph(ctx) as graph:
        with load_lease(graph, break_lease=break_lease, log=lambda msg: say("{}", msg)):
            removed = remove_duplicate_triples(graph)
        triples = counts(graph).get("triples", 0)
    say("removed {} duplicate triple(s); the database now holds {} triples", f"{removed:,}", f"{triples:,}")
