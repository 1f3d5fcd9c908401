"""Versioned on-disk cache of fetched, labelled subgraphs for training and evaluation.

The database is read once per (graph fingerprint, embedding model, fetch settings, question file,
split) by `kgdb.pipeline.prepare_split`; the arrays are stored as one `.npz` (concatenated arrays + offsets, no pickle) with a JSON
sidecar. A second run with the same key loads the file and never touches Neo4j.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from kgdb.private_files import open_private, private_dir, write_private_text

CACHE_VERSION = 1
log = logging.getLogger("kgdb.cache")
_warned: set[str] = set()
# What a damaged cache file raises on reading (a truncated zip, a torn sidecar, arrays that do not fit).
UNREADABLE = (OSError, ValueError, KeyError, IndexError, EOFError, zipfile.BadZipFile)


def without_cache(where: Path | str, why: object) -> None:
    """Say once per process that the cache at `where` cannot be used, and why; the caller goes on
    without it (a cache only saves time: a full or read-only KGDB_CACHE_DIR must not stop a command)."""
    reason = why.strerror if isinstance(why, OSError) and why.strerror else str(why)
    if "cache" in _warned:
        return
    _warned.add("cache")
    log.warning(
        "warning: the cache at %s cannot be used (%s); going on without it (set KGDB_CACHE_DIR to a writable "
        "folder with free space)",
        where,
        " ".join(str(reason).split())[:200],
    )


def remove_quietly(*paths: Path) -> None:
    """Delete temporary files a failed write left behind."""
    for p in paths:
        with contextlib.suppress(OSError):
            p.unlink(missing_ok=True)


_ARRAYS = ("head", "relation", "tail", "entity_idx", "is_cvt", "topic", "labels", "answers")
_FEATURE = "feature:"  # npz array name prefix of per-node features


@dataclass
class CachedQuestion:
    """Everything training and evaluation need from the database for one question."""

    qid: str
    question: str
    head: np.ndarray  # int64 [m] local
    relation: np.ndarray  # int64 [m] Relation.idx
    tail: np.ndarray  # int64 [m] local
    entity_idx: np.ndarray  # int64 [n] Entity.idx
    is_cvt: np.ndarray  # bool [n]
    topic: np.ndarray  # int64 [k] local
    labels: np.ndarray  # bool [m] triples to learn: shortest-path ones, or those on stored LLM label paths (--labels)
    answers: np.ndarray  # int64 local nodes that are gold answers
    n_answers_in_graph: int  # gold answers that exist in the graph at all (answer-recall denominator)
    question_embedding: np.ndarray  # float32 [d]
    hop: int  # topic -> nearest answer distance in the subgraph (undirected); 0 = unreachable
    fetch_ms: float = 0.0
    # Per-node features a retriever computed once from this subgraph (key -> float32 [n, w]), e.g.
    # SubgraphRAG's DDE under "dde-2-2"; stored with the arrays by `save_cache` / `add_features`.
    features: dict[str, np.ndarray] = field(default_factory=dict)
    # RAPL's relation targeting (Eq. 8), uint8 [m] from `kgdb.data.label_relations.relation_target_mask`:
    # bit 1 the triple read forward, bit 2 read backwards, leaves a topic with a relation in R_*.
    # None: no R_* for this question (and in every cache written before relation targeting existed).
    relation_targets: np.ndarray | None = None

    @property
    def num_triples(self) -> int:
        return int(self.head.shape[0])


def cache_key(**parts: object) -> str:
    blob = json.dumps({"version": CACHE_VERSION, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def save_cache(path: Path, items: list[CachedQuestion], meta: dict) -> bool:
    """Write the split's arrays and sidecar; False (with one warning, no file left behind) when the
    cache folder is read-only or full."""
    side = {**meta, "qids": [it.qid for it in items], "questions": [it.question for it in items]}
    return _write_atomically(path, _split_arrays(items), side)


def _split_arrays(items: list[CachedQuestion]) -> dict[str, np.ndarray]:
    """The split as the `.npz` stores it: each per-question array concatenated, with its offsets."""
    arrays: dict[str, np.ndarray] = {}
    for name in _ARRAYS:
        _add_ragged(arrays, name, [getattr(it, name) for it in items])
    arrays["question_embedding"] = (
        np.stack([it.question_embedding for it in items]) if items else np.zeros((0, 0), np.float32)
    )
    arrays["n_answers_in_graph"] = np.array([it.n_answers_in_graph for it in items], dtype=np.int64)
    arrays["hop"] = np.array([it.hop for it in items], dtype=np.int64)
    arrays["fetch_ms"] = np.array([it.fetch_ms for it in items], dtype=np.float64)
    # A feature is stored only when every question has it (it is computed for a whole split at once).
    keys = set.intersection(*(set(it.features) for it in items)) if items else set()
    for key in sorted(keys):
        _add_ragged(arrays, _FEATURE + key, [np.asarray(it.features[key], dtype=np.float32) for it in items])
    # Optional, so caches without it (all older ones) stay readable; a question without R_* stores zeros
    # and reads back as None, which is what zeros mean (no augmentation).
    if any(it.relation_targets is not None for it in items):
        parts = [
            np.zeros(it.num_triples, np.uint8)
            if it.relation_targets is None
            else np.asarray(it.relation_targets, np.uint8)
            for it in items
        ]
        _add_ragged(arrays, "relation_targets", parts)
    return arrays


def _add_ragged(arrays: dict[str, np.ndarray], name: str, parts: list[np.ndarray]) -> None:
    """One array per question stored as `name` (all of them concatenated) and `name_offsets`."""
    arrays[name] = np.concatenate(parts) if parts else np.zeros(0)
    arrays[f"{name}_offsets"] = np.cumsum([0] + [len(p) for p in parts]).astype(np.int64)


def _write_atomically(path: Path, arrays: dict[str, np.ndarray], side: dict) -> bool:
    """Arrays then sidecar through temporary files; False (one warning, nothing left behind) on OSError."""
    # Per-process temporary names: two runs adding features to one shared cache never mix writes.
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
    tmp_side = path.with_name(f"{path.stem}.{os.getpid()}.tmp.json")
    try:
        private_dir(path.parent)
        with open_private(tmp, "wb") as fh:
            np.savez(fh, **cast(dict[str, Any], arrays))  # numpy's stub types the keywords as allow_pickle
        write_private_text(tmp_side, json.dumps(side, sort_keys=True) + "\n")
        # the sidecar goes last: a reader that finds it finds the arrays it describes
        tmp.replace(path)
        tmp_side.replace(path.with_suffix(".json"))
    except OSError as exc:
        remove_quietly(tmp, tmp_side)
        without_cache(path.parent, exc)
        return False
    return True


def load_cache(path: Path) -> list[CachedQuestion] | None:
    """The cached split, or None when there is none or it cannot be read (a damaged file is a miss,
    said once, and rebuilt from the database)."""
    side = path.with_suffix(".json")
    if not (path.is_file() and side.is_file()):
        return None
    try:
        return _read_cache(path, side)
    except UNREADABLE as exc:
        without_cache(path, f"unreadable cache file: {type(exc).__name__}: {exc}")
        return None


def _read_cache(path: Path, side: Path) -> list[CachedQuestion]:
    meta = json.loads(side.read_text(encoding="utf-8"))
    data = np.load(path, allow_pickle=False)
    feature_keys = [k[len(_FEATURE) :] for k in data.files if k.startswith(_FEATURE) and not k.endswith("_offsets")]
    features = {k: (data[_FEATURE + k], data[_FEATURE + k + "_offsets"]) for k in feature_keys}
    targets = (data["relation_targets"], data["relation_targets_offsets"]) if "relation_targets" in data.files else None
    items = []
    for i, qid in enumerate(meta["qids"]):
        parts = {}
        for name in _ARRAYS:
            off = data[f"{name}_offsets"]
            parts[name] = data[name][off[i] : off[i + 1]]
        items.append(
            CachedQuestion(
                qid=qid,
                question=meta["questions"][i],
                head=parts["head"].astype(np.int64),
                relation=parts["relation"].astype(np.int64),
                tail=parts["tail"].astype(np.int64),
                entity_idx=parts["entity_idx"].astype(np.int64),
                is_cvt=parts["is_cvt"].astype(bool),
                topic=parts["topic"].astype(np.int64),
                labels=parts["labels"].astype(bool),
                answers=parts["answers"].astype(np.int64),
                n_answers_in_graph=int(data["n_answers_in_graph"][i]),
                question_embedding=data["question_embedding"][i].astype(np.float32),
                hop=int(data["hop"][i]),
                fetch_ms=float(data["fetch_ms"][i]),
                features={k: rows[off[i] : off[i + 1]] for k, (rows, off) in features.items()},
                relation_targets=_relation_targets(targets, i),
            )
        )
    return items


def _relation_targets(stored: tuple[np.ndarray, np.ndarray] | None, i: int) -> np.ndarray | None:
    if stored is None:
        return None
    rows, off = stored
    mask = rows[off[i] : off[i + 1]].astype(np.uint8)
    return mask if mask.any() else None


def add_features(path: Path, items: list[CachedQuestion]) -> None:
    """Rewrite a cache file with the per-node features its items now carry (same key and sidecar).
    A no-op when the file is gone; written through a temporary file like `save_cache`."""
    side = path.with_suffix(".json")
    if not (path.is_file() and side.is_file()):
        return
    try:
        meta = json.loads(side.read_text(encoding="utf-8"))
    except UNREADABLE:
        return
    meta.pop("qids", None)
    meta.pop("questions", None)
    save_cache(path, items, meta)


@dataclass
class CachedSplit:
    items: list[CachedQuestion]
    path: Path
    from_disk: bool  # True: loaded from the cache, the database was not queried
    counts: dict[str, int]
    errors: list[str] = field(default_factory=list)  # fetch failures; such a split is not cached
    # --labels other than shortest: {"source", "llm", "fallback_shortest", "paths", "paths_not_in_subgraph"}
    label_counts: dict = field(default_factory=dict)
    # --relation-targets: {"source", "questions", "relations", "augmented_triples", "unknown_relations"}
    relation_counts: dict = field(default_factory=dict)
