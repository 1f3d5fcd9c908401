"""Streams a source into neo4j-admin import files with memory bounded by chunk sizes, never by the
graph: 50M triples are written by a Python process of a few hundred MB.

Why external sorting with GNU `sort` (LC_ALL=C, -u, spilling to the import folder): the two
things the bulk path needs from the whole graph are duplicate-free triples and the entities in id
order (their row is `idx`). Both are a sort; `sort` does it in C with a fixed buffer (`-S`),
merges runs from disk and is on every Linux machine. A Python set or a pyarrow table of
(h, r, t) would need ~100 bytes per triple (5 GB at 50M); hash-partitioned dedup would still
need a sort for the id order.

Files, in the import folder (removed by the next import), one record per line:
  triples.keys   h SEP r SEP t       every triple read    -> triples.sorted (sort -u): the relationship data
  tails.keys     t                   every tail           -> tails.sorted (sort -u)
  literals.keys  t                   tails that are RDF literals -> literals.sorted
  names.keys     id SEP name         names from the source -> names.sorted (stable sort on id)
  heads.sorted   h                   distinct heads, cut from triples.sorted (already in order)
Entities are the merge of heads, tails, literals and names in id order (one pass, no lookups).

Encoding: SEP is U+0001; the characters U+0000..U+000D inside a value are written as U+0002
followed by the character + 0x10. That keeps byte order equal to the order of the original
strings (SEP sorts below every value character, so a prefix sorts first), keeps one record per
line, and lets neo4j-admin read the files as they are: delimiter U+0001, quote character U+0002,
and only a value that needed escaping is written quoted (the rare rewrite pass). Names, ids and
relation types with commas, quotes, backticks or backslashes need no quoting at all.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, cast

import numpy as np

from kgdb.config import EmbeddingMode, resolve_embedding_mode
from kgdb.errors import KgdbError
from kgdb.loaders.source import SourceStream
from kgdb.loaders.writer import (
    ENCODE_CHUNK,
    LITERAL,
    LoadStats,
    ProgressFn,
    TextEncoder,
    _noop,
    check_relations,
    entity_labels,
    iter_encoded,
)

SEP = "\x01"
ESC = "\x02"
_LINE_BREAK = re.compile("[\n\r]")  # what ends a line for neo4j-admin's CSV reader
_NEEDS_ESCAPE = re.compile("[\x00-\x0d]")  # SEP, ESC, line ends (\n, \r, \v, \f) and everything below them
_ESCAPES = {i: ESC + chr(0x10 + i) for i in range(0x0E)}
_ESCAPED = re.compile("\x02(.)", re.S)
# Lines per write call while reading; entities per write without embeddings: bound the memory.
WRITE_CHUNK = 100_000
ENTITY_CHUNK = 50_000
SORT_MEMORY_MB = 1024  # split between the two sorts that run at once; sort spills the rest to disk


def escape(value: str) -> str:
    return value.translate(_ESCAPES) if _NEEDS_ESCAPE.search(value) else value


def unescape(value: str) -> str:
    return _ESCAPED.sub(lambda m: chr(ord(m.group(1)) - 0x10), value) if ESC in value else value


def csv_field(escaped: str) -> str:
    """A key-file value as a neo4j-admin field: as it is, or quoted with U+0002 when it was escaped."""
    if ESC not in escaped:
        return escaped
    return ESC + unescape(escaped).replace(ESC, ESC + ESC) + ESC


@dataclass(frozen=True)
class BulkFiles:
    folder: Path
    entities: Path
    relations: Path
    triples: list[Path]  # header file, then the data file
    multiline: bool = True  # a value holds a line break: neo4j-admin must parse multi-line fields (slower)

    def import_args(self) -> list[str]:
        return [
            f"--delimiter=U+{ord(SEP):04X}",
            f"--quote=U+{ord(ESC):04X}",
            "--array-delimiter=;",
            f"--multiline-fields={str(self.multiline).lower()}",
            f"--nodes={self.entities}",
            f"--nodes={self.relations}",
            f"--relationships={','.join(map(str, self.triples))}",
        ]


def _sort(args: list[str], src: Path, dst: Path, memory: str, threads: int) -> subprocess.Popen:
    sort = shutil.which("sort")
    if sort is None:
        raise KgdbError("--bulk needs the `sort` program (GNU coreutils) on PATH to de-duplicate and order the triples")
    cmd = [sort, *args, "-S", memory, f"--parallel={threads}", "-T", str(src.parent), "-o", str(dst), str(src)]
    return subprocess.Popen(cmd, env={**os.environ, "LC_ALL": "C"}, stderr=subprocess.PIPE)


def _wait(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode:
            raise KgdbError(
                f"sorting the import files failed ({err.decode(errors='replace').strip()}); "
                "is the disk holding the Neo4j import folder full?"
            )


def _lines(path: Path) -> Iterator[str]:
    """The lines of a key file without their line end (values never contain a raw newline)."""
    with path.open(encoding="utf-8", newline="\n") as fh:
        for line in fh:
            yield line[:-1]


def _count_lines(path: Path) -> int:
    n = 0
    with path.open("rb") as fh:
        while block := fh.read(1 << 24):
            n += block.count(b"\n")
    return n


def read_into_keys(stream: SourceStream, folder: Path) -> tuple[set[str], int, bool, bool]:
    """Phase 1: every triple, tail, literal and name of the source into the key files.

    Returns the relation types (a vocabulary: small at any size), the triples read, whether any
    value needed escaping and whether any holds a line break (neo4j-admin then needs multi-line
    fields, which turn its parallel parsing off)."""
    relations: set[str] = set()
    read = 0
    escaped = multiline = False
    enc: dict[str, Any] = {"encoding": "utf-8", "newline": "\n", "buffering": 1 << 20}
    with (
        (folder / "triples.keys").open("w", **enc) as ft,
        (folder / "tails.keys").open("w", **enc) as fl,
        (folder / "literals.keys").open("w", **enc) as flit,
    ):
        triples: list[str] = []
        tails: list[str] = []
        for h, r, t, literal in stream.records():
            relations.add(r)
            if _NEEDS_ESCAPE.search(h) or _NEEDS_ESCAPE.search(r) or _NEEDS_ESCAPE.search(t):
                multiline = multiline or _LINE_BREAK.search(h + r + t) is not None
                h, r, t, escaped = escape(h), escape(r), escape(t), True
            triples.append(f"{h}{SEP}{r}{SEP}{t}\n")
            tails.append(t + "\n")
            if literal:
                flit.write(t + "\n")
            if len(triples) >= WRITE_CHUNK:
                read += len(triples)
                ft.write("".join(triples))
                fl.write("".join(tails))
                triples.clear()
                tails.clear()
        read += len(triples)
        ft.write("".join(triples))
        fl.write("".join(tails))
    with (folder / "names.keys").open("w", **enc) as fn:
        if stream.names is not None:
            chunk: list[str] = []
            for entity, name in stream.names():
                if not multiline and _NEEDS_ESCAPE.search(entity + name):
                    multiline = _LINE_BREAK.search(entity + name) is not None
                chunk.append(f"{escape(entity)}{SEP}{escape(name)}\n")
                if len(chunk) >= WRITE_CHUNK:
                    fn.write("".join(chunk))
                    chunk.clear()
            fn.write("".join(chunk))
    return relations, read, escaped, multiline


def sort_keys(folder: Path, progress: ProgressFn = _noop) -> None:
    """Phase 2: de-duplicate and order the key files (two sorts at a time, one per core)."""
    progress("sorting", 0, 4)
    half = f"{SORT_MEMORY_MB // 2}M"
    _wait(
        [
            _sort(["-u"], folder / "triples.keys", folder / "triples.sorted", half, 1),
            _sort(["-u"], folder / "tails.keys", folder / "tails.sorted", half, 1),
        ]
    )
    progress("sorting", 2, 4)
    # Names: stable on the id alone, so the source's order decides between two names of one id.
    _wait(
        [
            _sort(["-u"], folder / "literals.keys", folder / "literals.sorted", half, 1),
            _sort(["-s", "-t", SEP, "-k1,1"], folder / "names.keys", folder / "names.sorted", half, 1),
        ]
    )
    for name in ("triples", "tails", "literals", "names"):
        (folder / f"{name}.keys").unlink()
    progress("sorting", 4, 4)


def write_triples(folder: Path, escaped: bool) -> tuple[list[Path], int]:
    """Phase 3: the relationship files (header + sorted data) and the distinct heads, in id order."""
    data = folder / "triples.sorted"
    header = folder / "triples.header"
    header.write_text(SEP.join([":START_ID(Entity)", ":TYPE", ":END_ID(Entity)"]) + "\n", encoding="utf-8")
    if escaped:  # rare (values with control characters or newlines): quote those fields
        quoted = folder / "triples.data"
        with quoted.open("w", encoding="utf-8", newline="\n") as out:
            for line in _lines(data):
                out.write(SEP.join(csv_field(v) for v in line.split(SEP)) + "\n" if ESC in line else line + "\n")
        data.rename(folder / "triples.unquoted")
        data = quoted
        src = folder / "triples.unquoted"
    else:
        src = data
    # cut + uniq in C: the heads of a sorted file are sorted, so no third sort is needed.
    with (folder / "heads.sorted").open("wb") as out:
        cut = subprocess.Popen(
            ["cut", "-d", SEP, "-f1", str(src)], stdout=subprocess.PIPE, env={**os.environ, "LC_ALL": "C"}
        )
        uniq = subprocess.run(["uniq"], stdin=cut.stdout, stdout=out, env={**os.environ, "LC_ALL": "C"})
        cut.wait()
    if cut.returncode or uniq.returncode:
        raise KgdbError("extracting the head entities from the sorted triples failed (cut/uniq)")
    return [header, data], _count_lines(src)  # one line per triple (quoted data may span lines)


def count_entities(folder: Path) -> int:
    """Distinct ids of heads and tails: a merge of two sorted files, in C."""
    env = {**os.environ, "LC_ALL": "C"}
    merge = subprocess.Popen(
        ["sort", "-m", "-u", str(folder / "heads.sorted"), str(folder / "tails.sorted")],
        stdout=subprocess.PIPE,
        env=env,
    )
    n = 0
    assert merge.stdout is not None
    while block := merge.stdout.read(1 << 24):
        n += block.count(b"\n")
    if merge.wait():
        raise KgdbError("counting the entities of the import files failed (sort -m)")
    return n


class _Sorted:
    """A cursor over a sorted key file: the current key, advanced by `at`."""

    def __init__(self, path: Path, with_value: bool = False):
        self._it = _lines(path)
        self._with_value = with_value
        self.key: str | None = None
        self.value = ""
        self.passed = 0  # distinct keys stepped over without being asked for
        self._last_passed: str | None = None
        self._next()

    def _next(self) -> None:
        line = next(self._it, None)
        if line is None:
            self.key = None
        elif self._with_value:
            self.key, _, self.value = line.partition(SEP)
        else:
            self.key = line

    def at(self, key: str) -> bool:
        """Whether `key` is in the file (keys are asked in increasing order)."""
        while self.key is not None and self.key < key:
            self._pass()
        return self.key == key

    def _pass(self) -> None:
        if self.key != self._last_passed:
            self.passed += 1
            self._last_passed = self.key
        self._next()

    def pass_rest(self) -> int:
        """Step over every key left; returns `passed`, now counting them too."""
        while self.key is not None:
            self._pass()
        return self.passed

    def values(self, key: str) -> list[str]:
        """Every value stored for `key`, in file order."""
        out = []
        while self.at(key):
            out.append(self.value)
            self._next()
        return out


def entity_ids(folder: Path) -> Iterator[tuple[str, bool]]:
    """(escaped id, is a head) of every entity, in id order: the merge of heads and tails."""
    heads, tails = _lines(folder / "heads.sorted"), _lines(folder / "tails.sorted")
    h, t = next(heads, None), next(tails, None)
    while h is not None or t is not None:
        # The loop's condition: one of h and t is not None.
        if h is not None and (t is None or h < t):
            yield h, True
            h = next(heads, None)
        elif t is not None and (h is None or t < h):
            yield t, False
            t = next(tails, None)
        else:
            yield cast(str, h), True  # equal to t, so neither is None
            h, t = next(heads, None), next(tails, None)


def _vector_text(vec: np.ndarray | None) -> str:
    return "" if vec is None else ";".join(np.char.mod("%.8g", vec))


def entity_rows(folder: Path, stream: SourceStream) -> Iterator[tuple[str, str, list[str]]]:
    """(escaped id, escaped name, labels) of every entity in id order (its idx), named and labelled
    as the Bolt path does it (`kgdb.loaders.writer.entity_rows`), from the sorted key files."""
    literals = _Sorted(folder / "literals.sorted")
    names = _Sorted(folder / "names.sorted", with_value=True)
    for eid, is_head in entity_ids(folder):
        plain = unescape(eid)
        in_literals = literals.at(eid)
        given = names.values(eid)
        # Names files: the last line wins, for every entity. N-Triples: the first English name,
        # for heads and non-literal tails only (the readers' policy, see SourceStream).
        if stream.inline_names:
            name = given[0] if given and (is_head or not in_literals) else None
        else:
            name = given[-1] if given else None
        literal = in_literals or (not is_head and bool(LITERAL.match(plain)))
        yield eid, name if name is not None else eid, entity_labels(plain, name is not None, literal)
    stream.names_unused = names.pass_rest()  # names of ids that no triple uses: counted, as the Bolt path does


def names_to_embed(folder: Path, stream: SourceStream) -> int:
    """Entities that are not CVT nodes (what eager embedding would encode): one pass, no writes."""
    return sum("CVT" not in labels for _, _, labels in entity_rows(folder, stream))


def write_entities(
    folder: Path,
    stream: SourceStream,
    embedder: TextEncoder | None,
    stats: LoadStats,
    total: int,
    progress: ProgressFn = _noop,
) -> Path:
    """Phase 4: entities.csv, one row per entity in id order, with name vectors when `embedder`."""
    path = folder / "entities.csv"
    phase = "entities + embeddings" if embedder else "entities"
    with path.open("w", encoding="utf-8", newline="\n") as out:
        out.write(SEP.join(["id:ID(Entity)", "name", "idx:long", "embedding:float[]", ":LABEL"]) + "\n")
        rows: list[tuple[str, str, list[str]]] = []
        per_flush = ENCODE_CHUNK if embedder is not None else ENTITY_CHUNK  # embedding: progress every encode call

        def flush() -> None:
            vecs: dict[str, np.ndarray] = {}
            if embedder is not None:
                for texts, vectors in iter_encoded(
                    embedder, [unescape(name) for _, name, labels in rows if "CVT" not in labels]
                ):
                    vecs.update(zip(texts, vectors))
            lines = []
            for eid, name, labels in rows:
                vec = vecs.get(unescape(name)) if embedder is not None and "CVT" not in labels else None
                lines.append(
                    SEP.join(
                        [csv_field(eid), csv_field(name), str(stats.entities), _vector_text(vec), ";".join(labels)]
                    )
                    + "\n"
                )
                stats.entities += 1
                stats.cvt += "CVT" in labels
                stats.literals += "Literal" in labels
                stats.entity_embeddings += vec is not None
            out.write("".join(lines))
            rows.clear()
            progress(phase, stats.entities, total)

        for row in entity_rows(folder, stream):
            rows.append(row)
            if len(rows) >= per_flush:
                flush()
        flush()
    return path


def write_relations(folder: Path, relations: list[str], embedder: TextEncoder | None, stats: LoadStats) -> Path:
    from kgdb.embeddings import relation_text

    vecs: dict[str, np.ndarray] = {}
    if embedder is not None:
        for chunk, vectors in iter_encoded(embedder, [relation_text(r) for r in relations]):
            vecs.update(zip(chunk, vectors))
    path = folder / "relations.csv"
    with path.open("w", encoding="utf-8", newline="\n") as out:
        out.write(SEP.join(["name:ID(Relation)", "text", "idx:long", "embedding:float[]", ":LABEL"]) + "\n")
        for idx, r in enumerate(relations):
            text = relation_text(r)
            out.write(
                SEP.join(
                    [csv_field(escape(r)), csv_field(escape(text)), str(idx), _vector_text(vecs.get(text)), "Relation"]
                )
                + "\n"
            )
    stats.relation_types = len(relations)
    stats.relation_embeddings = len(relations) if embedder is not None else 0
    return path


def write_import_files(
    folder: Path,
    stream: SourceStream,
    embedder: TextEncoder | None,
    stats: LoadStats,
    progress: ProgressFn = _noop,
    embeddings: EmbeddingMode | str = EmbeddingMode.eager,
) -> BulkFiles:
    """All import files of `stream` under `folder` (replaced); `stats` gets the counts and seconds.

    Relation texts are embedded when there is an `embedder`; entity names too when `embeddings`
    is eager, or auto with few enough names (`kgdb.config.resolve_embedding_mode`)."""
    entity_embedder = embedder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    t0 = time.perf_counter()
    relations, read, escaped, multiline = read_into_keys(stream, folder)
    stats.seconds["read"] = time.perf_counter() - t0
    from kgdb.loaders.sources import check_nonempty

    check_nonempty(stream, stream.description, triples=read)
    check_relations(relations)

    t0 = time.perf_counter()
    sort_keys(folder, progress)
    triples, unique = write_triples(folder, escaped)
    stats.triples_in = stats.triples_created = unique
    stats.seconds["sort"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    total = count_entities(folder)
    if embedder is not None and EmbeddingMode(embeddings) is not EmbeddingMode.eager:
        todo = names_to_embed(folder, stream)
        if resolve_embedding_mode(embeddings, todo) is EmbeddingMode.lazy:
            entity_embedder = None
            stats.embeddings, stats.entity_embeddings_left = EmbeddingMode.lazy.value, todo  # the load summary says so
    entities = write_entities(folder, stream, entity_embedder, stats, total, progress)
    stats.seconds["entities" + (" + embeddings" if entity_embedder else "")] = time.perf_counter() - t0
    t0 = time.perf_counter()
    relations_csv = write_relations(folder, sorted(relations), embedder, stats)
    stats.seconds["relations" + (" + embeddings" if embedder else "")] = time.perf_counter() - t0
    for name in ("heads", "tails", "literals", "names"):
        (folder / f"{name}.sorted").unlink()
    unquoted = folder / "triples.unquoted"
    unquoted.unlink(missing_ok=True)
    return BulkFiles(folder, entities, relations_csv, triples, multiline)
