"""Questions that name several topic entities ("the country that borders France and uses the euro"):
each topic's best answer-bearing relation paths, planned from that topic alone, are grounded in one
query and joined on the entity they end at (`kgdb.cypher.topic_intersection`). The candidates reached
by the most topics (two or more) answer the question, strongest first: a candidate's strength is the
sum over topics of the score of the best path that reaches it from that topic. Where no candidate is reached
from two topics, the planned answers next to the most of the other topics answer it
(`answers_next_to_topics`).

Without it a plan answers the core question from whichever topic scores best and ignores the rest
(ComplexWebQuestions val, shipped portable ranker: Hit@1 26.79 with one joint plan, 37.14 with the
joint reading; docs/experiments/2026-11-28-several-topics.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from kgdb.cypher import Graph
from kgdb.cypher.topic_intersection import MAX_HOPS, JointCandidate, TopicPaths, ground_jointly, topics_next_to
from kgdb.protocol import ScoredPath
from kgdb.rrp.answering import Gathered, GroundedPath
from kgdb.rrp.planners import walk

SOURCE = "joint-topics"
# the planned answers, best first, whose neighbourhood is read for the other topics (`answers_next_to_topics`)
NEXT_TO_CANDIDATES = 200

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


def answers_next_to_topics(graph: Graph, g: Gathered, topics: Sequence[str]) -> tuple[list[GroundedPath], list[str]]:
    """Where no answer is reached from two `topics` by their planned paths: the planned answers of `g` next
    to the most of the other topics (joined by one relationship, or two through a CVT node:
    `kgdb.cypher.topic_intersection.topics_next_to`), each with its planned paths and the paths that join
    it to those topics, all scored with its best planned score; and the topics they are next to. Nothing
    when no planned answer is next to a topic its best-scored paths do not start from. A topic that only
    types the answer ("the *singer-songwriter* that went out with Tupac Shakur", "JFK's brothers that are
    *lawyers*") is rarely among the paths planned from it with the whole question's words, and is one
    relation away from the answer. Chosen on the ComplexWebQuestions and WebQSP training and val splits
    (docs/experiments/2026-11-29-answers-next-to-the-other-topics.md)."""
    best, starts = _best_planned(g.planned, set(g.found.ids) | g.cvt | set(topics))
    ranked = sorted(best, key=lambda a: (-best[a], a))[:NEXT_TO_CANDIDATES]
    near = {
        c.answer: [p for p in c.paths if p.topic not in starts[c.answer]] for c in topics_next_to(graph, ranked, topics)
    }
    count = {a: len({p.topic for p in paths}) for a, paths in near.items()}
    top = max(count.values(), default=0)
    if top == 0:
        return [], []
    out = []
    for c in g.planned:
        if count.get(c.path.answer) == top:
            score = best[c.path.answer]
            out.append(GroundedPath(replace(c.path, score=score, source=SOURCE), c.triples, c.s1))
    for answer in sorted(a for a, n in count.items() if n == top):
        for p in near[answer]:
            path = ScoredPath(best[answer], p.nodes, p.relations, p.directions, source=SOURCE)
            out.append(GroundedPath(path, list(p.triples), 0.0))
    return out, sorted({p.topic for a, n in count.items() if n == top for p in near[a]})


def _best_planned(planned: list[GroundedPath], excluded: set[str]) -> tuple[dict[str, float], dict[str, set[str]]]:
    """Each planned answer's best score, and the topics its best-scored paths start from."""
    best: dict[str, float] = {}
    starts: dict[str, set[str]] = {}
    for c in planned:
        if c.path.answer in excluded or not c.path.entities:
            continue
        if c.path.score > best.get(c.path.answer, float("-inf")):
            best[c.path.answer], starts[c.path.answer] = c.path.score, set()
        if c.path.score == best[c.path.answer]:
            starts[c.path.answer].add(c.path.entities[0])
    return best, starts


def composed_through(g: Gathered, per_topic: list[tuple[str, Gathered]]) -> tuple[Gathered | None, list[str]]:
    """The one topic's composed reading whose best paths pass through every joint answer of `g` (the joint
    reading then answered its description) and the names of those answers, which leave `g.joint`; else
    (None, [])."""
    answers = {c.path.answer for c in g.joint}
    through = [one for _, one in per_topic if one.composed and answers and answers <= _middle(one)]
    if len(through) != 1:
        return None, []
    g.joint = []
    return through[0], sorted(g.names.get(a, a) for a in answers)


def _middle(g: Gathered) -> set[str]:
    """The entities inside (not at the ends of) the best-scored planned paths of `g`."""
    top = max((c.path.score for c in g.planned), default=None)
    return {e for c in g.planned if c.path.score == top for e in c.path.entities[1:-1]}
