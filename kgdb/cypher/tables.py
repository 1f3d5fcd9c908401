"""Entity and relation embedding tables (rows by dense idx), cached on disk per graph fingerprint.

Retrievers index these tables with `Subgraph.entity_idx` and `Subgraph.relation`; reading ~20k-2M
vectors over Bolt takes seconds to minutes, so the first call stores them as `.npz` under
`cache_dir/tables/<fingerprint>.npz` and later calls read the file.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kgdb.cypher import Graph
from kgdb.errors import KgdbError

PAGE = 10_000


@dataclass
class EmbeddingTables:
    entity: np.ndarray  # float32 [N, d], row i = Entity.idx i; zeros for CVT nodes and missing vectors
    relation: np.ndarray  # float32 [R, d], row i = Relation.idx i
    relation_names: list[str]  # relationship type per row of `relation`
    fingerprint: str
    has_entity_embedding: np.ndarray  # bool [N]

    @property
    def dim(self) -> int:
        return int(self.relation.shape[1])


def graph_fingerprint(graph: Graph) -> tuple[str, dict]:
    """Short hash of the graph's sizes, largest idx, embedding model and schema creation time."""
    info = graph.single("tables_fingerprint") or {}
    text = json.dumps(info, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16], info


def load_tables(graph: Graph, cache_dir: Path | str) -> EmbeddingTables:
    """Embedding tables of the graph, from `cache_dir` when the fingerprint matches, else from Neo4j."""
    fingerprint, info = graph_fingerprint(graph)
    path = Path(cache_dir) / "tables" / f"{fingerprint}.npz"
    if path.is_file():
        with np.load(path, allow_pickle=False) as data:
            return EmbeddingTables(
                entity=data["entity"],
                relation=data["relation"],
                relation_names=[str(n) for n in data["relation_names"]],
                fingerprint=fingerprint,
                has_entity_embedding=data["has_entity_embedding"],
            )
    if not info.get("dim"):
        raise KgdbError("the graph has no embedding model recorded: load it with `kgdb load` first")
    dim = int(info["dim"])
    rel_rows = graph.run("tables_relations")
    if any(r["idx"] is None for r in rel_rows):
        raise KgdbError("some relations have no idx: finish the load (run `kgdb load` again)")
    relation = np.zeros((len(rel_rows), dim), dtype=np.float32)
    names = [""] * len(rel_rows)
    for r in rel_rows:  # a few thousand rows at most
        names[r["idx"]] = r["name"]
        if r["embedding"] is not None:
            relation[r["idx"]] = r["embedding"]
    n = (info.get("max_entity_idx") or -1) + 1
    entity = np.zeros((n, dim), dtype=np.float32)
    has = np.zeros(n, dtype=bool)
    for start in range(0, n, PAGE):
        page = graph.single("tables_entities", start=start, stop=start + PAGE) or {"idx": []}
        if page["idx"]:
            idx = np.asarray(page["idx"], dtype=np.int64)
            entity[idx] = np.asarray(page["embedding"], dtype=np.float32)
            has[idx] = True
    tables = EmbeddingTables(entity, relation, names, fingerprint, has)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, entity=entity, relation=relation, relation_names=np.asarray(names), has_entity_embedding=has)
    tmp.replace(path)  # atomic: a concurrent reader never sees half a file
    return tables
