"""Every relation path around a question's topic entities, enumerated in the database: the candidates
the RRP path ranker (`kgdb.rrp.models.path_ranker`) scores, so that a reachable right path is always
among them instead of depending on a decoder's beam.

Paths of 1 and 2 hops from each topic, and 3-hop paths whose second hop lands on a CVT node (a
compound value: "topic -> position held -> office holder" style facts). One `relation_steps.cypher`
query per hop for all prefixes of all topics. Reach is set-based (as the planner's labels and
`beam_step.cypher`): a path reaches the distinct entities at the end of any walk that follows its
steps; each hop continues from the first `cap` of them in id order. Beyond the topics' own hop two
bounds keep dense graphs cheap: hubs within a scan budget (`bound_hubs`) and, given a score, only the
best-scored relation paths are continued (`best_prefixes`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import chain
from typing import Callable

from kgdb.cypher import Graph
from kgdb.errors import InputError
from kgdb.limits import RRP_STEP_SCAN

Step = tuple[str, int]  # (relation, +1 head -> tail | -1 against)


@dataclass
class RelationPathCandidate:
    """One relation path the ranker may choose and what it reaches from the topics (a union over the
    topics it leaves)."""

    steps: tuple[Step, ...]
    ends: set[str] = field(default_factory=set)  # reached entity ids (each topic's first `cap`)
    cvt: set[str] = field(default_factory=set)  # the CVT nodes among `ends`
    reached: int = 0  # entities reached before the cap, summed over the topics
    topics: set[str] = field(default_factory=set)  # the topics it grounds from


def relation_steps(
    graph: Graph, entity_sets: list[list[str]], cap: int = 200, scan: int | None = RRP_STEP_SCAN
) -> list[list[tuple[str, int, int, list[str], list[str]]]]:
    """Per entity set (a prefix's end entities): every (relation, direction, entities reached, first
    `cap` ids, the CVT ids among them) step leaving those entities, sorted by (relation, direction).
    A step with more than `scan` relationships from one entity (None: no bound) is read as a sample
    of its ends, and reaches as many as it has relationships (`relation_steps.cypher`)."""
    # Prefixes often share their entity set (a relation and its Freebase inverse reach the same
    # entities), so each distinct set is expanded once: on dense graphs most of the time is here.
    distinct: dict[frozenset[str], int] = {}
    keys = [distinct.setdefault(frozenset(ids), len(distinct)) for ids in entity_sets]
    steps: list[list[tuple[str, int, int, list[str], list[str]]]] = [[] for _ in distinct]
    if distinct:
        # One record per prefix and _raw (no per-element `data()` pass): on dense graphs a prefix has
        # hundreds of steps, and the driver's per-record cost dominated (50M-triple synthetic graph:
        # 29 -> 21 ms per call with records per prefix instead of per step)
        rows = graph.run(
            "relation_steps",
            _raw=True,
            prefixes=[{"key": k, "ids": sorted(ids)} for ids, k in distinct.items()],
            cap=cap,
            scan=scan,
        )
        for r in rows:
            sampled: Counter[tuple[str, int]] = Counter()  # (relation, direction) -> relationships of its sampled steps
            for b in chain.from_iterable(r["sampled"]):
                sampled[b["relation"], int(b["direction"])] += int(b["n"])
            steps[int(r["key"])] = [
                (
                    s["relation"],
                    int(s["direction"]),
                    max(int(s["reached"]), sampled[s["relation"], int(s["direction"])]),
                    s["ids"],
                    s["cvt"],
                )
                for s in r["steps"]
            ]
    return [steps[k] for k in keys]


def check_step_scan(step_scan: int | None) -> None:
    """Refuse a negative bound on the relationships of one step read whole (`KGDB_RRP_STEP_SCAN`)."""
    if step_scan is not None and step_scan < 0:
        raise InputError(
            f"relationships of one step read whole must be 0 or more, got {step_scan}", path="KGDB_RRP_STEP_SCAN"
        )


def bound_hubs(graph: Graph, entity_sets: list[list[str]], cap: int, hub_scan: int) -> list[list[str]]:
    """`entity_sets` without the hubs (entities with more than `cap` relationships) that do not fit the
    scan budget: hubs are kept fewest relationships first (then by id) while their degrees sum to at
    most `hub_scan`; the others are not expanded. Keeping `cap` of a hub's neighbours means scanning
    all of them; on the distractor graph the bound left every val answer as it was (docs/rrp.md, "RRP on
    any graph")."""
    ids = sorted({i for p in entity_sets for i in p})
    if not ids:
        return entity_sets
    hubs = sorted((int(r["degree"]), r["id"]) for r in graph.run("entity_degrees", ids=ids) if int(r["degree"]) > cap)
    skipped, spent = set(), 0
    for degree, entity in hubs:
        if spent + degree <= hub_scan:
            spent += degree
        else:
            skipped.add(entity)
    return [[i for i in p if i not in skipped] for p in entity_sets] if skipped else entity_sets


def best_prefixes(frontier: list, budget: int, score: Callable[[tuple[Step, ...]], float]) -> list:
    """The `frontier` entries (topic, steps, entities) of its `budget` best-scored relation paths
    (ties: by steps, so the choice is deterministic); all of them when there are no more paths than that."""
    paths = sorted({steps for _, steps, _ in frontier}, key=lambda p: (-score(p), p))
    if len(paths) <= budget:
        return frontier
    keep = set(paths[:budget])
    return [f for f in frontier if f[1] in keep]


def candidate_hops(graph: Graph) -> tuple[int, int]:
    """(max_hops, cvt_hops) of the candidates on this graph: 2 plain hops and a third through a CVT
    node where the graph has CVT nodes (Freebase's n-ary facts), else 3 plain hops."""
    rows = graph.run("graph_has_cvt")
    return (2, 3) if rows and rows[0]["has_cvt"] else (3, 3)


def relation_paths_around(
    graph: Graph,
    topics: list[str],
    *,
    max_hops: int = 2,
    cvt_hops: int = 3,
    cap: int = 200,
    hub_scan: int | None = None,
    prefixes: int | None = None,
    prefix_score: Callable[[tuple[Step, ...]], float] | None = None,
    step_scan: int | None = RRP_STEP_SCAN,
) -> list[RelationPathCandidate]:
    """Every relation path of 1..`max_hops` steps from any of `topics`, plus those of up to
    `cvt_hops` steps continued only from the CVT nodes the previous hop reached; sorted by (length,
    steps). A topic that is not in the graph contributes nothing. `hub_scan`: beyond the first hop,
    at most this many relationships of hubs are scanned per hop (`bound_hubs`); None: no bound.
    `prefixes`: at most this many relation paths are continued per hop, the best by `prefix_score`
    (`best_prefixes`); None: all. Every path is still a candidate; only its continuations are not
    enumerated. `step_scan`: a step with more relationships from one entity is read as a sample of its
    ends (`relation_steps`); None: every step whole."""
    _check_bounds(max_hops, cvt_hops, prefixes, prefix_score, step_scan)
    topics = list(dict.fromkeys(t for t in topics if t))
    found: dict[tuple[Step, ...], RelationPathCandidate] = {}
    # frontier: (topic, steps so far, entities to continue from)
    frontier: list[tuple[str, tuple[Step, ...], list[str]]] = [(t, (), [t]) for t in topics]
    for hop in range(1, cvt_hops + 1):
        if not frontier:
            break
        if prefixes is not None and prefix_score is not None and hop > 1:  # _check_bounds: one needs the other
            frontier = best_prefixes(frontier, prefixes, prefix_score)
        entity_sets = [ids for _, _, ids in frontier]
        if hub_scan is not None and hop > 1:
            entity_sets = bound_hubs(graph, entity_sets, cap, hub_scan)
        # beyond the topics, bound_hubs has dropped every entity with more than hub_scan relationships
        scan = step_scan if hop == 1 or hub_scan is None or step_scan is None or hub_scan > step_scan else None
        steps = relation_steps(graph, entity_sets, cap, scan)
        frontier = _extend(
            found,
            frontier,
            steps,
            go_on=(lambda ids, cvt: ids) if hop < max_hops else (lambda ids, cvt: cvt),
            last=hop == cvt_hops,
        )
    return sorted(found.values(), key=lambda c: (len(c.steps), c.steps))


def _check_bounds(max_hops: int, cvt_hops: int, prefixes: int | None, prefix_score, step_scan: int | None) -> None:
    if max_hops < 1 or cvt_hops < max_hops:
        raise InputError(
            f"need 1 <= max_hops <= cvt_hops, got max_hops={max_hops}, cvt_hops={cvt_hops}", path="max_hops"
        )
    if prefixes is not None and prefixes < 1:
        raise InputError(
            f"relation paths continued per hop must be 1 or more, got {prefixes}", path="KGDB_RRP_PREFIXES"
        )
    check_step_scan(step_scan)
    if prefixes is not None and prefix_score is None:
        raise InputError("the prefix bound needs a score to choose the paths it continues", path="prefix_score")


def _extend(
    found: dict, frontier: list, steps: list, *, go_on: Callable[[list[str], list[str]], list[str]], last: bool
) -> list:
    """Record one hop's steps in `found` (one candidate per relation path) and return the next frontier:
    the entities each new path continues from (`go_on`: all it reached, or past max_hops only its CVT
    nodes), none after the `last` hop."""
    nxt = []
    for (topic, prefix, _), rows in zip(frontier, steps):
        for relation, direction, reached, ids, cvt in rows:
            path = prefix + ((relation, direction),)
            c = found.setdefault(path, RelationPathCandidate(path))
            c.ends.update(ids)
            c.cvt.update(cvt)
            c.reached += reached
            c.topics.add(topic)
            if not last and (more := go_on(ids, cvt)):
                nxt.append((topic, path, more))
    return nxt
