"""What `kgdb ask` gives for one question (`AskResult`): the answers with their evidence and confidence, how
they were retrieved and reasoned, and `to_json`, the shape `--json`, `kgdb serve` and `eval qa` share."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kgdb.qa.prompts import Prompt
from kgdb.qa.reasoners import Reasoning
from kgdb.reading import QuestionReading


@dataclass
class AnswerEvidence:
    answer: str
    grounded: bool  # names an entity of the retrieved evidence
    entity_id: str | None
    evidence: list[str]  # chain / triple lines it rests on, best first
    confidence: float | None = None  # the answer model's calibrated P(right); None: not judged (an LLM answered)


@dataclass
class AskResult:
    question: str
    qid: str | None
    retriever: str
    retriever_note: str | None  # e.g. the fallback to cosine
    k: int
    run: str | None
    topics: list[str]
    topic_names: list[str]
    format: str
    evidence_lines: list[str]
    prompt: Prompt
    reasoning: Reasoning | None
    answers: list[AnswerEvidence]
    error: str | None  # the reasoner failed; retrieval is still shown
    browser_query: str | None
    timings: dict[str, float] = field(default_factory=dict)  # milliseconds
    evidence_entities: list[str] = field(default_factory=list)  # names in the retrieved triples
    subgraph: Any = field(default=None, repr=False)  # the fetched kgdb.subgraph.Subgraph
    missing_topics: list[str] = field(default_factory=list)  # given topics not in the graph (dropped)
    planner_usage: dict | None = None  # the LLM relation-path planner's calls and tokens (`--planner llm`)
    retrieval: dict = field(default_factory=dict)  # how the evidence was fetched: checkpoint, hops, cap, ...
    plan: dict | None = None  # what answered and why (`kgdb.qa.policy.AnsweringPlan.to_json`)
    reading: QuestionReading | None = field(default=None, repr=False)  # how the question was read and linked
    # P(the first answer is right) from the answer model (`kgdb.rrp.judging`); None where nothing judged it
    confidence: float | None = None
    min_confidence: float | None = None  # below it the answer is "not sure"
    separated_by: str | None = None  # the feature that put the first answer above the second
    # with `--escalate-below`: True when the answer model was unsure and the LLM answered; None: not asked for
    escalated: bool | None = None

    @property
    def sure(self) -> bool | None:
        """False when the first answer's confidence is below `min_confidence`; None without a confidence."""
        if self.confidence is None or self.min_confidence is None:
            return None
        return self.confidence >= self.min_confidence

    def to_json(self, show_prompt: bool = False) -> dict[str, Any]:
        r = self.reasoning
        out = {
            "question": self.question,
            "qid": self.qid,
            "retriever": self.retriever,
            "retriever_note": self.retriever_note,
            "retrieval": self.retrieval,
            "plan": self.plan,
            "k": self.k,
            "run": self.run,
            "topics": self.topics,
            "topic_names": self.topic_names,
            "format": self.format,
            "prompt_template": self.prompt.template,
            "reasoner": r.reasoner if r else None,
            "llm_used": r.llm_used if r else None,
            "answers": [asdict(a) for a in self.answers],
            "confidence": self.confidence,
            "min_confidence": self.min_confidence,
            "sure": self.sure,
            "separated_by": self.separated_by,
            "escalated": self.escalated,
            "refused": r.refused if r else None,
            "malformed": r.malformed if r else None,
            "reply": r.reply if r else None,
            "alternatives": r.alternatives if r else [],
            "tied_first": r.tied_first() if r else 0,
            "usage": {"prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens, "calls": r.calls}
            if r
            else None,
            "reading": r.reading() if r else None,
            "question_reading": self.reading.to_json() if self.reading is not None else None,
            "planner_usage": self.planner_usage,
            "error": self.error,
            "evidence": self.evidence_lines,
            "browser_query": self.browser_query,
            "timings_ms": {k: round(v, 3) for k, v in self.timings.items()},
        }
        if show_prompt:
            out["prompt"] = self.prompt.messages
        return out
