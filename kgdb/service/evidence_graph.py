"""The answers' evidence of one ask as a small graph (nodes with a role, edges with a relation), for
clients that draw it.

An answer's evidence lines are what `kgdb ask` prints: triples `(head,relation,tail)` and evidence
chains `a → [r] → b → [r2] → c` (entities merged by `; `), written with entity names. Names are read
back against the names the answer already knows (topics, answers, the retrieved triples' entities),
so a name holding a comma or an arrow still splits where it should, and turned into ids: topics and
answers carry theirs, the other names are resolved in the graph (by `resolve_names`).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Literal

from kgdb.service.schemas import EvidenceGraph, GraphEdge, GraphNode

ARROW = " → "
_RELATION = re.compile(r"^\[(?P<rel>.+)\]( \(reversed\))?$")
_CHAIN_PREFIX = re.compile(r"^Chain \d+\. ")

Step = tuple[str, str, str]  # (head name, relation, tail name)
Role = Literal["topic", "answer", "other"]


def triple_line(line: str, known: set[str]) -> Step | None:
    """`(h,r,t)` split where both ends are known names, else at its first and last comma."""
    if not (line.startswith("(") and line.endswith(")")) or line.count(",") < 2:
        return None
    inner = line[1:-1]
    commas = [i for i, c in enumerate(inner) if c == ","]
    for a in commas:
        head = inner[:a]
        if head not in known:
            continue
        for b in reversed(commas):
            if b > a + 1 and inner[b + 1 :] in known:
                return head, inner[a + 1 : b], inner[b + 1 :]
    return inner[: commas[0]], inner[commas[0] + 1 : commas[-1]], inner[commas[-1] + 1 :]


def _entities(text: str, known: set[str]) -> list[str]:
    """A chain position: one name, or several merged by `; ` when each of them is a known name."""
    parts = text.split("; ")
    return parts if len(parts) > 1 and all(p in known for p in parts) else [text]


def chain_line(line: str, known: set[str]) -> list[Step]:
    """The steps of `a → [r] → b → ...`: every entity of one position linked to every one of the next."""
    tokens = _CHAIN_PREFIX.sub("", line).split(ARROW)
    positions: list[str] = []
    relations: list[str] = []
    current: list[str] = []
    for token in tokens:
        m = _RELATION.match(token)
        if m and current:
            positions.append(ARROW.join(current))
            relations.append(m.group("rel"))
            current = []
        else:
            current.append(token)  # a name holding an arrow: its parts are joined back
    if not current or not relations:
        return []
    positions.append(ARROW.join(current))
    steps = []
    for rel, left, right in zip(relations, positions, positions[1:]):
        for h in _entities(left, known):
            for t in _entities(right, known):
                steps.append((h, rel, t))
    return steps


def evidence_steps(lines: Iterable[str], known: set[str]) -> list[Step]:
    steps: list[Step] = []
    for line in lines:
        one = triple_line(line, known)
        steps.extend([one] if one is not None else chain_line(line, known))
    return steps


def evidence_graph(result: Any, resolve_names: Callable[[list[str]], dict[str, str]]) -> EvidenceGraph:
    """The graph of `result`'s (an `AskResult`) answers' evidence; `resolve_names(names)` gives the
    entity id of each name it finds in the graph."""
    ids: dict[str, str] = dict(zip(result.topic_names, result.topics))
    answers = {a.entity_id for a in result.answers if a.entity_id}
    ids.update({a.answer: a.entity_id for a in result.answers if a.entity_id})
    known = set(ids) | set(result.evidence_entities)
    steps = evidence_steps((line for a in result.answers for line in a.evidence), known)
    unknown = sorted({n for h, _, t in steps for n in (h, t)} - set(ids))
    if unknown:
        ids.update(resolve_names(unknown))
    topics = set(result.topics)
    nodes: dict[str, GraphNode] = {}

    def node(name: str) -> str:
        key = ids.get(name, name)
        if key not in nodes:
            role: Role = "topic" if key in topics else "answer" if key in answers else "other"
            nodes[key] = GraphNode(id=key, name=name, role=role)
        return key

    for name in result.topic_names:
        node(name)
    edges = list(dict.fromkeys((node(h), node(t), r) for h, r, t in steps))
    for a in result.answers:
        if a.entity_id:
            node(a.answer)
    return EvidenceGraph(
        nodes=list(nodes.values()), edges=[GraphEdge(source=s, target=t, relation=r) for s, t, r in edges]
    )
