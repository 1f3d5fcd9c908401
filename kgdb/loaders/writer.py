"""Writes triples into Neo4j following kgdb's data model, idempotently, over Bolt.

Phases: entities, relation nodes, triples (grouped by relationship type), dense idx,
embeddings. Each phase only adds what is missing, so a killed load resumes by running again
and a repeated load changes nothing. No torch here: the embedder is passed in.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Mapping, Protocol, Sequence

import numpy as np

from kgdb.cypher import Graph
from kgdb.errors import KgdbError

MID = re.compile(r"^[mg]\.[0-9a-z_]+$")
# Dates, datetimes, years and numbers: the literal values Freebase stores as tails.
LITERAL = re.compile(
    r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$"
    r"|^-?\d{4}(-\d{2}(-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[-+]\d{2}:?\d{2})?)?)?)?$"
)

Triple = tuple[str, str, str]
ProgressFn = Callable[[str, int, int], None]  # (phase, done, total)


class TextEncoder(Protocol):
    name: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray: ...


def normalise_mid(token: str) -> str:
    """`/m/0abc` (FB15k-237, RDF paths) -> `m.0abc`; other tokens unchanged."""
    if token.startswith(("/m/", "/g/")):
        return token[1] + "." + token[3:]
    return token


def normalise_relation(name: str) -> str:
    """`/people/person/nationality` -> `people.person.nationality` (CVT paths joined with '.')."""
    if name.startswith("/"):
        return ".".join(part for part in re.split(r"[/.]", name) if part)
    return name


def entity_labels(entity_id: str, has_name: bool, is_literal: bool) -> list[str]:
    if is_literal:
        return ["Entity", "Literal"]
    if MID.match(entity_id) and not has_name:
        return ["Entity", "CVT"]
    return ["Entity"]


@dataclass
class LoadStats:
    triples_in: int = 0
    entities: int = 0
    cvt: int = 0
    literals: int = 0
    relation_types: int = 0
    entity_embeddings: int = 0
    relation_embeddings: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def triples_per_second(self) -> float:
        s = self.seconds.get("triples", 0.0)
        return self.triples_in / s if s else 0.0


def _noop(phase: str, done: int, total: int) -> None:
    pass


def write_graph(
    graph: Graph,
    triples: Sequence[Triple],
    names: Mapping[str, str] | None = None,
    *,
    embedder: TextEncoder | None = None,
    batch_size: int = 10_000,
    progress: ProgressFn = _noop,
) -> LoadStats:
    """Load `triples` (ids already normalised) with optional readable `names` for ids.

    Tails that look like dates or numbers and never occur as heads become `:Literal`; ids of the
    form `m.…`/`g.…` without a readable name become `:CVT`. Identical triples are stored once.
    """
    from kgdb.cypher.schema import init_schema

    # Constraints first: MERGE on Entity.id is only fast with the uniqueness index behind it.
    init_schema(graph, embedder.name if embedder else None, embedder.dim if embedder else None)
    stats = LoadStats()
    names = names or {}
    unique = sorted(set(triples))
    stats.triples_in = len(unique)

    t0 = time.perf_counter()
    heads = {h for h, _, _ in unique}
    ids = sorted(heads | {t for _, _, t in unique})
    rows = []
    for entity_id in ids:
        name = names.get(entity_id)
        labels = entity_labels(entity_id, name is not None, entity_id not in heads and bool(LITERAL.match(entity_id)))
        stats.cvt += "CVT" in labels
        stats.literals += "Literal" in labels
        rows.append({"id": entity_id, "name": name if name is not None else entity_id, "labels": labels})
    stats.entities = len(rows)
    _batched(graph, "load_entities", rows, batch_size, "entities", progress)
    stats.seconds["entities"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    by_type: dict[str, list[dict[str, str]]] = defaultdict(list)
    for h, r, t in unique:
        by_type[r].append({"h": h, "t": t})
    stats.relation_types = len(by_type)
    from kgdb.embeddings import relation_text

    graph.run("load_relations", rows=[{"name": r, "text": relation_text(r)} for r in sorted(by_type)])
    done = 0
    for rel_type in sorted(by_type):
        for batch in graph.iter_batches(by_type[rel_type], batch_size):
            graph.run("load_triples", type=rel_type, rows=batch)
            done += len(batch)
            progress("triples", done, len(unique))
    stats.seconds["triples"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    assign_idx(graph, batch_size)
    stats.seconds["idx"] = time.perf_counter() - t0

    if embedder is not None:
        t0 = time.perf_counter()
        stats.entity_embeddings, stats.relation_embeddings = embed_missing(graph, embedder, progress=progress)
        stats.seconds["embeddings"] = time.perf_counter() - t0
    return stats


def _batched(graph: Graph, name: str, rows: list, size: int, phase: str, progress: ProgressFn) -> None:
    done = 0
    for batch in graph.iter_batches(rows, size):
        graph.run(name, rows=batch)
        done += len(batch)
        progress(phase, done, len(rows))


def assign_idx(graph: Graph, batch_size: int = 10_000) -> None:
    """Give every Entity and Relation without one a dense idx, continuing after the largest."""
    for kind in ("entity", "relation"):
        row = graph.single(f"load_{kind}_missing_idx")
        start, keys = row["next"], row["keys"]
        rows = [{"key": key, "idx": start + i} for i, key in enumerate(keys)]
        for batch in graph.iter_batches(rows, batch_size):
            graph.run(f"load_{kind}_set_idx", rows=batch)


def embed_missing(
    graph: Graph, embedder: TextEncoder, batch_size: int = 2_000, progress: ProgressFn = _noop
) -> tuple[int, int]:
    """Embed names of entities and relation texts that have no embedding yet."""
    counts = []
    for kind in ("entity", "relation"):
        todo = graph.run(f"load_{kind}_missing_embeddings")
        if any(r["idx"] is None for r in todo):
            raise KgdbError(f"some {kind} nodes have no idx; run the load again to finish it")
        for start in range(0, len(todo), batch_size):
            chunk = todo[start : start + batch_size]
            vectors = embedder.encode([r["text"] for r in chunk])
            graph.run(
                f"load_{kind}_set_embeddings",
                rows=[{"idx": r["idx"], "embedding": v.tolist()} for r, v in zip(chunk, vectors)],
            )
            progress(f"{kind} embeddings", start + len(chunk), len(todo))
        counts.append(len(todo))
    return counts[0], counts[1]

