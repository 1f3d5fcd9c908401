"""Picks the reader for a SOURCE (by suffix, folder or --dataset) and applies the subset filters."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

from kgdb.errors import InputError
from kgdb.loaders.badlines import BadLines
from kgdb.loaders.ntriples import is_ntriples, read_mids, stream_ntriples
from kgdb.loaders.rog import ROG_SUFFIXES, fetch_rog, rog_files, stream_rog
from kgdb.loaders.source import Record, SourceStream, TripleSource, collect
from kgdb.loaders.triple_files import TRIPLE_SUFFIXES, stream_triple_file

DEFAULT_SUBSET = Path(__file__).parent / "default_subset"
DEFAULT_TRIPLES = DEFAULT_SUBSET / "triples.tsv"
DEFAULT_QUESTIONS = DEFAULT_SUBSET / "questions.jsonl"


def open_stream(
    source: Path | None,
    *,
    names: Path | None = None,
    dataset: str | None = None,
    relation_prefixes: list[str] | None = None,
    mids_file: Path | None = None,
    skip_bad: bool = False,
    cache_dir: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SourceStream:
    """The reader of SOURCE (None: the default subset shipped with kgdb), filters applied, not yet read."""
    bad = BadLines(skip=skip_bad)
    mids = read_mids(mids_file) if mids_file is not None else None
    if names is not None and (source is None or source.suffix.lower() not in TRIPLE_SUFFIXES):
        raise InputError("--names applies to TSV/CSV triple files only", path="--names")
    if dataset is not None:
        if source is not None:
            raise InputError("give either SOURCE or --dataset, not both", path="--dataset")
        got = stream_rog(fetch_rog(dataset, cache_dir or Path(".")), bad)
    elif source is None:
        got = stream_triple_file(DEFAULT_TRIPLES, bad=bad)
        got.description = "default subset (shipped with kgdb)"
    elif source.is_dir():
        got = stream_rog(rog_files(source), bad)
    elif not source.exists():
        raise InputError("file not found", path=source)
    elif is_ntriples(source):
        return stream_ntriples(source, relation_prefixes, mids, bad, progress)  # filters inside: names need them
    elif source.suffix.lower() in ROG_SUFFIXES:
        got = stream_rog([source], bad)
    elif source.suffix.lower() in TRIPLE_SUFFIXES:
        got = stream_triple_file(source, names, bad, progress)
    else:
        raise InputError(
            "unknown format: expected .tsv/.csv/.txt triples, RoG .parquet/.jsonl (or a folder of them), "
            "or N-Triples .nt/.nt.gz",
            path=source,
        )
    return filter_stream(got, relation_prefixes, mids)


def open_source(source: Path | None, **options) -> TripleSource:
    """SOURCE read into memory (the Bolt path); `options` are those of `open_stream`."""
    return check_nonempty(collect(open_stream(source, **options)), source)


def check_nonempty(got: TripleSource | SourceStream, source: Path | str | None, triples: int | None = None):
    """A source without a single triple is a mistake (wrong file, empty export), not a no-op load."""
    count = len(got.triples) if triples is None else triples  # type: ignore[union-attr]
    if not count and not got.filtered and not got.bad.count:  # skipped bad lines are reported instead
        raise InputError(
            "nothing to load: no triples in this source (empty file, or only blank lines and a header)",
            path=source or got.description,
        )
    return got


def filter_stream(stream: SourceStream, relation_prefixes: list[str] | None, mids: set[str] | None) -> SourceStream:
    """Keep triples whose relation starts with a prefix and that touch one of `mids` (when given)."""
    prefixes = tuple(relation_prefixes or ())
    if not prefixes and mids is None:
        return stream
    read = stream.records

    def kept() -> Iterator[Record]:
        for record in read():
            h, r, t, _ = record
            if (not prefixes or r.startswith(prefixes)) and (mids is None or h in mids or t in mids):
                yield record
            else:
                stream.filtered += 1

    stream.records = kept
    return stream
