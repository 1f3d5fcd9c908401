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
from kgdb.errors import InputError, KgdbError

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


def ground_relation_path(
    graph: Graph, topic_id: str, relations: list[str], cap: int = 1000, directions: list[int] | None = None, walks: bool = False
) -> list[list[Triple]]:
    """Instantiated paths topic -r1- x -r2- y … (no repeated entity; with `walks` entities may repeat
    but a relationship is never taken straight back), ≤ cap per hop.

    `directions[i]` is +1 (follow r_i head -> tail), -1 (against it) or 0 (either); omitted = either.
    A path that grounds to nothing because the topic is not an entity or a relation is not a
    relationship type of the graph raises `InputError` saying which."""
    if not relations:
        raise InputError("a relation path needs at least one relation", path="relations")
    directions = list(directions) if directions else [0] * len(relations)
    if len(directions) != len(relations) or any(d not in (-1, 0, 1) for d in directions):
        raise InputError(f"directions {directions} do not fit relations {relations}: one of -1, 0, 1 per relation", path="directions")
    paths = [{"nodes": [topic_id], "triples": []}]
    for relation, direction in zip(relations, directions):
        paths = graph.run("ground_step", paths=paths, relation=relation, direction=direction, cap=cap, walks=walks)
        if not paths:
            _explain_empty(graph, topic_id, relations)
            return []
    return [[tuple(t) for t in p["triples"]] for p in paths]


class UnknownRelationError(InputError):
    """A relation path names a relationship type the graph does not have."""


class UnknownTopicError(InputError):
    """A relation path starts at an id that is not an entity of the graph."""


def _explain_empty(graph: Graph, topic_id: str, relations: list[str]) -> None:
    row = graph.single("relation_path_check", topic=topic_id, relations=list(relations)) or {}
    if row.get("unknown_relations"):
        names = ", ".join(repr(r) for r in row["unknown_relations"])
        raise UnknownRelationError(f"the relation path {' -> '.join(relations)} names {names}, not a relation of this graph", path="relations")
    if not row.get("topic_known", True):
        raise UnknownTopicError(f"{topic_id!r} is not an entity of this graph, so no relation path starts there", path="topic")


def graph_triples(graph: Graph, max_triples: int = 5_000_000, page: int = 20_000) -> list[tuple[str, str, str]]:
    """Every (head id, relation, tail id) of the graph, read in pages of entity idx (for labelling
    relation paths in numpy). Refuses graphs over `max_triples`: label those on fetched subgraphs."""
    stop = int((graph.single("tables_fingerprint") or {}).get("max_entity_idx") or -1) + 1
    out: list[tuple[str, str, str]] = []
    for start in range(0, stop, page):
        row = graph.single("graph_triples", start=start, stop=start + page) or {"triples": []}
        out += [tuple(t) for t in row["triples"]]
        if len(out) > max_triples:
            raise KgdbError(f"the graph has more than {max_triples:,} triples to label in memory")
    return out


def relation_step(graph: Graph, entity_ids: list[str], relation: str, direction: int, cap: int = 200) -> list[str]:
    """Distinct entities one `relation` step (+1 along, -1 against, 0 either) from `entity_ids`, ≤ cap."""
    row = graph.single("relation_step", ids=list(entity_ids), relation=relation, direction=direction, cap=cap) or {}
    return list(row.get("ids") or [])


def relations_around(graph: Graph, entity_ids: list[str], limit: int = 1000) -> list[tuple[str, int]]:
    """(relation, direction) pairs at these entities: +1 when the entity is the head."""
    rows = graph.run("relations_around", ids=list(entity_ids), limit=limit)
    return [(r["relation"], int(r["direction"])) for r in rows]


def entity_names(graph: Graph, entity_ids: list[str]) -> dict[str, tuple[str, bool]]:
    """id -> (readable name, is CVT) for the given entities."""
    rows = graph.run("entity_names", ids=list(dict.fromkeys(entity_ids)))
    return {r["id"]: (r["name"], bool(r["cvt"])) for r in rows}
