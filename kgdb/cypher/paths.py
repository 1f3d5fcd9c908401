"""Candidate paths between topic and answer entities, relation-path grounding, and triple labels.

Every function treats the graph as a multigraph: a path is a sequence of relationships, so two
relations between the same entities give two paths (the peers' `nx.DiGraph` keeps only one).

- `shortest_path_triples` (Cypher, whole graph) and `kgdb.data.labels.label_subgraph` (numpy, on
  a fetched `Subgraph`, the SubgraphRAG weak labels) use the same rule: for each (topic, answer) pair, all
  shortest directed paths topic → answer and answer → topic, keeping only the overall shortest
  direction(s); a pair with no directed path falls back to shortest undirected paths (`undirected`).
- `ground_relation_path(s)` instantiates relation sequences from topic entities (Cypher, one query
  per hop for all of them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from kgdb.cypher import Graph
from kgdb.cypher.path_candidates import check_step_scan
from kgdb.errors import InputError, KgdbError
from kgdb.limits import RRP_STEP_SCAN

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
    return [PathTriples(r["topic"], r["answer"], r["direction"], tuple(tuple(t) for t in r["triples"])) for r in rows]


def ground_relation_path(
    graph: Graph,
    topic_id: str,
    relations: list[str],
    cap: int = 1000,
    directions: list[int] | None = None,
    walks: bool = False,
    per_end: int = 3,
    step_scan: int | None = RRP_STEP_SCAN,
) -> list[list[Triple]]:
    """Instantiated paths topic -r1- x -r2- y … (no repeated entity; with `walks` entities may repeat
    but a relationship is never taken straight back); per hop at most `cap` distinct entities are
    reached (the first in id order) and at most `per_end` paths to each are kept.

    `directions[i]` is +1 (follow r_i head -> tail), -1 (against it) or 0 (either); omitted = either.
    A step with more than `step_scan` relationships from one entity is read as a sample of its ends
    (`ground_step.cypher`; None: every step whole).
    A path that grounds to nothing because the topic is not an entity or a relation is not a
    relationship type of the graph raises `InputError` saying which."""
    paths = ground_relation_paths(
        graph, [(topic_id, relations, directions)], cap=cap, walks=walks, per_end=per_end, step_scan=step_scan
    )[0]
    if not paths:
        _explain_empty(graph, topic_id, relations)
    return paths


def ground_relation_paths(
    graph: Graph,
    jobs: list[tuple[str, list[str], list[int] | None]],
    cap: int = 1000,
    walks: bool = False,
    per_end: int = 3,
    step_scan: int | None = RRP_STEP_SCAN,
) -> list[list[list[Triple]]]:
    """`ground_relation_path` for many (topic, relations, directions) at once: one `ground_step`
    query per hop for all of them. Per job its paths, [] when it grounds to nothing (no error here:
    `ground_relation_path` or `why_empty` says why)."""
    check_step_scan(step_scan)
    todo = {i: _checked(relations, directions) for i, (_, relations, directions) in enumerate(jobs)}
    paths: dict[int, list[dict]] = {i: [{"nodes": [topic], "triples": []}] for i, (topic, _, _) in enumerate(jobs)}
    hop = 0
    while groups := _shared_prefixes(jobs, todo, paths, hop):
        extended = {
            int(row["key"]): row["paths"]
            for row in graph.run(
                "ground_step", groups=list(groups.values()), cap=cap, walks=walks, per_end=per_end, scan=step_scan
            )
        }
        for group in groups.values():
            for job in group["jobs"]:
                paths[job["key"]] = extended.get(job["key"], [])
        hop += 1
    done = lambda i: bool(paths[i]) and len(paths[i][0]["triples"]) == len(todo[i][0])  # noqa: E731
    return [[[tuple(t) for t in p["triples"]] for p in paths[i]] if done(i) else [] for i in range(len(jobs))]


def _checked(relations: list[str], directions: list[int] | None) -> tuple[list[str], list[int]]:
    """A job's relations and directions (0: either way when none are given), refused when they do not fit."""
    if not relations:
        raise InputError("a relation path needs at least one relation", path="relations")
    dirs = list(directions) if directions else [0] * len(relations)
    if len(dirs) != len(relations) or any(d not in (-1, 0, 1) for d in dirs):
        raise InputError(
            f"directions {dirs} do not fit relations {relations}: one of -1, 0, 1 per relation", path="directions"
        )
    return list(relations), dirs


def _shared_prefixes(
    jobs: list, todo: dict[int, tuple[list[str], list[int]]], paths: dict[int, list[dict]], hop: int
) -> dict[tuple, dict]:
    """The `ground_step` groups of one hop: jobs that share their partial paths are expanded once, those
    from one topic whose relation paths agree so far, since the same steps from the same entity give the
    same paths. Empty when every job is done or grounded to nothing."""
    groups: dict[tuple, dict] = {}
    for i, (rels, dirs) in todo.items():
        if hop < len(rels) and paths[i]:
            shared = (jobs[i][0], tuple(rels[:hop]), tuple(dirs[:hop]))
            group = groups.setdefault(shared, {"paths": paths[i], "relations": [], "jobs": []})
            group["jobs"].append({"key": i, "relation": rels[hop], "direction": dirs[hop]})
            if rels[hop] not in group["relations"]:
                group["relations"].append(rels[hop])
    return groups


def why_empty(graph: Graph, topic_id: str, relations: list[str]) -> InputError | None:
    """The error an empty grounding deserves (an unknown relation or topic), None when the path is
    merely absent from this topic."""
    try:
        _explain_empty(graph, topic_id, relations)
    except InputError as exc:
        return exc
    return None


def unknown_relations(graph: Graph, relations: list[str]) -> list[str]:
    """The names among `relations` that are not relationship types of the graph (`relation_path_check`)."""
    if not relations:
        return []
    row = graph.single("relation_path_check", topic="", relations=list(dict.fromkeys(relations))) or {}
    return list(row.get("unknown_relations") or [])


class UnknownRelationError(InputError):
    """A relation path names a relationship type the graph does not have."""


class UnknownTopicError(InputError):
    """A relation path starts at an id that is not an entity of the graph."""


def _explain_empty(graph: Graph, topic_id: str, relations: list[str]) -> None:
    row = graph.single("relation_path_check", topic=topic_id, relations=list(relations)) or {}
    if row.get("unknown_relations"):
        names = ", ".join(repr(r) for r in row["unknown_relations"])
        raise UnknownRelationError(
            f"the relation path {' -> '.join(relations)} names {names}, not a relation of this graph", path="relations"
        )
    if not row.get("topic_known", True):
        raise UnknownTopicError(
            f"{topic_id!r} is not an entity of this graph, so no relation path starts there", path="topic"
        )


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


def beam_step(
    graph: Graph,
    prefixes: list[tuple[list[str], str | None, int]],
    cap: int = 200,
    limit: int = 1000,
    step_scan: int | None = RRP_STEP_SCAN,
) -> list[tuple[list[str], list[tuple[str, int]]]]:
    """For each (parent entities, relation, direction) of a planner beam, in one query: the distinct
    entities that step reaches (≤ cap; relation None = the parent entities themselves) and the
    (relation, direction) pairs leaving them (`relations_around`), for a whole beam at once. A step
    with more than `step_scan` relationships from one entity is read as a sample of its ends."""
    check_step_scan(step_scan)
    rows = graph.run(
        "beam_step",
        prefixes=[
            {"key": i, "ids": list(ids), "relation": rel, "direction": d} for i, (ids, rel, d) in enumerate(prefixes)
        ],
        cap=cap,
        limit=limit,
        scan=step_scan,
    )
    out: list[tuple[list[str], list[tuple[str, int]]]] = [([], []) for _ in prefixes]
    for r in rows:
        out[int(r["key"])] = (list(r["ids"]), [(rel, int(d)) for rel, d in r["steps"]])
    return out


def relations_around(graph: Graph, entity_ids: list[str], limit: int = 1000) -> list[tuple[str, int]]:
    """(relation, direction) pairs at these entities: +1 when the entity is the head."""
    rows = graph.run("relations_around", ids=list(entity_ids), limit=limit)
    return [(r["relation"], int(r["direction"])) for r in rows]


class EntityName(NamedTuple):
    name: str  # readable name (the id where the entity has none)
    cvt: bool  # an unnamed compound-value node
    idx: int  # row of the entity in the graph's vector table (-1: none)


def entity_names(graph: Graph, entity_ids: list[str]) -> dict[str, EntityName]:
    """id -> (readable name, is CVT, vector-table row) for the given entities."""
    rows = graph.run("entity_names", ids=list(dict.fromkeys(entity_ids)))
    return {r["id"]: EntityName(r["name"], bool(r["cvt"]), -1 if r["idx"] is None else int(r["idx"])) for r in rows}
