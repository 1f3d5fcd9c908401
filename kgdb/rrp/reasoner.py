"""Answers without an LLM from grounded relation paths. With the planner alone: the end entities of
the best-scored relation path that grounded to something, in the order of how many grounded paths
reach them. With RRP's structural reasoner and rethinking (paths whose source reads `mode:module`):
the end entities of every kept path, best path score first. Ties keep the order of the retriever's
paths (`RelationPathRetriever` puts the ends of one relation path closest to the question first).
Needs a retriever that returns paths (`kgdb.rrp.retriever.RelationPathRetriever`)."""

from __future__ import annotations

import time
from typing import Any

from kgdb.config import Settings
from kgdb.errors import InputError
from kgdb.protocol import relation_path_text
from kgdb.qa.prompts import Prompt
from kgdb.qa.reasoners import ReasonerKind
from kgdb.qa.reasoners.base import Evidence, Reasoner, Reasoning


class PathReasoner:
    name = "rrp"
    uses_llm = False

    def __init__(self, max_answers: int = 50, alternatives: int = 3):
        self.max_answers, self.alternatives = max_answers, alternatives

    def settings(self) -> dict[str, Any]:
        return {"reasoner": self.name, "llm_used": False, "max_answers": self.max_answers}

    def reason(self, prompt: Prompt, evidence: Evidence, names: dict[str, str] | None = None) -> Reasoning:
        t = time.perf_counter()
        usable = _usable(evidence)
        order: dict[
            str, int
        ] = {}  # ties keep the retriever's order (its answers tied on one path: closest to the question first)
        for p in usable:
            order.setdefault(p.answer, len(order))
        if usable and all(":" in p.source for p in usable):
            ranked = _by_best_score(usable, order)[: self.max_answers]
        else:
            ranked = _on_best_path(usable, order)[: self.max_answers]
        answers = [name for name, _ in ranked]
        reply = "ans: " + " | ".join(answers) if answers else "ans: not available"
        return Reasoning(
            answers,
            reply,
            self.name,
            False,
            refused=not answers,
            support={},
            scores=dict(ranked),
            alternatives=other_readings(usable, set(answers), self.alternatives) if answers else [],
            seconds=time.perf_counter() - t,
        )


def _usable(evidence: Evidence) -> list:
    """The evidence's paths that end at an answer (neither a topic nor a CVT node)."""
    if not evidence.paths and not evidence.from_paths:
        raise InputError(
            "the rrp reasoner answers from relation paths: use --retriever relation-paths", path="--reasoner"
        )
    excluded = set(evidence.topics) | set(evidence.cvt)
    return [p for p in evidence.paths if p.answer not in excluded]


def _end_name(p) -> str:
    return (p.names or p.entities)[-1]


def _by_best_score(usable: list, order: dict[str, int]) -> list[tuple[str, float]]:
    """Rethought paths (`kgdb.rrp.retriever`, mode:module): every kept path is an answer
    path; (name, score) of the entities in order of their best path score S."""
    best_of: dict[str, float] = {}
    name_of: dict[str, str] = {}
    for p in usable:
        if p.score > best_of.get(p.answer, float("-inf")):
            best_of[p.answer] = p.score
            name_of[p.answer] = _end_name(p)
    return [(name_of[e], best_of[e]) for e in sorted(best_of, key=lambda e: (-best_of[e], order[e]))]


def _on_best_path(usable: list, order: dict[str, int]) -> list[tuple[str, float]]:
    """The planner alone: (name, score) of the ends of the best-scored paths, the most often reached first."""
    if not usable:
        return []
    best = max(p.score for p in usable)
    counts: dict[str, int] = {}
    name_of: dict[str, str] = {}
    for p in usable:
        if p.score == best:
            counts[p.answer] = counts.get(p.answer, 0) + 1
            name_of[p.answer] = _end_name(p)
    # the retriever's order already puts the most often reached first (`answers_of`), then the answer model's
    return [(name_of[e], best) for e in sorted(counts, key=lambda e: order[e])]


def other_readings(paths: list, answered: set[str], top: int, share: float = 0.1) -> list[dict[str, Any]]:
    """The `top` best-scored relation paths below the answers' score, scoring at least `share` of
    it, that reach something else: how else the ranker read the question, so a user sees when it
    hesitated ("Ulm" at 0.62, the currency of the country of birth at 0.24) and nothing when it did
    not. Rethought paths are all answer paths already."""
    if not paths or all(":" in p.source for p in paths):
        return []
    best = max(p.score for p in paths)
    groups: dict[tuple, dict[str, Any]] = {}
    for p in sorted(paths, key=lambda p: -p.score):
        if p.score >= best or p.score < share * best:
            continue
        g = groups.setdefault(
            (p.relations, p.directions),
            {"score": p.score, "path": relation_path_text(p.relations, p.directions), "ends": {}},
        )
        g["ends"].setdefault((p.names or p.entities)[-1], None)
    out = []
    for g in sorted(groups.values(), key=lambda g: (-g["score"], g["path"])):
        ends = sorted(g["ends"])
        if set(ends) <= answered:
            continue  # another route to the same answers
        out.append({"score": round(float(g["score"]), 6), "path": g["path"], "ends": ends[:5], "count": len(ends)})
        if len(out) == top:
            break
    return out


def _build(settings: Settings, **options: Any) -> Reasoner:
    return PathReasoner(**options)


# registered through the `kgdb.reasoners` entry-point group (pyproject.toml)
KIND = ReasonerKind("rrp", _build, "no LLM: answers from grounded relation paths", needs_paths=True)
