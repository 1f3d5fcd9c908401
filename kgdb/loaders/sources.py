"""Picks the reader for a SOURCE (by suffix, folder or --dataset) and applies the subset filters."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from kgdb.errors import InputError
from kgdb.loaders.badlines import BadLines
from kgdb.loaders.ntriples import is_ntriples, read_mids, read_ntriples
from kgdb.loaders.rog import ROG_SUFFIXES, fetch_rog, read_rog, rog_files
from kgdb.loaders.source import TripleSource
from kgdb.loaders.triple_files import TRIPLE_SUFFIXES, read_triple_file

DEFAULT_SUBSET = Path(__file__).parent / "default_subset"
DEFAULT_TRIPLES = DEFAULT_SUBSET / "triples.tsv"
DEFAULT_QUESTIONS = DEFAULT_SUBSET / "questions.jsonl"


def open_source(
    source: Path | None,
    *,
    names: Path | None = None,
    dataset: str | None = None,
    relation_prefixes: list[str] | None = None,
    mids_file: Path | None = None,
    skip_bad: bool = False,
    cache_dir: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> TripleSource:
    """Read SOURCE (None: the default subset shipped with kgdb) into normalised triples."""
    bad = BadLines(skip=skip_bad)
    mids = read_mids(mids_file) if mids_file is not None else None
    if names is not None and (source is None or source.suffix.lower() not in TRIPLE_SUFFIXES):
        raise InputError("--names applies to TSV/CSV triple files only", path="--names")
    if dataset is not None:
        if source is not None:
            raise InputError("give either SOURCE or --dataset, not both", path="--dataset")
        got = read_rog(fetch_rog(dataset, cache_dir or Path(".")), bad)
    elif source is None:
        got = read_triple_file(DEFAULT_TRIPLES, bad=bad)
        got.description = "default subset (shipped with kgdb)"
    elif source.is_dir():
        got = read_rog(rog_files(source), bad)
    elif not source.exists():
        raise InputError("file not found", path=source)
    elif is_ntriples(source):
        return _nonempty(read_ntriples(source, relation_prefixes, mids, bad, progress), source)
    elif source.suffix.lower() in ROG_SUFFIXES:
        got = read_rog([source], bad)
    elif source.suffix.lower() in TRIPLE_SUFFIXES:
        got = read_triple_file(source, names, bad, progress)
    else:
        raise InputError(
            "unknown format: expected .tsv/.csv/.txt triples, RoG .parquet/.jsonl (or a folder of them), "
            "or N-Triples .nt/.nt.gz",
            path=source,
        )
    return filter_source(_nonempty(got, source), relation_prefixes, mids)


def _nonempty(got: TripleSource, source: Path | None) -> TripleSource:
    """A source without a single triple is a mistake (wrong file, empty export), not a no-op load."""
    if not got.triples and not got.filtered and not got.bad.count:  # skipped bad lines are reported instead
        raise InputError("nothing to load: no triples in this source (empty file, or only blank lines and a header)",
                         path=source or got.description)
    return got


def filter_source(source: TripleSource, relation_prefixes: list[str] | None, mids: set[str] | None) -> TripleSource:
    """Keep triples whose relation starts with a prefix and that touch one of `mids` (when given)."""
    prefixes = tuple(relation_prefixes or ())
    if not prefixes and mids is None:
        return source
    kept = [
        (h, r, t) for h, r, t in source.triples
        if (not prefixes or r.startswith(prefixes)) and (mids is None or h in mids or t in mids)
    ]
    source.filtered += len(source.triples) - len(kept)
    source.triples = kept
    return source
