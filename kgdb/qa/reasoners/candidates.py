"""Answer from candidates: the LLM chooses among the answers the no-LLM answerer ranks highest.

The answerer without an LLM (the relation paths the retriever grounded, else the extractive
reasoner's ranked relation paths through the triples) proposes its best candidates, each with the
path that reaches it; the LLM reads those few lines instead of 100 triples and picks the ones that
answer the question, as JSON constrained to the candidates' names where the endpoint supports it.
A small model adds judgement at a fraction of the prompt. A prose reply that chooses nothing readable
is asked again held to a schema that requires a candidate (`OpenAIReasoner`); where the endpoint has no
structured output, the no-LLM first answer stands, and the record says so.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from kgdb.qa.prompts import Prompt, build_prompt, path_line, step_line
from kgdb.qa.reasoners.base import Evidence
from kgdb.qa.reasoners.replies import LLMReasoning

if TYPE_CHECKING:
    from kgdb.config import Settings
    from kgdb.qa.reasoners.extractive import ExtractiveReasoner
    from kgdb.qa.reasoners.openai_compatible import OpenAIReasoner

TOP_CANDIDATES = 10
TEMPLATE = "candidates"


class CandidatesReasoner:
    """`llm` (an `OpenAIReasoner`) chooses among the top `top` candidates of `proposer` (a reasoner
    without an LLM; None: the extractive reasoner, built on first use)."""

    uses_llm = True

    def __init__(
        self,
        llm: OpenAIReasoner,
        proposer: ExtractiveReasoner | None = None,
        *,
        top: int = TOP_CANDIDATES,
        version: int = 1,
        settings: Settings | None = None,
    ):
        self.llm, self.proposer, self.top, self.version, self._settings = llm, proposer, top, version, settings
        self.name = f"candidates:{llm.name}"

    def settings(self) -> dict[str, Any]:
        return {
            "reasoner": self.name,
            "top": self.top,
            "template": f"{TEMPLATE}_v{self.version}",
            "llm": self.llm.settings(),
        }

    def reason(self, prompt: Prompt, evidence: Evidence, names: dict[str, str] | None = None) -> LLMReasoning:
        start = time.perf_counter()
        candidates = self.candidates(evidence, names)
        question = prompt.question or evidence.question
        if not candidates:
            out = LLMReasoning(
                answers=[],
                reply="No candidate reaches beyond the question's entities; the LLM was not asked.",
                reasoner=self.name,
                llm_used=False,
                refused=True,
            )
            out.seconds = time.perf_counter() - start
            return out
        lines = [f"{i}. {name} (via {path})" for i, (name, path) in enumerate(candidates, 1)]
        chooser = build_prompt(TEMPLATE, question, lines, self.version)
        # the chooser may answer with the candidates' names, nothing else
        out = self.llm.choose(chooser, [name for name, _ in candidates], names, question)
        out.reasoner = self.name
        if not out.answers and out.malformed:
            # nothing readable: the proposer's own first answer stands, marked as such
            out.answers = [candidates[0][0]]
            out.modes = {candidates[0][0]: "no-llm-fallback"}
        out.budget["candidates"] = len(candidates)
        out.seconds = time.perf_counter() - start
        return out

    def candidates(self, evidence: Evidence, names: dict[str, str] | None) -> list[tuple[str, str]]:
        """(name, path line) of the best candidates, best first, each name once."""
        out: dict[str, str] = {}
        topics, cvt = set(evidence.topics), evidence.cvt
        for p in sorted(evidence.paths, key=lambda p: -p.score):
            if p.answer in topics or p.answer in cvt:
                continue
            out.setdefault((p.names or p.entities)[-1], path_line(p.render()))
            if len(out) >= self.top:
                return list(out.items())
        if out or not evidence.triples:
            return list(out.items())
        return self._from_triples(evidence, names)

    def _from_triples(self, evidence: Evidence, names: dict[str, str] | None) -> list[tuple[str, str]]:
        from kgdb.ids import is_mid
        from kgdb.qa.reasoners.extractive import ExtractiveReasoner

        if self.proposer is None:
            from kgdb.config import load_settings

            self.proposer = ExtractiveReasoner.from_settings(self._settings or load_settings())
        id_name = dict(names or {})
        for t in evidence.triples:
            id_name.setdefault(t.head_id, t.head)
            id_name.setdefault(t.tail_id, t.tail)
        out: dict[str, str] = {}
        ranked = self.proposer.rank_paths(evidence)
        for path in ranked:
            anchor = id_name.get(path.path.anchor, path.path.anchor)
            for entity, _route in sorted(path.targets.items(), key=lambda kv: min(kv[1])):
                name = id_name.get(entity, entity)
                if is_mid(name):
                    continue
                line = step_line(anchor, [(r, d) for r, d, _ in path.path.steps], name)
                out.setdefault(name, line)
                if len(out) >= self.top:
                    return list(out.items())
        return list(out.items())
