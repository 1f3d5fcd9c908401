"""RAPL's relation targeting R_* (§3.4, Eq. 8; Algorithm 1 line 5), the pure half (numpy, no
database, no LLM): the candidate relations of a question, their prompt lines, reply parsing, and
the per-triple mask training reads.

Candidates are the relations of the triples incident to the topic entities in the fetched subgraph,
keyed by (relation, direction): direction +1 when the topic is the triple's head (rendered
`→ relation`: topic → relation → other), -1 when it is the tail (`← relation`: other → relation →
topic). The two directions are separate candidates because RAPL's line graph holds every triple in
both directions (`kgdb.models.line_graph.augment`) and its question-triple candidates are the
augmented triples *leaving* a topic: `← r` selects the inverse reading of the triples entering it.
Several topics share one candidate list (R_* is a set per question, applied to every topic).

Order: the most populated (relation, direction) first, then by name; at most
`MAX_RELATION_CANDIDATES` per question (the paper lists all of the entity's relations; a
per-node-capped fetch rarely reaches the cap).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from kgdb.data.label_paths import ANS_LINE, NONE_REPLY, Selection
from kgdb.subgraph import Subgraph

RELATIONS_METHOD = "rapl-relations"
MAX_RELATION_CANDIDATES = 150
FORWARD, INVERSE = 1, -1
ARROWS = {FORWARD: "→", INVERSE: "←"}
_LEADING_ARROW = re.compile(r"^(→|->|-->|←|<-|<--)\s*")
_DECORATION = re.compile(r"\s*\([^)]*\)\s*$")  # "(inverse)", "(topic is the object)" after a name


@dataclass(frozen=True)
class RelationCandidate:
    name: str  # relationship type
    direction: int  # FORWARD: a topic is the head; INVERSE: a topic is the tail
    triples: int  # incident triples with this (relation, direction), for the order only

    @property
    def text(self) -> str:
        return f"{ARROWS[self.direction]} {self.name}"


@dataclass
class RelationPool:
    candidates: list[RelationCandidate]
    raw: int  # distinct (relation, direction) before the cap
    topic_names: list[str]


def relation_pool(sg: Subgraph, max_candidates: int = MAX_RELATION_CANDIDATES) -> RelationPool:
    topics = np.zeros(sg.num_nodes, dtype=bool)
    topics[sg.topic] = True
    counts: dict[tuple[str, int], int] = {}
    for direction, side in ((FORWARD, sg.head), (INVERSE, sg.tail)):
        for i in np.flatnonzero(topics[side]).tolist():
            key = (sg.relation_names[i], direction)
            counts[key] = counts.get(key, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0], -kv[0][1]))
    names = [sg.entity_names[t] for t in dict.fromkeys(sg.topic.tolist())]
    return RelationPool([RelationCandidate(n, d, c) for (n, d), c in ranked[:max_candidates]], len(counts), names)


def relation_lines(pool: RelationPool) -> list[str]:
    return [c.text for c in pool.candidates]


def parse_relations(reply: str, candidates: list[RelationCandidate]) -> Selection:
    """Parse `ans: → relation` lines (several relations on one line separated by `,` or `;` allowed).

    A name written without an arrow selects every direction it is a candidate in; a name (or
    arrow + name) that is not a candidate is ignored and reported in `ignored`. Statuses as for paths:
    "ok" (at least one candidate), "none" (`ans: none`), "malformed" (no usable `ans:` line)."""
    exact: dict[tuple[str, int | None], int] = {(c.name, c.direction): i for i, c in enumerate(candidates)}
    by_name: dict[str, list[int]] = {}
    for i, c in enumerate(candidates):
        by_name.setdefault(c.name, []).append(i)
    indices: list[int] = []
    ignored: list[str] = []
    said_none = False
    for m in ANS_LINE.finditer(reply or ""):
        body = m.group(1).strip()
        if NONE_REPLY.match(body):
            said_none = True
            continue
        for item in re.split(r"[,;]", body):
            item = item.strip().strip("`*\"'").strip()
            if not item:
                continue
            direction = None
            if arrow := _LEADING_ARROW.match(item):
                direction = FORWARD if arrow.group(1) in ("→", "->", "-->") else INVERSE
                item = item[arrow.end() :]
            name = _DECORATION.sub("", item).strip().strip("`*\"'.").strip()
            hits = (
                [exact[(name, direction)]]
                if (name, direction) in exact
                else by_name.get(name, [])
                if direction is None
                else []
            )
            if not hits:
                ignored.append(item[:80])
            for h in hits:
                if h not in indices:
                    indices.append(h)
    return Selection.of(indices, ignored, said_none)


def relation_target_mask(
    head: np.ndarray, relation: np.ndarray, tail: np.ndarray, topic: np.ndarray, targets: list[tuple[int, int]]
) -> np.ndarray:
    """Eq. 8's augmentation on a cached subgraph: uint8 [m], bit 1 set when triple i read forward
    leaves a topic with (relation[i], FORWARD) in R_*, bit 2 when read backwards (its tail is a topic)
    with (relation[i], INVERSE) in R_*. `targets`: (Relation.idx, direction) pairs."""
    mask = np.zeros(head.shape[0], dtype=np.uint8)
    if not len(targets) or not head.shape[0]:
        return mask
    is_topic = np.zeros(int(max(head.max(initial=-1), tail.max(initial=-1), topic.max(initial=-1))) + 1, dtype=bool)
    is_topic[topic] = True
    forward = np.array([r for r, d in targets if d == FORWARD], dtype=np.int64)
    inverse = np.array([r for r, d in targets if d == INVERSE], dtype=np.int64)
    mask[is_topic[head] & np.isin(relation, forward)] |= 1
    mask[is_topic[tail] & np.isin(relation, inverse)] |= 2
    return mask
