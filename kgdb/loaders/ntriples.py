"""Freebase RDF N-Triples dumps (`.nt`, `.nt.gz`), streamed line by line.

The `http://rdf.freebase.com/ns/` prefix is stripped, so `<…/ns/m.0abc>` becomes `m.0abc` and
`<…/ns/people.person.place_of_birth>` the relationship type. English `type.object.name` values
become display names, not triples. Literal objects (dates, numbers, strings) become `:Literal`
entities whose id is the value. Filters cut a subset from the full dump: `relation_prefixes`
keeps triples whose relation starts with one of them, `mids` keeps triples touching one of them.
Two passes: triples first, then the names (given to the entities the kept triples use).
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Any, Callable, Iterator

from kgdb.data.lines import bounded_lines
from kgdb.errors import InputError
from kgdb.ids import normalise_mid
from kgdb.loaders.badlines import BadLines, decode_line, normalise_text
from kgdb.loaders.source import Record, SourceStream, TripleSource, collect

NS = "http://rdf.freebase.com/ns/"
NAME_PREDICATE = "type.object.name"
NT_SUFFIXES = (".nt", ".nt.gz", ".ttl", ".ttl.gz")
_TERM = r'<[^>]*>|_:\S+|"(?:[^"\\]|\\.)*"(?:@[A-Za-z0-9-]+|\^\^<[^>]*>)?'
_LINE = re.compile(rf"^\s*({_TERM})\s+(<[^>]*>)\s+({_TERM})\s*\.\s*$")
_LITERAL = re.compile(r'^"((?:[^"\\]|\\.)*)"(?:@([A-Za-z0-9-]+)|\^\^<([^>]*)>)?$')
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)")
_SIMPLE = {"t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f", '"': '"', "'": "'", "\\": "\\"}

ProgressFn = Callable[[int, int], None]


def is_ntriples(path: Path) -> bool:
    return path.name.lower().endswith(NT_SUFFIXES)


def _unescape(text: str) -> str:
    def one(m: re.Match) -> str:
        s = m.group(1)
        if s[0] in "uU" and len(s) > 1:
            code = int(s[1:], 16)
            # beyond Unicode: keep the escape as written rather than crash in chr()
            return chr(code) if code <= 0x10FFFF else m.group(0)
        return _SIMPLE.get(s, s)

    return _ESCAPE.sub(one, text) if "\\" in text else text


def _iri(term: str) -> str:
    """IRI without brackets and without the Freebase namespace."""
    iri = term[1:-1]
    return normalise_mid(iri[len(NS) :]) if iri.startswith(NS) else iri


def _statements(path: Path, bad: BadLines, progress: ProgressFn | None) -> Iterator[tuple[int, str, str, str]]:
    """(line, subject, predicate, object term) of each well-formed statement."""
    total = path.stat().st_size
    with (
        path.open("rb") as raw_file,
        gzip.open(raw_file, "rb") if path.name.lower().endswith(".gz") else raw_file as fh,
    ):
        try:
            for line_no, raw in bounded_lines(fh, path, too_long=bad):
                if progress and line_no % 100_000 == 0:
                    progress(raw_file.tell(), total)
                text = decode_line(raw, path, line_no, bad)
                if text is None or not text.strip() or text.lstrip().startswith(("#", "@prefix")):
                    continue
                m = _LINE.match(text)
                if m is None:
                    bad("not an N-Triples statement `<s> <p> <o> .`", path, line_no)
                    continue
                yield (
                    line_no,
                    _iri(m.group(1)) if m.group(1).startswith("<") else m.group(1),
                    _iri(m.group(2)),
                    m.group(3),
                )
        except (OSError, EOFError) as exc:  # truncated or corrupt gzip
            raise InputError(f"cannot read compressed data ({exc})", path=path) from exc
    if progress:
        progress(total, total)


def stream_ntriples(
    path: Path,
    relation_prefixes: list[str] | None = None,
    mids: set[str] | None = None,
    bad: BadLines | None = None,
    progress: ProgressFn | None = None,
    language: str = "en",
) -> SourceStream:
    """Pass one yields the triples; pass two (`names()`) the English names of all subjects."""
    if not path.is_file():
        raise InputError("file not found", path=path)
    prefixes = tuple(relation_prefixes or ())
    stream = SourceStream(description=str(path), bad=bad or BadLines(), inline_names=True)

    def records() -> Iterator[Record]:
        bad = stream.bad
        for line_no, s, p, o in _statements(path, bad, progress):
            stream.lines = line_no
            if p == NAME_PREDICATE or p.startswith(("http:", "https:")) or (prefixes and not p.startswith(prefixes)):
                stream.filtered += p != NAME_PREDICATE
                continue
            if o.startswith('"'):
                lit = _LITERAL.match(o)
                if lit is None or (lit.group(2) and lit.group(2).split("-")[0].lower() != language):
                    stream.filtered += 1
                    continue
                tail = _unescape(lit.group(1))
                if not tail.strip():
                    stream.filtered += 1
                    continue
                is_literal = True
            else:
                tail = _iri(o) if o.startswith("<") else o
                is_literal = False
            s, p, tail = bad.clean(s), bad.clean(p), bad.clean(tail)
            if mids is not None and s not in mids and tail not in mids:
                stream.filtered += 1
                continue
            if not bad.triple_ok(s, p, tail, path, line_no):
                continue
            yield s, p, tail, is_literal

    def names() -> Iterator[tuple[str, str]]:
        # Malformed lines were reported by pass one; a name's own value is checked here, where it is read.
        for line_no, s, p, o in _statements(path, BadLines(skip=True), None):
            if p != NAME_PREDICATE:
                continue
            lit = _LITERAL.match(o)
            if lit and lit.group(2) and lit.group(2).split("-")[0].lower() == language:
                name = stream.bad.clean(_unescape(lit.group(1)))
                if name and stream.bad.text_ok(name, "name", path, line_no):
                    yield normalise_text(s), name

    stream.records, stream.names = records, names
    return stream


def read_ntriples(path: Path, **options: Any) -> TripleSource:
    """`stream_ntriples` read into memory; `options` are its own."""
    return collect(stream_ntriples(path, **options))


def read_mids(path: Path) -> set[str]:
    """One mid per line (`m.0abc` or `/m/0abc`); blank lines and `#` comments ignored."""
    if not path.is_file():
        raise InputError("mid list not found", path=path, line=None)
    out = set()
    bad = BadLines()
    with path.open("rb") as fh:
        for line_no, raw in bounded_lines(fh, path):
            line = (decode_line(raw, path, line_no, bad) or "").strip()
            if line and not line.startswith("#"):
                out.add(normalise_mid(normalise_text(line)))
    return out
