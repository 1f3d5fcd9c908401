"""Questions that name several topic entities ("the country that borders France and uses the euro"):
each topic's best answer-bearing relation paths, planned from that topic alone, are grounded in one
query and joined on the entity they end at (`kgdb.cypher.topic_intersection`). The candidates reached
by the most topics (two or more) answer the question, strongest first: a candidate's strength is the
sum over topics of the score of the best path that reaches it from that topic.

Without it a plan answers the core question from whichever topic scores best and ignores the rest
(ComplexWebQuestions val, shipped portable ranker: Hit@1 26.79 with one joint plan, 37.14 with the
joint reading; docs/experiments/2026-11-28-several-topics.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from kgdb.cypher import Graph
from kgdb.cypher.topic_intersection import MAX_HOPS, JointCandidate, TopicPaths, ground_jointly
from kgdb.pipeline.answering_rules import Gathered, GroundedPath
from kgdb.pipeline.planners import walk
from kgdb.protocol import ScoredPath

SOURCE = "joint-topics"

PathKey = tuple[str, tuple[str, ...], tuple[int, ...]]  # topic, relations, directions


def topic_paths(topic: str, g: Gathered, n: int) -> tuple[TopicPaths, dict[PathKey, float]]:
    """The `n` best-scored relation paths of at most MAX_HOPS relations that `g` (gathered from `topic`
    alone) grounded to an answer (not a CVT node), and their scores."""
    best: dict[tuple[tuple[str, ...], tuple[int, ...]], float] = {}
    for c in g.planned:
        # a composed reading may be longer than the joint query grounds: it answers from its topic alone
        if len(c.path.relations) > MAX_HOPS:
            continue
        if c.path.entities and c.path.entities[0] == topic and c.path.answer not in g.cvt:
            key = (tuple(c.path.relations), tuple(c.path.directions))
            best[key] = max(best.get(key, 0.0), c.path.score)
    kept = sorted(best, key=lambda k: (-best[k], k))[:n]
    return TopicPaths(topic, tuple(kept)), {(topic, *k): best[k] for k in kept}


def joint_answer_paths(graph: Graph, per_topic: Sequence[tuple[str, Gathered]], n: int) -> list[GroundedPath]:
    """The grounded paths of the candidates reached by the most topics (at least two), each scored
    with its candidate's strength; empty when no candidate is reached from two topics."""
    plans, scores, cvt = [], {}, set()
    for topic, g in per_topic:
        plan, s = topic_paths(topic, g, n)
        plans.append(plan)
        scores.update(s)
        cvt |= g.cvt
    found = [c for c in ground_jointly(graph, plans) if c.answer not in cvt] if plans else []
    top = max((c.reached for c in found), default=0)
    if top < 2:
        return []
    out = []
    for c in (c for c in found if c.reached == top):
        strength = _strength(c, scores)
        for p in c.paths:
            nodes, dirs = walk(p.topic, p.triples)
            path = ScoredPath(strength, tuple(nodes), p.relations, tuple(dirs), source=SOURCE)
            out.append(GroundedPath(path, list(p.triples), scores.get((p.topic, p.relations, p.directions), 0.0)))
    return out


def _strength(c: JointCandidate, scores: dict[PathKey, float]) -> float:
    per_topic: dict[str, float] = {}
    for p in c.paths:
        s = scores.get((p.topic, p.relations, p.directions), 0.0)
        per_topic[p.topic] = max(per_topic.get(p.topic, 0.0), s)
    return sum(per_topic.values())
