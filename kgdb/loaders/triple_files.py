"""Triple files: TSV (`head<TAB>relation<TAB>tail`, no quoting) or CSV (RFC 4180 quoting, one
record per line), optionally with a names file `mid<TAB>name` (the FB15k-237 layout).

Mids in `/m/0abc` form become `m.0abc`; relation paths like `/people/person/nationality`
become `people.person.nationality`. A first line `head, relation, tail` is taken as a header.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Callable, Iterator

from kgdb.data.lines import bounded_lines
from kgdb.errors import InputError
from kgdb.ids import normalise_mid, normalise_relation
from kgdb.loaders.badlines import BadLines, decode_line
from kgdb.loaders.source import Record, SourceStream, TripleSource, collect

TRIPLE_SUFFIXES = (".tsv", ".csv", ".txt")
_HEADERS = ({"head", "relation", "tail"}, {"subject", "predicate", "object"}, {"h", "r", "t"})

ProgressFn = Callable[[int, int], None]  # (bytes read, total bytes)


def _split_for(path: Path) -> Callable[[str], list[str]]:
    if path.suffix.lower() == ".csv":
        # strict: an unterminated quote is an error, not a field that runs to the end of the line
        return lambda line: next(csv.reader([line], strict=True), [])
    return lambda line: line.split("\t")


def _records(path: Path, bad: BadLines, progress: ProgressFn | None = None) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every non-blank line; undecodable lines go to `bad`."""
    if not path.is_file():
        raise InputError("file not found", path=path)
    split = _split_for(path)
    total = path.stat().st_size
    with path.open("rb") as fh:
        for line_no, raw in bounded_lines(fh, path, too_long=bad):
            if progress and line_no % 50_000 == 0:
                progress(fh.tell(), total)
            text = decode_line(raw, path, line_no, bad)
            if text is None or not text.strip():
                continue
            try:
                fields = split(text)
            except csv.Error as exc:
                bad(f"bad CSV quoting ({exc})", path, line_no)
                continue
            yield line_no, [bad.clean(f) for f in fields]
    if progress:
        progress(total, total)


def _check_fields(fields: list[str], want: int, what: str, path: Path, line_no: int, bad: BadLines) -> bool:
    if len(fields) != want:
        bad(f"expected {want} {what} columns, found {len(fields)}", path, line_no)
        return False
    for i, value in enumerate(fields):
        if not value.strip():
            bad(f"column {i + 1} is empty", path, line_no)
            return False
    return True


def name_records(path: Path, bad: BadLines) -> Iterator[tuple[str, str]]:
    """(normalised mid, name) of every `mid<TAB>name` line (CSV when the file ends in .csv)."""
    for line_no, fields in _records(path, bad):
        if _check_fields(fields, 2, "(id, name)", path, line_no, bad) and bad.text_ok(fields[1], "name", path, line_no):
            yield normalise_mid(fields[0]), fields[1]


def stream_triple_file(
    path: Path, names_path: Path | None = None, bad: BadLines | None = None, progress: ProgressFn | None = None
) -> SourceStream:
    stream = SourceStream(description=str(path), bad=bad or BadLines())

    def records() -> Iterator[Record]:
        first = True
        for line_no, fields in _records(path, stream.bad, progress):
            stream.lines = line_no
            if first and len(fields) == 3 and {f.strip().lower() for f in fields} in _HEADERS:
                first = False
                continue
            first = False
            if _check_fields(fields, 3, "(head, relation, tail)", path, line_no, stream.bad):
                h, r, t = fields
                relation = normalise_relation(r)
                if not relation:
                    stream.bad(f"relation {r!r} is empty after normalisation", path, line_no)
                    continue
                h, t = normalise_mid(h), normalise_mid(t)
                if stream.bad.triple_ok(h, relation, t, path, line_no):
                    yield h, relation, t, False

    stream.records = records
    if names_path is not None:
        if not names_path.is_file():  # before a long read, not after it
            raise InputError("file not found", path=names_path)
        stream.names = lambda: name_records(names_path, stream.bad)
        stream.description += f" + names {names_path}"
    return stream


def read_triple_file(
    path: Path, names_path: Path | None = None, bad: BadLines | None = None, progress: ProgressFn | None = None
) -> TripleSource:
    return collect(stream_triple_file(path, names_path, bad, progress))
