"""Entity and relation embedding tables (rows by dense idx), read per use and cached on disk per graph
fingerprint.

Retrievers index these tables with `Subgraph.entity_idx` and `Subgraph.relation`. The relation
table is small (a few thousand rows) and read whole. The entity table is not: 4M entities x 384
floats are 6 GB, so it is never read whole. `EmbeddingTables.read(idx)` fetches only the rows a
use touches (`tables_entities_by_idx.cypher`) into a memory-mapped table under
`cache_dir/tables/<fingerprint>/` (`entity.npy` [N, d] float32, a sparse file, and `state.npy`
[N] uint8), which later uses and other processes read instead of Neo4j. Python memory grows with
the rows touched, never with the graph.

A row is cached only once it is final: the entity's vector (HAVE) or a CVT node, which is never
embedded (NONE, a zero row). An entity that has a name but no vector yet (a lazy load) stays
UNKNOWN, so it is asked for again on its next use and never served as a stale zero row once the
vector exists. `read` returns those rows with their text; the seam (`kgdb.pipeline.vectors`)
encodes them and stores them with `write_missing_vectors`. Rows are written before their state
flag, so a concurrent reader of the same file never sees HAVE before the vector.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kgdb.cypher import Graph
from kgdb.data.cache import UNREADABLE, remove_quietly, without_cache
from kgdb.errors import KgdbError
from kgdb.private_files import make_private, private_dir

PAGE = 5_000  # idx per tables_entities_by_idx query
UNKNOWN, HAVE, NONE = 0, 1, 2  # state.npy values
SPACE_MARGIN = 64 << 20  # free bytes kept beyond a table's unwritten rows before it is written in place


@dataclass
class EntityRowsMissing:
    """Entities a use touched that have a name but no vector yet: what a lazy load left to fill."""

    idx: list[int] = field(default_factory=list)
    text: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.idx)


@dataclass
class EmbeddingTables:
    """The relation table (whole) and the entity table of one graph (rows on demand)."""

    relation: np.ndarray  # float32 [R, d], row i = Relation.idx i
    relation_names: list[str]  # relationship type per row of `relation`
    fingerprint: str
    info: dict  # what the fingerprint hashes (tables_fingerprint.cypher): model, dim, sizes
    num_entities: int  # N = largest Entity.idx + 1
    folder: Path | None  # cache_dir/tables/<fingerprint>; None for a graph without entities
    _entity: np.ndarray  # float32 [N, d] memory map; rows valid where `_state` is HAVE or NONE
    _state: np.ndarray  # uint8 [N] memory map
    _graph: Graph | None = None

    @property
    def dim(self) -> int:
        return int(self.relation.shape[1])

    @property
    def model(self) -> str | None:
        """The embedding model the graph was loaded with."""
        return self.info.get("model")

    def read(self, idx) -> EntityRowsMissing:
        """Make the rows of `idx` final where the graph allows: fetch those not cached yet from Neo4j
        (one query per PAGE ids). Returns the entities among them still waiting for a vector."""
        idx = np.unique(np.asarray(idx, dtype=np.int64))
        if idx.size and (idx[0] < 0 or idx[-1] >= self.num_entities):
            raise KgdbError(
                f"entity idx {int(idx[-1] if idx[-1] >= self.num_entities else idx[0])} is outside the graph's "
                f"table of {self.num_entities} rows: the graph changed since its fingerprint was read"
            )
        ask = idx[self._state[idx] == UNKNOWN] if idx.size else idx
        missing = EntityRowsMissing()
        for start in range(0, ask.size, PAGE):
            page = (ask[start : start + PAGE]).tolist()
            row = self._graph.columns("tables_entities_by_idx", idx=page) if self._graph is not None else None
            if not row:
                continue
            if row["idx"]:
                have = np.asarray(row["idx"], dtype=np.int64)
                self._entity[have] = np.asarray(row["embedding"], dtype=np.float32)
                self._state[have] = HAVE  # after the vectors: a reader never sees HAVE before its row
            for i, cvt, text in zip(row["missing_idx"], row["missing_cvt"], row["missing_text"]):
                if cvt:
                    self._entity[i] = 0.0
                    self._state[i] = NONE
                else:
                    missing.idx.append(int(i))
                    missing.text.append(text)
        return missing

    def put(self, idx, vectors: np.ndarray) -> None:
        """Cache vectors that are now stored in the graph for `idx` (rows, then their flags)."""
        idx = np.asarray(idx, dtype=np.int64)
        self._entity[idx] = np.asarray(vectors, dtype=np.float32)
        self._state[idx] = HAVE

    def entity_rows(self, idx) -> np.ndarray:
        """[len(idx), d] float32 copy of the cached rows of `idx` (in order, repeats kept); rows not
        final yet (see the module docstring) are zeros. Call `read` first."""
        idx = np.asarray(idx, dtype=np.int64)
        rows = np.array(self._entity[idx], dtype=np.float32) if idx.size else np.zeros((0, self.dim), np.float32)
        if idx.size:
            rows[self._state[idx] == UNKNOWN] = 0.0
        return rows

    def cached_rows(self) -> int:
        """How many entity rows are final in the cache (for reports and tests)."""
        return int(np.count_nonzero(self._state))


def graph_fingerprint(graph: Graph) -> tuple[str, dict]:
    """Short hash of the graph's sizes, largest idx, embedding model and schema creation time (not of
    how many entity vectors are written yet: see tables_fingerprint.cypher); read once per
    `fingerprint_read_once` block."""
    pinned = graph.fingerprint_pin
    if pinned:
        return pinned[0]
    info = graph.single("tables_fingerprint") or {}
    text = json.dumps(info, sort_keys=True, default=str)
    found = hashlib.sha256(text.encode()).hexdigest()[:16], info
    if pinned is not None:
        pinned.append(found)
    return found


@contextmanager
def fingerprint_read_once(graph: Graph) -> Iterator[None]:
    """Within the block the graph's fingerprint is read from the database once. Building an answering
    pipeline asks for it from every part it loads (the models' checkpoints, the relation table, the
    entity vectors), and each read counts the graph's entities: seven scans for one cold plain `kgdb ask`.
    A load in the block reads it again (`fingerprint_changes`); a block inside another reads what the
    outer one read."""
    if graph.fingerprint_pin is not None:
        yield
        return
    graph.fingerprint_pin = []
    try:
        yield
    finally:
        graph.fingerprint_pin = None


def fingerprint_changes(graph: Graph) -> None:
    """Forget the fingerprint a `fingerprint_read_once` block read: loading triples changes it (the
    load lease calls this when taken and when given back)."""
    if graph.fingerprint_pin:
        graph.fingerprint_pin.clear()


def open_tables(graph: Graph, cache_dir: Path | str) -> EmbeddingTables:
    """The graph's embedding tables: the relation table (from `cache_dir` when cached) and the
    memory-mapped entity table of its fingerprint (created empty the first time)."""
    fingerprint, info = graph_fingerprint(graph)
    if not info.get("dim"):
        raise KgdbError("the graph has no embedding model recorded: load it with `kgdb load` first")
    dim = int(info["dim"])
    folder = Path(cache_dir) / "tables" / fingerprint
    relation, names = _relation_table(graph, folder, dim, info)
    n = (info.get("max_entity_idx") or -1) + 1
    if n == 0:
        return EmbeddingTables(
            relation, names, fingerprint, info, 0, None, np.zeros((0, dim), np.float32), np.zeros(0, np.uint8), graph
        )
    entity = _memmap(folder / "entity.npy", (n, dim), np.float32)
    state = _memmap(folder / "state.npy", (n,), np.uint8)
    return EmbeddingTables(relation, names, fingerprint, info, n, folder, entity, state, graph)


def _relation_table(graph: Graph, folder: Path, dim: int, info: dict) -> tuple[np.ndarray, list[str]]:
    path, names_path = folder / "relation.npy", folder / "relation_names.json"
    if path.is_file() and names_path.is_file():
        try:
            relation, names = np.load(path, allow_pickle=False), json.loads(names_path.read_text(encoding="utf-8"))
            if relation.ndim == 2 and relation.shape == (len(names), dim):
                return relation, names
        except UNREADABLE:
            pass  # damaged: read it from the graph again, and rewrite it below
    rel_rows = graph.run("tables_relations")
    if any(r["idx"] is None for r in rel_rows):
        raise KgdbError("some relations have no idx: finish the load (run `kgdb load` again)")
    relation = np.zeros((len(rel_rows), dim), dtype=np.float32)
    names = [""] * len(rel_rows)
    for r in rel_rows:  # a few thousand rows at most
        names[r["idx"]] = r["name"]
        if r["embedding"] is not None:
            relation[r["idx"]] = r["embedding"]
    # Cached only when complete (relation vectors are written by every load except --no-embed).
    if rel_rows and all(r["embedding"] is not None for r in rel_rows):
        try:
            private_dir(folder)
            _atomic(names_path, lambda tmp: tmp.write_text(json.dumps(names), encoding="utf-8"))
            _atomic(path, lambda tmp: np.save(tmp, relation))
        except OSError as exc:
            without_cache(folder, exc)
    return relation, names


def _memmap(path: Path, shape: tuple[int, ...], dtype) -> np.ndarray:
    """Open a cached table read-write, or create it zero-filled (a sparse file: disk blocks only for
    rows written). Creation goes through a private file and a rename, so a concurrent process sees a
    whole header or no file.

    A cache folder that cannot hold the table never ends a command: a file that is not whole (a
    truncated copy, another table) is replaced before it is mapped, since touching a row past its end
    kills the process with SIGBUS; a read-only folder, one with less free space than the rows still to
    be written (the same SIGBUS, when the kernel finds no block for a row), or one where the file cannot
    be made gives a table in memory, filled from the graph as it is used. Said once (`without_cache`).
    """
    dtype = np.dtype(dtype)
    try:
        if path.is_file() and not _whole(path, shape, dtype):
            path.unlink()
        if not path.is_file():
            _create(path, shape, dtype)
        st = path.stat()
        to_write = max(0, st.st_size - st.st_blocks * 512)  # blocks a sparse file may still need
        free = shutil.disk_usage(path.parent).free
        if not os.access(path, os.W_OK) or free < to_write + SPACE_MARGIN:
            # Not even copy-on-write: faulting in a hole of a file on a full tmpfs needs a block too.
            why = (
                "read-only" if not os.access(path, os.W_OK) else f"{free:,} bytes free, the table may need {to_write:,}"
            )
            without_cache(path.parent, f"{why}; rows read now are kept in memory only")
            return np.zeros(shape, dtype)
        table = np.lib.format.open_memmap(path, mode="r+")
    except (OSError, ValueError) as exc:
        without_cache(path.parent, exc)
        return np.zeros(shape, dtype)  # pages are given on first touch: memory grows with the rows used
    if table.shape != shape or table.dtype != dtype:  # replaced by another process meanwhile
        raise KgdbError(
            f"{path} holds a table of shape {table.shape}, expected {shape}: delete the folder {path.parent}"
        )
    return table


def _whole(path: Path, shape: tuple[int, ...], dtype: np.dtype) -> bool:
    """Whether `path` is a complete .npy of this shape and dtype (header read, size checked), so
    that mapping it can never fault."""
    fmt = np.lib.format
    try:
        with path.open("rb") as fh:
            version = fmt.read_magic(fh)
            read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            got_shape, fortran, got_dtype = read(fh)
            offset = fh.tell()
    except (OSError, ValueError, EOFError):
        return False
    size = offset + int(np.prod(shape)) * dtype.itemsize
    return tuple(got_shape) == tuple(shape) and got_dtype == dtype and not fortran and path.stat().st_size == size


def _create(path: Path, shape: tuple[int, ...], dtype: np.dtype) -> None:
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        np.lib.format.open_memmap(tmp, mode="w+", dtype=dtype, shape=shape).flush()
        make_private(tmp)
        if not path.is_file():
            tmp.replace(path)
    finally:
        remove_quietly(tmp)


def _atomic(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp{path.suffix}")
    try:
        write(tmp)
        make_private(tmp)
        tmp.replace(path)
    finally:
        remove_quietly(tmp)


def write_missing_vectors(graph: Graph, idx: list[int], vectors: np.ndarray, batch_size: int = 2_000) -> list[int]:
    """Store entity vectors where the graph still has none (entity_set_missing_embeddings.cypher);
    returns the idx actually written (others were filled meanwhile by another writer)."""
    rows = [{"idx": int(i), "embedding": np.asarray(v, dtype=np.float32).tolist()} for i, v in zip(idx, vectors)]
    return write_missing_rows(graph, rows, batch_size)


def write_missing_rows(graph: Graph, rows: list[dict], batch_size: int = 2_000) -> list[int]:
    """`write_missing_vectors` for rows already shaped as {idx, embedding: list of floats}."""
    written: list[int] = []
    for batch in graph.iter_batches(rows, batch_size):
        row = graph.single("entity_set_missing_embeddings", rows=batch)
        written.extend(row["written"] if row else [])
    return written
