"""Questions that name several topic entities: every topic's relation paths grounded in one query and joined on
the answer (topic_intersection.cypher), candidates reached by more topics first; and the joint paths written
back as a retrieval run (topic_intersection_write.cypher) so Browser shows why (browser/joint_paths.cypher).

About 40 % of ComplexWebQuestions name two or three topics ("the country that borders X and uses the euro");
a plan that starts from one chosen topic answers the core question and ignores the rest. The planner decides
which relation paths to try from each topic; this module only grounds and joins them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kgdb.cypher import Graph
from kgdb.errors import InputError, KgdbError

MAX_HOPS = 3  # the query has one branch per path length
DIRECTIONS = (-1, 0, 1)


@dataclass(frozen=True)
class TopicPaths:
    """The relation paths to ground from one topic entity: each a tuple of relation names with one
    direction per relation (1 head -> tail, -1 against, 0 either way)."""

    topic: str
    paths: tuple[tuple[tuple[str, ...], tuple[int, ...]], ...]


@dataclass(frozen=True)
class JointPath:
    """One grounded path from `topic` to a candidate answer: its entity ids and its triples as
    (elementId, head id, relation, tail id)."""

    topic: str
    relations: tuple[str, ...]
    directions: tuple[int, ...]
    nodes: tuple[str, ...]
    triples: tuple[tuple[str, str, str, str], ...]


@dataclass(frozen=True)
class JointCandidate:
    """A candidate answer, the topics whose paths reach it and those paths."""

    answer: str
    topics: tuple[str, ...]
    paths: tuple[JointPath, ...]

    @property
    def reached(self) -> int:
        return len(self.topics)


def _check(plans: Sequence[TopicPaths]) -> list[dict]:
    """The query's `$plans`, refusing what it cannot ground with a one-line reason; a topic given twice
    is one topic with the union of its paths (the count of topics reaching an answer stays honest)."""
    merged: dict[str, list[dict]] = {}
    for i, plan in enumerate(plans):
        if not isinstance(plan.topic, str) or not plan.topic:
            raise InputError(f"topic {i} is empty: give an entity id", path=f"plans[{i}].topic")
        seen = merged.setdefault(plan.topic, [])
        for j, (relations, directions) in enumerate(plan.paths):
            where = f"plans[{i}].paths[{j}]"
            if not 1 <= len(relations) <= MAX_HOPS:
                raise InputError(f"a relation path has 1 to {MAX_HOPS} relations, got {len(relations)}", path=where)
            if len(directions) != len(relations):
                raise InputError(f"{len(relations)} relation(s) but {len(directions)} direction(s)", path=where)
            if any(d not in DIRECTIONS for d in directions):
                raise InputError(f"directions are -1, 0 or 1, got {list(directions)}", path=where)
            if any(not isinstance(r, str) or not r for r in relations):
                raise InputError("a relation name is empty", path=where)
            job = {"relations": list(relations), "directions": [int(d) for d in directions]}
            if job not in seen:
                seen.append(job)
    return [{"topic": topic, "paths": paths} for topic, paths in merged.items() if paths]


def ground_jointly(
    graph: Graph, plans: Sequence[TopicPaths], *, cap: int = 200, per_end: int = 3, limit: int = 100
) -> list[JointCandidate]:
    """Candidate answers of `plans`, those reached by the most topics first (then by id), each with the
    paths that reach it from every topic (at most `per_end` per topic). A topic is never a candidate."""
    for value, name in ((cap, "cap"), (per_end, "per_end"), (limit, "limit")):
        if value < 1:
            raise InputError(f"must be positive, got {value}", path=name)
    params = _check(plans)
    if not params:
        return []
    return _joint_candidates(
        graph.run("topic_intersection", plans=params, cap=int(cap), per_end=int(per_end), limit=int(limit))
    )


def write_joint_paths(
    graph: Graph,
    question: str,
    candidates: Sequence[JointCandidate],
    topics: Sequence[str],
    *,
    qid: str | None = None,
    run: str | None = None,
    top: int = 10,
    retriever: str = "topic-intersection",
) -> str:
    """Write the joint paths of the first `top` candidates as retrieval run `run` (a new id if None): one
    SCORED edge per triple of each path, carrying the candidate's rank, the topic, the hop and the share
    of `topics` reaching the candidate (score). Returns the run id; refuses a stale result (a triple no
    longer in the graph)."""
    from kgdb.cypher.writeback import new_run_id

    run = run or new_run_id(retriever, qid)
    total = max(len(set(topics)), 1)
    rows = [
        {
            "eid": eid,
            "h": h,
            "rel": rel,
            "t": t,
            "score": c.reached / total,
            "rank": rank,
            "answer": c.answer,
            "topic": p.topic,
            "hop": hop,
            "reached": c.reached,
        }
        for rank, c in enumerate(candidates[:top], start=1)
        for p in c.paths
        for hop, (eid, h, rel, t) in enumerate(p.triples, start=1)
    ]
    row = graph.single(
        "topic_intersection_write",
        run=run,
        qid=qid,
        question=question,
        retriever=retriever,
        topics=list(dict.fromkeys(topics)),
        rows=rows,
    )
    if row is None or row["written"] != len(rows):
        written = 0 if row is None else row["written"]
        raise KgdbError(
            f"run {run}: wrote {written} of {len(rows)} joint-path triples; the graph changed since they were grounded: ground them again"
        )
    return run


def topics_next_to(
    graph: Graph, candidates: Sequence[str], topics: Sequence[str], *, per_end: int = 3
) -> list[JointCandidate]:
    """The `candidates` joined to some of `topics` by one relationship, or by two through a CVT node
    (topic_neighbours.cypher), by id, each with the topics next to it and the paths that join them (at
    most `per_end` per topic, directions read from the topic). A topic is never a candidate."""
    if per_end < 1:
        raise InputError(f"must be positive, got {per_end}", path="per_end")
    candidates, topics = list(dict.fromkeys(candidates)), list(dict.fromkeys(topics))
    if not candidates or not topics:
        return []
    return _joint_candidates(graph.run("topic_neighbours", candidates=candidates, topics=topics, per_end=int(per_end)))


def _joint_candidates(rows: list[dict]) -> list[JointCandidate]:
    """Candidates of rows {answer, reached: [{topic, paths: [{relations, directions, nodes, triples}]}]}."""
    return [
        JointCandidate(
            row["answer"],
            tuple(r["topic"] for r in row["reached"]),
            tuple(
                JointPath(
                    r["topic"],
                    tuple(p["relations"]),
                    tuple(p["directions"]),
                    tuple(p["nodes"]),
                    tuple(tuple(t) for t in p["triples"]),
                )
                for r in row["reached"]
                for p in r["paths"]
            ),
        )
        for row in rows
    ]
