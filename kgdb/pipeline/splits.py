"""The labelled subgraphs of a question split: fetched from Neo4j once, then read from the disk cache."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from kgdb.config import FetchBounds
from kgdb.cypher import Graph, fetching
from kgdb.cypher.labels import training_paths, training_relations
from kgdb.data.cache import CachedSplit, cache_key, file_digest, load_cache, save_cache
from kgdb.data.label_paths import mask_from_paths
from kgdb.data.label_relations import RELATIONS_METHOD, relation_target_mask
from kgdb.data.questions import QuestionRecord, QuestionSet

if TYPE_CHECKING:
    from kgdb.config import Settings
    from kgdb.embeddings import Embedder

SHORTEST = "shortest"
LABEL_SOURCES = (SHORTEST, "rapl", "reg")  # --labels: weak shortest-path labels or a `kgdb label` method


def prepare_split(
    graph: Graph,
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
    chunk: int | None = None,
    max_triples: int | None = None,
    labels: str = SHORTEST,
    relation_targets: bool = False,
    hub_scan: int | None = None,
) -> CachedSplit:
    """Load the split's labelled subgraphs from disk, or fetch them once and store them.

    `labels`: "shortest" (the weak labels computed at fetch time) or an LLM method ("rapl", "reg")
    whose selections `kgdb label` stored in the graph; see `_with_llm_labels`. `relation_targets`:
    also carry each question's stored R_* (`kgdb label --method rapl-relations`) as a per-triple mask;
    see `_with_relation_targets`."""
    from kgdb.limits import FETCH_CHUNK, FETCH_HUB_SCAN, FETCH_MAX_TRIPLES

    bounds = FetchBounds(
        chunk=chunk or FETCH_CHUNK,
        max_triples=max_triples or FETCH_MAX_TRIPLES,
        hub_scan=FETCH_HUB_SCAN if hub_scan is None else hub_scan,
    )
    # The triple budget changes a subgraph only when it truncates one; keys made before it existed stay
    # valid. The hub bound changes subgraphs with hubs beyond the first level, so it is always keyed.
    budget = (
        {"hub_scan": bounds["hub_scan"]}
        if bounds["max_triples"] == FETCH_MAX_TRIPLES
        else {"max_triples": bounds["max_triples"], "hub_scan": bounds["hub_scan"]}
    )
    key = cache_key(
        **budget,
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
        base = CachedSplit(items, path, True, meta.get("counts", {}))
        return _with_supervision(graph, base, labels, relation_targets, key, dataset, split)
    on_start(len(questions))
    embeddings = embed([q.text for q in questions])
    items, counts, errors = fetching.fetch_labelled(
        graph, questions, embeddings, hops=hops, cap=cap, on_progress=on_progress, **bounds
    )
    counts["no_sp_triples"] = sum(1 for it in items if not it.labels.any())
    if not errors:  # a transient server failure must not be frozen into the cache
        save_cache(
            path, items, {"key": key, "dataset": dataset, "split": split, "hops": hops, "cap": cap, "counts": counts}
        )
    base = CachedSplit(items, path, False, counts, errors)
    return _with_supervision(graph, base, labels, relation_targets, key, dataset, split)


@dataclasses.dataclass
class QuestionFile:
    """A question file read for one graph, with what `prepare_split` keys and embeds its splits by:
    the graph's fingerprint and embedding model (`info` as the graph records it), and that model."""

    path: Path
    questions: QuestionSet
    fingerprint: str
    info: dict
    model: str
    embedder: Embedder

    @classmethod
    def read(cls, graph: Graph, settings: Settings, path: Path) -> QuestionFile:
        from kgdb.cypher.tables import graph_fingerprint
        from kgdb.data.questions import read_questions
        from kgdb.embeddings import get_embedder

        questions = read_questions(path)
        fingerprint, info = graph_fingerprint(graph)
        model = info.get("model") or settings.embedding_model
        embedder = get_embedder(model, settings.device, settings.embedding_batch_size)
        return cls(path, questions, fingerprint, info, model, embedder)

    def prepare(
        self, graph: Graph, settings: Settings, split: str, records: list[QuestionRecord], **options: Any
    ) -> CachedSplit:
        """`prepare_split` of `records` (questions of `split`) within the settings' fetch bounds;
        `options` as it takes them (hops, cap, progress, labels)."""
        return prepare_split(
            graph,
            cache_dir=settings.cache_dir,
            dataset=self.questions.dataset,
            split=split,
            source=self.path,
            questions=records,
            embed=self.embedder.encode,
            graph_fingerprint=self.fingerprint,
            embedding_model=self.model,
            **settings.fetch_bounds,
            **options,
        )


def _with_supervision(
    graph: Graph, base: CachedSplit, labels: str, relation_targets: bool, key: str, dataset: str, split: str
) -> CachedSplit:
    out = base if labels == SHORTEST else _with_llm_labels(graph, base, labels, key, dataset, split)
    return _with_relation_targets(graph, out, dataset, split) if relation_targets else out


def _with_llm_labels(
    graph: Graph, base: CachedSplit, method: str, base_key: str, dataset: str, split: str
) -> CachedSplit:
    """The split with each question's `labels` = the triples on its stored LLM-selected paths (newest
    labelling of `method`); questions without any (or whose paths are not in the cached subgraph)
    keep their shortest-path labels and are counted. Cached beside the base split under a key of the
    base key, the method and a digest of the stored labels, so relabelling invalidates it."""
    stored = training_paths(graph, [it.qid for it in base.items], method)
    key = cache_key(base=base_key, labels=method, stored=stored.digest)
    path = base.path.parent / f"{dataset}-{split}-{method}-{key[:16]}.npz"
    items = load_cache(path)
    if items is not None:
        meta = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        return CachedSplit(items, path, base.from_disk, base.counts, base.errors, meta.get("label_counts", {}))
    items = []
    counts: dict[str, Any] = {  # the source's name, then counts (`CachedSplit.label_counts`)
        "source": method,
        "llm": 0,
        "fallback_shortest": 0,
        "paths": 0,
        "paths_not_in_subgraph": 0,
    }
    for it in base.items:
        paths = stored.paths.get(it.qid, [])
        mask, complete = mask_from_paths(it.entity_idx, it.head, it.relation, it.tail, paths)
        counts["paths"] += complete
        counts["paths_not_in_subgraph"] += len(paths) - complete
        if mask.any():
            counts["llm"] += 1
            items.append(dataclasses.replace(it, labels=mask))
        else:
            counts["fallback_shortest"] += 1
            items.append(it)
    _save_derived(path, items, base, key, dataset, split, label_counts=counts)
    return CachedSplit(items, path, base.from_disk, base.counts, base.errors, counts)


def _with_relation_targets(graph: Graph, base: CachedSplit, dataset: str, split: str) -> CachedSplit:
    """The split with each question's `relation_targets` = its newest stored R_* as a per-triple mask
    (`relation_target_mask`: the triples a topic's relation in R_* leaves it by, in that direction).
    Questions without R_* keep None. Cached beside `base` (the shortest-path or LLM-labelled split)
    under a key of base's file, the method and a digest of the stored R_*, so relabelling invalidates it."""
    stored = training_relations(graph, [it.qid for it in base.items], RELATIONS_METHOD)
    key = cache_key(base=base.path.name, relation_targets=RELATIONS_METHOD, stored=stored.digest)
    path = base.path.parent / f"{base.path.stem}-{RELATIONS_METHOD}-{key[:16]}.npz"
    items = load_cache(path)
    if items is not None:
        meta = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        return dataclasses.replace(base, items=items, path=path, relation_counts=meta.get("relation_counts", {}))
    counts: dict[str, Any] = {  # the source's name, then counts (`CachedSplit.relation_counts`)
        "source": RELATIONS_METHOD,
        "questions": 0,
        "relations": 0,
        "augmented_triples": 0,
        "unknown_relations": stored.unknown,
    }
    items = []
    for it in base.items:
        pairs = stored.targets.get(it.qid)
        if not pairs:
            items.append(dataclasses.replace(it, relation_targets=None))
            continue
        mask = relation_target_mask(it.head, it.relation, it.tail, it.topic, pairs)
        counts["questions"] += 1
        counts["relations"] += len(pairs)
        counts["augmented_triples"] += int((mask & 1).astype(bool).sum() + (mask & 2).astype(bool).sum())
        items.append(dataclasses.replace(it, relation_targets=mask if mask.any() else None))
    _save_derived(path, items, base, key, dataset, split, label_counts=base.label_counts, relation_counts=counts)
    return dataclasses.replace(base, items=items, path=path, relation_counts=counts)


def _save_derived(
    path: Path, items: list, base: CachedSplit, key: str, dataset: str, split: str, **counts: dict[str, Any]
) -> None:
    """Store a split computed from `base` beside it, with `base`'s counts and `counts`; not when
    fetching `base` failed somewhere: a transient server failure must not be frozen into the cache."""
    if not base.errors:
        meta = {"key": key, "base": str(base.path), "dataset": dataset, "split": split, "counts": base.counts}
        save_cache(path, items, {**meta, **counts})
