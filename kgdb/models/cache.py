"""Versioned on-disk cache of fetched, labelled subgraphs for training and evaluation.

The database is read once per (graph fingerprint, embedding model, fetch settings, question file,
split); the arrays are stored as one `.npz` (concatenated arrays + offsets, no pickle) with a JSON
sidecar. A second run with the same key loads the file and never touches Neo4j.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from kgdb.models.datasets import QuestionRecord

CACHE_VERSION = 1
_ARRAYS = ("head", "relation", "tail", "entity_idx", "is_cvt", "topic", "labels", "answers")


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
    labels: np.ndarray  # bool [m] shortest-path triples
    answers: np.ndarray  # int64 local nodes that are gold answers
    n_answers_in_graph: int  # gold answers that exist in the graph at all (answer-recall denominator)
    question_embedding: np.ndarray  # float32 [d]
    hop: int  # topic -> nearest answer distance in the subgraph (undirected); 0 = unreachable
    fetch_ms: float = 0.0

    @property
    def num_triples(self) -> int:
        return int(self.head.shape[0])


def cache_key(**parts: object) -> str:
    blob = json.dumps({"version": CACHE_VERSION, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def answer_hops(n: int, head: np.ndarray, tail: np.ndarray, topic: np.ndarray, answers: np.ndarray, max_hops: int = 6) -> int:
    """Undirected BFS distance from the topic set to the nearest answer (0 when none is reached)."""
    if len(answers) == 0 or len(topic) == 0:
        return 0
    if np.isin(answers, topic).any():
        return 0
    seen = np.zeros(n, dtype=bool)
    seen[topic] = True
    frontier = seen.copy()
    targets = np.zeros(n, dtype=bool)
    targets[answers] = True
    for hop in range(1, max_hops + 1):
        nxt = np.zeros(n, dtype=bool)
        nxt[tail[frontier[head]]] = True
        nxt[head[frontier[tail]]] = True
        nxt &= ~seen
        if (nxt & targets).any():
            return hop
        if not nxt.any():
            return 0
        seen |= nxt
        frontier = nxt
    return 0


def save_cache(path: Path, items: list[CachedQuestion], meta: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    for name in _ARRAYS:
        parts = [getattr(it, name) for it in items]
        arrays[name] = np.concatenate(parts) if parts else np.zeros(0)
        arrays[f"{name}_offsets"] = np.cumsum([0] + [len(p) for p in parts]).astype(np.int64)
    arrays["question_embedding"] = (
        np.stack([it.question_embedding for it in items]) if items else np.zeros((0, 0), np.float32)
    )
    arrays["n_answers_in_graph"] = np.array([it.n_answers_in_graph for it in items], dtype=np.int64)
    arrays["hop"] = np.array([it.hop for it in items], dtype=np.int64)
    arrays["fetch_ms"] = np.array([it.fetch_ms for it in items], dtype=np.float64)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, **arrays)
    tmp.replace(path)
    side = {**meta, "qids": [it.qid for it in items], "questions": [it.question for it in items]}
    path.with_suffix(".json").write_text(json.dumps(side, sort_keys=True) + "\n", encoding="utf-8")


def load_cache(path: Path) -> list[CachedQuestion] | None:
    side = path.with_suffix(".json")
    if not (path.is_file() and side.is_file()):
        return None
    meta = json.loads(side.read_text(encoding="utf-8"))
    data = np.load(path)
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
            )
        )
    return items


def build_items(
    graph,
    questions: list[QuestionRecord],
    question_embeddings: np.ndarray,
    *,
    hops: int,
    cap: int | None,
    on_progress: Callable[[int], None] = lambda _: None,
) -> tuple[list[CachedQuestion], dict[str, int], list[str]]:
    """Fetch and label the subgraph of each question (gold topics), one DB round-trip set per question."""
    from kgdb.models.db import existing_entities, fetch, label

    from neo4j.exceptions import Neo4jError

    from kgdb.errors import KgdbError

    counts = {"no_topic_in_graph": 0, "fetch_failed": 0}
    errors: list[str] = []
    items = []
    for i, q in enumerate(questions):
        topics = existing_entities(graph, q.topics)
        if not topics:
            counts["no_topic_in_graph"] += 1
            on_progress(1)
            continue
        answers_in_graph = existing_entities(graph, q.answers)
        t0 = time.perf_counter()
        try:
            sg = fetch(graph, topics, question_embeddings[i], hops=hops, cap=cap, question=q.text, qid=q.id)
        except (KgdbError, Neo4jError) as exc:
            counts["fetch_failed"] += 1
            errors.append(f"{q.id}: {str(exc)[:200]}")
            on_progress(1)
            continue
        fetch_ms = (time.perf_counter() - t0) * 1000
        labels = label(graph, sg, answers_in_graph) if answers_in_graph else np.zeros(sg.num_triples, dtype=bool)
        local = {eid: j for j, eid in enumerate(sg.entity_ids)}
        answers = np.array(sorted(local[a] for a in set(answers_in_graph) if a in local), dtype=np.int64)
        head = np.asarray(sg.head, dtype=np.int64)
        tail = np.asarray(sg.tail, dtype=np.int64)
        topic = np.asarray(sg.topic, dtype=np.int64)
        hop = q.hop if q.hop else answer_hops(sg.num_nodes, head, tail, topic, answers)
        items.append(
            CachedQuestion(
                qid=q.id,
                question=q.text,
                head=head,
                relation=np.asarray(sg.relation, dtype=np.int64),
                tail=tail,
                entity_idx=np.asarray(sg.entity_idx, dtype=np.int64),
                is_cvt=np.asarray(sg.is_cvt, dtype=bool),
                topic=topic,
                labels=np.asarray(labels, dtype=bool),
                answers=answers,
                n_answers_in_graph=len(set(answers_in_graph)),
                question_embedding=np.asarray(question_embeddings[i], dtype=np.float32),
                hop=int(hop),
                fetch_ms=fetch_ms,
            )
        )
        on_progress(1)
    return items, counts, errors


@dataclass
class CachedSplit:
    items: list[CachedQuestion]
    path: Path
    from_disk: bool  # True: loaded from the cache, the database was not queried
    counts: dict[str, int]
    errors: list[str] = field(default_factory=list)  # fetch failures; such a split is not cached


def cached_split(
    graph,
    *,
    cache_dir: Path,
    dataset: str,
    split: str,
    source: Path,
    questions: list[QuestionRecord],
    embed: Callable[[list[str]], np.ndarray],
    graph_fingerprint: str,
    embedding_model: str,
    hops: int,
    cap: int | None,
    on_start: Callable[[int], None] = lambda total: None,
    on_progress: Callable[[int], None] = lambda _: None,
) -> CachedSplit:
    """Load the split's labelled subgraphs from disk, or fetch them once and store them."""
    key = cache_key(
        graph=graph_fingerprint,
        model=embedding_model,
        hops=hops,
        cap=cap,
        source=file_digest(source),
        dataset=dataset,
        split=split,
        qids=[q.id for q in questions],
    )
    path = Path(cache_dir) / "subgraphs" / f"{dataset}-{split}-{key[:16]}.npz"
    items = load_cache(path)
    if items is not None:
        meta = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        return CachedSplit(items, path, True, meta.get("counts", {}))
    on_start(len(questions))
    embeddings = embed([q.text for q in questions])
    items, counts, errors = build_items(graph, questions, embeddings, hops=hops, cap=cap, on_progress=on_progress)
    counts["no_sp_triples"] = sum(1 for it in items if not it.labels.any())
    if not errors:  # a transient server failure must not be frozen into the cache
        save_cache(path, items, {"key": key, "dataset": dataset, "split": split, "hops": hops, "cap": cap, "counts": counts})
    return CachedSplit(items, path, False, counts, errors)
