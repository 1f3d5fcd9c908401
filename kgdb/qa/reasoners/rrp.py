"""Answers without an LLM from grounded relation paths. With the planner alone: the end entities of
the best-scored relation path that grounded to something, in the order of how many grounded paths
reach them. With RRP's structural reasoner and rethinking (paths whose source reads `mode:module`):
the end entities of every kept path, best path score first. Ties keep the order of the retriever's
paths (`RelationPathRetriever` puts the ends of one relation path closest to the question first).
Needs a retriever that returns paths (`kgdb.pipeline.RelationPathRetriever`)."""

from __future__ import annotations

import time
from typing import Any

from kgdb.errors import InputError
from kgdb.protocol import relation_path_text
from kgdb.qa.prompts import Prompt
from kgdb.qa.reasoners.base import Reasoning


class PathReasoner:
    name = "rrp"
    uses_llm = False

    def __init__(self, max_answers: int = 50, alternatives: int = 3):
        self.max_answers, self.alternatives = max_answers, alternatives

    def settings(self) -> dict[str, Any]:
        return {"reasoner": self.name, "llm_used": False, "max_answers": self.max_answers}

    def reason(self, prompt: Prompt, evidence: Any = None, names: dict[str, str] | None = None) -> Reasoning:
        t = time.perf_counter()
        paths = list(getattr(evidence, "paths", None) or [])
        if evidence is not None and not paths and not getattr(evidence, "from_paths", False):
            raise InputError("the rrp reasoner answers from relation paths: use --retriever relation-paths", path="--reasoner")
        topics, cvt = set(getattr(evidence, "topics", [])), set(getattr(evidence, "cvt", set()))
        usable = [p for p in paths if p.answer not in topics and p.answer not in cvt]
        order: dict[str, int] = {}  # ties keep the retriever's order (its answers tied on one path: closest to the question first)
        for p in usable:
            order.setdefault(p.answer, len(order))
        answers: list[str] = []
        support: dict[str, list[int]] = {}
        scores: dict[str, float] = {}
        if usable and all(":" in p.source for p in usable):
            # rethought paths (`kgdb.pipeline.relation_paths`, mode:module): every kept path is an
            # answer path; entities in order of their best path score S
            best_of: dict[str, float] = {}
            name_of = {}
            for p in usable:
                if p.score > best_of.get(p.answer, float("-inf")):
                    best_of[p.answer] = p.score
                    name_of[p.answer] = (p.names or p.entities)[-1]
            ranked = sorted(best_of, key=lambda e: (-best_of[e], order[e]))[: self.max_answers]
            answers = [name_of[e] for e in ranked]
            scores = {name_of[e]: best_of[e] for e in ranked}
        elif usable:
            best = max(p.score for p in usable)
            counts: dict[str, int] = {}
            name_of: dict[str, str] = {}
            for p in usable:
                if p.score == best:
                    counts[p.answer] = counts.get(p.answer, 0) + 1
                    name_of[p.answer] = (p.names or p.entities)[-1]
            ranked = sorted(counts, key=lambda e: (-counts[e], order[e]))[: self.max_answers]
            answers = [name_of[e] for e in ranked]
            scores = {name_of[e]: best for e in ranked}
        reply = "ans: " + " | ".join(answers) if answers else "ans: not available"
        return Reasoning(answers, reply, self.name, False, refused=not answers, support=support, scores=scores,
                         alternatives=other_readings(usable, set(answers), self.alternatives) if answers else [],
                         seconds=time.perf_counter() - t)


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
        g = groups.setdefault((p.relations, p.directions), {"score": p.score, "path": relation_path_text(p.relations, p.directions), "ends": {}})
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
