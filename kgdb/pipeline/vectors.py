"""Entity vectors on use: the rows a question (or a training set) touches, from the per-graph table
cache, with the vectors a lazy load left out encoded, written back and cached on the way.

This is where the database side (`kgdb.cypher.tables`: cached rows, `tables_entities_by_idx`,
`entity_set_missing_embeddings`) meets the text encoder (`kgdb.embeddings`, the one encoder rule:
the numpy MiniLM for short calls, sentence-transformers otherwise). Every retrieval, linking,
evaluation and training-cache user reads entity vectors through `EntityVectors`, so a graph loaded
with `--embeddings lazy` scores exactly like an eagerly embedded one (same encoder, same texts), and
each missing vector is written once: the write only sets `embedding` where it is still NULL.

Consumers get compact tables: the distinct rows they touch and their entity indices renumbered
into those rows (`compact`, or `EntityRowCache` for a retriever that answers question after
question), so memory follows the questions, not the graph.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import threading
from typing import TYPE_CHECKING, Sequence

import numpy as np

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.cypher.tables import EmbeddingTables, open_tables, write_missing_vectors
from kgdb.embeddings import get_embedder

if TYPE_CHECKING:
    from kgdb.models.base import TensorTables

log = logging.getLogger(__name__)


class EntityVectors:
    """Entity rows of one graph on demand, filling missing vectors on use.

    `filled` counts the vectors this object wrote into the graph (a rerun over the same
    entities writes none)."""

    def __init__(self, graph: Graph, tables: EmbeddingTables, embedder):
        self.graph, self.tables, self.embedder = graph, tables, embedder
        self.filled = 0
        self._lock = threading.Lock()  # threads sharing a pipeline (linking, scoring) fill one at a time

    @property
    def fingerprint(self) -> str:
        return self.tables.fingerprint

    @property
    def data_fingerprint(self) -> str:
        return data_fingerprint(self.tables.info)

    @property
    def dim(self) -> int:
        return self.tables.dim

    def rows(self, idx) -> np.ndarray:
        """[len(idx), d] vectors of the entities `idx` (CVT rows zero), filling missing ones first."""
        with self._lock:
            return self._rows(idx)

    def _rows(self, idx) -> np.ndarray:
        missing = self.tables.read(idx)
        if len(missing):
            vectors = self.embedder.encode(missing.text)
            written = write_missing_vectors(self.graph, missing.idx, vectors)
            self.filled += len(written)
            if len(written) == len(missing):
                self.tables.put(missing.idx, vectors)
            else:  # another writer filled some meanwhile: cache what the graph now holds
                self.tables.read(missing.idx)
            log.debug("filled %d of %d missing entity vectors", len(written), len(missing))
        return self.tables.entity_rows(idx)

    def vectors(self, idx: Sequence[int]) -> dict[int, np.ndarray]:
        """idx -> vector for the given entities (for linking candidates without a stored vector)."""
        idx = [int(i) for i in idx]
        return dict(zip(idx, self.rows(np.asarray(idx, dtype=np.int64))))

    def compact(self, entity_idx: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """The distinct rows of several uses' entity indices, and each index array renumbered into them."""
        arrays = [np.asarray(a, dtype=np.int64) for a in entity_idx]
        joined = np.concatenate(arrays) if arrays else np.zeros(0, np.int64)
        distinct, inverse = np.unique(joined, return_inverse=True)
        rows = self.rows(distinct)
        bounds = np.cumsum([0] + [a.size for a in arrays])
        return rows, [inverse[a:b].astype(np.int64) for a, b in zip(bounds[:-1], bounds[1:])]

    def tensor_tables(
        self, entity_idx: Sequence[np.ndarray], device: str = "cpu"
    ) -> tuple["TensorTables", list[np.ndarray]]:
        """`compact` as torch tables on `device` (the graph's relation table whole)."""
        from kgdb.models.base import TensorTables

        rows, local = self.compact(entity_idx)
        return TensorTables.from_numpy(rows, self.tables.relation, self.fingerprint, device), local

    def relation_tables(self, device: str = "cpu") -> "TensorTables":
        """Torch tables with the relation table only (models that read no entity vectors)."""
        from kgdb.models.base import TensorTables

        return TensorTables.from_numpy(
            np.zeros((0, self.dim), np.float32), self.tables.relation, self.fingerprint, device
        )


class EntityRowCache:
    """The entity rows a retrieval pipeline has touched so far, as one compact torch table that
    grows in place: rows are appended to a buffer of doubling capacity, so a retriever's `prepare`
    (SubgraphRAG's first-layer projections) only projects the new rows and keeps its per-entity
    cache across questions. At `max_rows` the cache starts over with the current question's rows:
    memory is bounded whatever the graph size (65,536 rows: 100 MB of vectors, 512 MB of
    SubgraphRAG projections; the whole WebQSP graph has 19,633 entities)."""

    def __init__(self, vectors: EntityVectors, device: str = "cpu", max_rows: int = 65_536, initial: int = 4_096):
        import torch

        self.vectors, self.device, self.max_rows = vectors, device, max_rows
        self.row_of: dict[int, int] = {}
        self._buffer = torch.empty(min(initial, max_rows), vectors.dim, device=device)
        self._relation = torch.from_numpy(np.ascontiguousarray(vectors.tables.relation, dtype=np.float32)).to(device)
        self.tables: "TensorTables" = self._view()

    def local(self, entity_idx: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Each index array renumbered into rows of `self.tables` (added, and filled, where new)."""
        import torch

        arrays = [np.asarray(a, dtype=np.int64) for a in entity_idx]
        distinct = np.unique(np.concatenate(arrays)) if arrays else np.zeros(0, np.int64)
        new = [int(i) for i in distinct.tolist() if int(i) not in self.row_of]
        if len(self.row_of) + len(new) > self.max_rows:  # start over: memory stays bounded
            self.row_of, new = {}, [int(i) for i in distinct.tolist()]
            self._buffer = torch.empty(max(len(new), 1), self.vectors.dim, device=self.device)
        start = len(self.row_of)
        if start + len(new) > self._buffer.shape[0]:
            # The new buffer is allocated while the old one is alive, so its address differs and a
            # prepared model re-projects (see SubgraphRAG.prepare).
            bigger = torch.empty(max(2 * self._buffer.shape[0], start + len(new)), self.vectors.dim, device=self.device)
            bigger[:start] = self._buffer[:start]
            self._buffer = bigger
        if new:
            rows = self.vectors.rows(np.asarray(new, dtype=np.int64))
            self._buffer[start : start + len(new)] = torch.from_numpy(rows).to(self.device)
            self.row_of.update((i, start + k) for k, i in enumerate(new))
        self.tables = self._view()
        return [np.fromiter((self.row_of[int(i)] for i in a.tolist()), dtype=np.int64, count=a.size) for a in arrays]

    def _view(self) -> "TensorTables":
        from kgdb.models.base import TensorTables

        return TensorTables(self._buffer[: len(self.row_of)], self._relation, self.vectors.fingerprint)


def data_fingerprint(info: dict) -> str:
    """What a graph's fingerprint hashes (`kgdb.cypher.tables.graph_fingerprint`) except when its schema
    was created: equal for two loads of the same file with the same embedding model. The full
    fingerprint keys caches and finds a graph's own checkpoints; this one tells whether a checkpoint
    was trained on other data (a shipped checkpoint on a fresh load of the file it was trained on was not)."""
    text = json.dumps({k: v for k, v in info.items() if k != "created"}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def trained_on_this_data(config: dict, fingerprint: str, data: str) -> bool | None:
    """Whether a checkpoint's config says it was trained on this graph's data: by the data fingerprint
    it recorded (`graph_data`), else by the full fingerprint; None when it records neither (a model
    of several graphs)."""
    if config.get("graph_data"):
        return config["graph_data"] == data
    if config.get("graph_fingerprint"):
        return config["graph_fingerprint"] == fingerprint
    return None


def entity_vectors(graph: Graph, settings: Settings, embedder=None) -> tuple[EntityVectors, str]:
    """The graph's `EntityVectors` and the name of the model that embedded it (its questions and
    any vector filled on use must be encoded with it)."""
    tables = open_tables(graph, settings.cache_dir)
    model = tables.model or settings.embedding_model
    embedder = embedder or get_embedder(model, settings.device, settings.embedding_batch_size)
    return EntityVectors(graph, tables, embedder), model


def vectors_on_demand(graph: Graph, settings: Settings, embedder=None):
    """`EntityVectors.vectors` for entity linking, opening the tables on the first call only: linking
    needs it just for candidates a lazy load left without a vector."""
    opened: list[EntityVectors] = []

    def vectors(idx: Sequence[int]) -> dict[int, np.ndarray]:
        if not opened:
            opened.append(entity_vectors(graph, settings, embedder)[0])
        return opened[0].vectors(idx)

    return vectors


def with_local_entities(items: Sequence, local: Sequence[np.ndarray]) -> list:
    """Copies of subgraphs / cached questions whose `entity_idx` index a compact table's rows."""
    return [dataclasses.replace(it, entity_idx=idx) for it, idx in zip(items, local)]
