"""LLM-refined supervision, the pure half (numpy, no database, no LLM): candidate pools, their text,
reply parsing, and turning stored label paths back into a training item's triple mask.

Two methods, both "stage 1 heuristic candidates, stage 2 an LLM selects":
- `rapl` (RAPL §2, Fig. 26): simple directed paths topic ↔ answer of length d_min..d_min+2
  (`kgdb.data.labels.candidate_paths`: both directions, parallel edges kept), shortest first,
  at most `RAPL_MAX_CANDIDATES` per question.
- `reg` (ReG §2, S(I)): shortest topic ↔ answer paths plus one-hop neighbourhoods of the topics and
  of one representative answer, compressed: paths with the same relation chain are one candidate
  (its members to every answer become labels when it is chosen), one-hop triples are grouped by
  (entity, relation, direction) and at most `REG_NEIGHBOUR_GROUPS` groups are kept per entity;
  at most `REG_MAX_CANDIDATES` candidates per question.

A candidate's `paths` are tuples of triple indices into the fetched subgraph, in traversal order
from the topic (or from the representative answer for answer neighbourhoods).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from kgdb.data.labels import candidate_paths
from kgdb.subgraph import Subgraph

METHODS = ("rapl", "reg")
RAPL_SLACK = 2  # d_min .. d_min + 2 (RAPL Algorithm 1)
RAPL_PAIR_CAP = 20  # paths kept per (topic, answer) pair before the per-question cap
RAPL_MAX_CANDIDATES = 40  # per question: what one prompt shows (the paper sets no cap)
REG_MAX_CANDIDATES = 40
REG_NEIGHBOUR_GROUPS = 8  # one-hop (relation, direction) groups kept per topic / representative answer
MAX_MEMBERS = 20  # member paths stored per selected (merged) candidate


@dataclass
class Candidate:
    """One numbered line of the prompt: a path, or a merged group of paths with one relation chain."""

    kind: str  # "path" (topic ↔ answer), "topic" or "answer" (one-hop neighbourhood)
    paths: list[tuple[int, ...]]  # member paths, triple indices in traversal order
    starts: list[int] = field(default_factory=list)  # local start node of each member


@dataclass
class CandidatePool:
    method: str
    candidates: list[Candidate]
    raw: int  # candidates before compression and capping
    answer_names: list[str]


def walk(sg: Subgraph, start: int, path: tuple[int, ...]) -> tuple[list[int], list[tuple[int, int]]]:
    """Nodes visited and (relation idx, +1 along / -1 against the edge) per step, from `start`."""
    nodes, steps = [start], []
    for i in path:
        h, t = int(sg.head[i]), int(sg.tail[i])
        if h == nodes[-1]:
            nodes.append(t)
            steps.append((int(sg.relation[i]), 1))
        else:
            nodes.append(h)
            steps.append((int(sg.relation[i]), -1))
    return nodes, steps


def _local(sg: Subgraph, ids: list[str]) -> list[int]:
    position = {e: i for i, e in enumerate(sg.entity_ids)}
    return [position[i] for i in dict.fromkeys(ids) if i in position]


def _from_topic(sg: Subgraph, c) -> tuple[int, tuple[int, ...]]:
    """A stage-1 path as (start, triples) read from its topic: backward paths are reversed."""
    return (c.topic, c.triples) if c.direction == "forward" else (c.topic, tuple(reversed(c.triples)))


def rapl_pool(sg: Subgraph, answer_ids: list[str], max_candidates: int = RAPL_MAX_CANDIDATES) -> CandidatePool:
    found = candidate_paths(sg, answer_ids, slack=RAPL_SLACK, cap=RAPL_PAIR_CAP)
    seen, out = set(), []
    for c in sorted(found, key=lambda c: len(c.triples)):  # stable: shortest first, then pair order
        start, triples = _from_topic(sg, c)
        if (start, triples) in seen:
            continue
        seen.add((start, triples))
        out.append(Candidate("path", [triples], [start]))
    return CandidatePool("rapl", out[:max_candidates], len(found), [sg.entity_names[a] for a in _local(sg, answer_ids)])


def reg_pool(
    sg: Subgraph,
    answer_ids: list[str],
    max_candidates: int = REG_MAX_CANDIDATES,
    neighbour_groups: int = REG_NEIGHBOUR_GROUPS,
) -> CandidatePool:
    answers = [a for a in _local(sg, answer_ids)]
    shortest = candidate_paths(sg, answer_ids, slack=0, cap=RAPL_PAIR_CAP)
    reached = {c.answer for c in shortest}
    # Answer merging: one representative answer (the first gold answer a path reaches) for the
    # answer-side neighbourhood; relation-chain merging below folds the other answers' paths in.
    rep = next((a for a in answers if a in reached), answers[0] if answers else None)
    groups: dict[tuple, Candidate] = {}
    raw = 0
    for c in shortest:
        start, triples = _from_topic(sg, c)
        _, steps = walk(sg, start, triples)
        key = ("path", start, tuple(steps))
        cand = groups.setdefault(key, Candidate("path", [], []))
        if (start, triples) not in zip(cand.starts, cand.paths):
            cand.paths.append(triples)
            cand.starts.append(start)
            raw += 1
    # The representative answer's path first in each group: it is the one shown.
    for cand in groups.values():
        order = sorted(range(len(cand.paths)), key=lambda j: walk(sg, cand.starts[j], cand.paths[j])[0][-1] != rep)
        cand.paths = [cand.paths[j] for j in order]
        cand.starts = [cand.starts[j] for j in order]
    out = list(groups.values())
    centres = [("topic", int(t)) for t in sg.topic.tolist()] + ([("answer", rep)] if rep is not None else [])
    for kind, node in centres:
        hood = np.flatnonzero((sg.head == node) | (sg.tail == node))
        raw += len(hood)
        keyed: dict[tuple[int, int], list[int]] = {}
        for i in hood.tolist():
            keyed.setdefault((int(sg.relation[i]), 1 if int(sg.head[i]) == node else -1), []).append(i)
        # The most populated relations first (then relation idx): a bounded, deterministic choice.
        ranked = sorted(keyed.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:neighbour_groups]
        for _, members in ranked:
            out.append(Candidate(kind, [(i,) for i in members], [node] * len(members)))
    return CandidatePool("reg", out[:max_candidates], raw, [sg.entity_names[a] for a in answers])


def build_pool(method: str, sg: Subgraph, answer_ids: list[str]) -> CandidatePool:
    if method == "rapl":
        return rapl_pool(sg, answer_ids)
    if method == "reg":
        return reg_pool(sg, answer_ids)
    raise ValueError(f"unknown label method {method!r}; choose one of {', '.join(METHODS)}")


def render_path(sg: Subgraph, start: int, triples: tuple[int, ...]) -> str:
    """`a → r → b` read from `start`; a step against the edge direction is written `b ← r ← a`."""
    nodes, steps = walk(sg, start, triples)
    out = [sg.entity_names[nodes[0]]]
    for (_, sign), i, node in zip(steps, triples, nodes[1:]):
        arrow = "→" if sign > 0 else "←"
        out += [arrow, sg.relation_names[i], arrow, sg.entity_names[node]]
    return " ".join(out)


def render_candidate(sg: Subgraph, cand: Candidate) -> str:
    text = render_path(sg, cand.starts[0], cand.paths[0])
    more = len(cand.paths) - 1
    if more:
        what = "paths with the same relations" if cand.kind == "path" else "triples with the same relation"
        text += f" (+{more} more {what})"
    return text


def numbered_lines(sg: Subgraph, pool: CandidatePool) -> list[str]:
    return [f"Path {n}. {render_candidate(sg, c)}" for n, c in enumerate(pool.candidates, 1)]


# --- reply parsing -------------------------------------------------------------------------

# Shared with relation targeting (`kgdb.data.label_relations`): one reply grammar for every label method.
ANS_LINE = re.compile(r"^\s*(?:[-*•]\s*)?\**ans\**\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)
_PATH_REF = re.compile(r"\bpath\s*#?\s*(\d+)", re.IGNORECASE)
_BARE = re.compile(r"^\s*#?(\d+)\s*[.)]?\s*$")
NONE_REPLY = re.compile(
    r"^\s*(none|no (rational |relevant |likely |possible )?(paths?|relations?)|not available|n/a)\b", re.IGNORECASE
)


@dataclass
class Selection:
    """What a reply selected. `status`: "ok" (at least one valid path), "none" (the reply says no
    candidate fits), "malformed" (no usable `ans:` line)."""

    status: str
    indices: list[int]  # 0-based candidate indices, in reply order, unique
    ignored: list[str]  # `ans:` lines that named no valid candidate (out of range, unreadable)

    @classmethod
    def of(cls, indices: list[int], ignored: list[str], said_none: bool) -> Selection:
        """What a reply's `ans:` lines gave: the candidates they named, else whether one said none."""
        if indices:
            return cls("ok", indices, ignored)
        return cls("none" if said_none else "malformed", [], ignored)


def parse_selection(reply: str, n_candidates: int) -> Selection:
    """Parse `ans: Path N` lines (several `Path N` on one line allowed, a bare `ans: N` too).

    A partial reply (cut off, or with some lines out of range) keeps its valid lines; a reply with
    no usable line is malformed, however much prose it has.
    """
    indices: list[int] = []
    ignored: list[str] = []
    said_none = False
    for m in ANS_LINE.finditer(reply or ""):
        body = m.group(1).strip()
        refs = [int(x) for x in _PATH_REF.findall(body)]
        if not refs and (bare := _BARE.match(body)):
            refs = [int(bare.group(1))]
        if not refs:
            if NONE_REPLY.match(body):
                said_none = True
            else:
                ignored.append(body[:80])
            continue
        for r in refs:
            if 1 <= r <= n_candidates:
                if r - 1 not in indices:
                    indices.append(r - 1)
            else:
                ignored.append(f"Path {r} (only {n_candidates} candidates)")
    return Selection.of(indices, ignored, said_none)


# --- stored label paths back onto a cached training item ------------------------------------


def mask_from_paths(
    entity_idx: np.ndarray,
    head: np.ndarray,
    relation: np.ndarray,
    tail: np.ndarray,
    paths: list[list[tuple[int, int, int]]],
) -> tuple[np.ndarray, int]:
    """Triples of a cached subgraph that lie on the given paths (each a list of (head Entity.idx,
    Relation.idx, tail Entity.idx)). A path with a triple missing from the subgraph (fetched with
    other settings) is skipped whole. Returns (mask, number of paths found complete)."""
    local = {int(g): i for i, g in enumerate(entity_idx.tolist())}
    index: dict[tuple[int, int, int], list[int]] = {}
    for i, key in enumerate(zip(head.tolist(), relation.tolist(), tail.tolist())):
        index.setdefault(key, []).append(i)
    mask = np.zeros(head.shape[0], dtype=bool)
    complete = 0
    for path in paths:
        hits: list[int] = []
        for h, r, t in path:
            key = (local.get(h, -1), r, local.get(t, -1))
            if key not in index:
                hits = []
                break
            hits += index[key]
        if hits:
            mask[hits] = True
            complete += 1
    return mask, complete
