"""Candidate paths between topic and answer entities, relation-path grounding, and triple labels.

Every function treats the graph as a multigraph: a path is a sequence of relationships, so two
relations between the same entities give two paths (the peers' `nx.DiGraph` keeps only one).

- `shortest_path_triples` (Cypher, whole graph) and `kgdb.data.labels.label_subgraph` (numpy, on
  a fetched `Subgraph`, the SubgraphRAG weak labels) use the same rule: for each (topic, answer) pair, all
  shortest directed paths topic → answer and answer → topic, keeping only the overall shortest
  direction(s); a pair with no directed path falls back to shortest undirected paths (`undirected`).
- `ground_relation_path` instantiates a relation sequence from a topic entity (Cypher, one query
  per relation).
"""

from __future__ import annotations

from dataclasses import dataclass

from kgdb.cypher import Graph
from kgdb.errors import KgdbError

Triple = tuple[str, str, str, str]  # (elementId, head id, relation, tail id)


@dataclass(frozen=True)
class PathTriples:
    topic: str
    answer: str
    direction: str  # "forward" (topic → answer), "backward" (answer → topic) or "undirected"
    triples: tuple[Triple, ...]

    @property
    def length(self) -> int:
        return len(self.triples)


def shortest_path_triples(
    graph: Graph, topic_ids: list[str], answer_ids: list[str], undirected: bool = True
) -> list[PathTriples]:
    """Every shortest path per (topic, answer) pair in the whole graph (see module docstring)."""
    rows = graph.run("shortest_paths", topics=list(topic_ids), answers=list(answer_ids), undirected=undirected)
    return [
        PathTriples(r["topic"], r["answer"], r["direction"], tuple(tuple(t) for t in r["triples"])) for r in rows
    ]


def ground_relation_path(graph: Graph, topic_id: str, relations: list[str], cap: int = 1000) -> list[list[Triple]]:
    """Instantiated paths topic -r1- x -r2- y … (either edge direction, no repeated entity), ≤ cap."""
    if not relations:
        raise KgdbError("a relation path needs at least one relation")
    paths = [{"nodes": [topic_id], "triples": []}]
    for relation in relations:
        paths = graph.run("ground_step", paths=paths, relation=relation, cap=cap)
        if not paths:
            return []
    return [[tuple(t) for t in p["triples"]] for p in paths]


def relations_around(graph: Graph, entity_ids: list[str], limit: int = 1000) -> list[tuple[str, int]]:
    """(relation, direction) pairs at these entities: +1 when the entity is the head."""
    rows = graph.run("relations_around", ids=list(entity_ids), limit=limit)
    return [(r["relation"], int(r["direction"])) for r in rows]


def entity_names(graph: Graph, entity_ids: list[str]) -> dict[str, tuple[str, bool]]:
    """id -> (readable name, is CVT) for the given entities."""
    rows = graph.run("entity_names", ids=list(dict.fromkeys(entity_ids)))
    return {r["id"]: (r["name"], bool(r["cvt"])) for r in rows}
