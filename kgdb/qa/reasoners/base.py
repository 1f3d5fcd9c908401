"""What every reasoner is given, what it returns and the errors it raises.

A reasoner turns a prompt and the `Evidence` behind it into parsed answers; `Reasoning` records the
raw reply, the parsed answers and the token usage, whichever reasoner produced it. A reasoner is
chosen by name from the registry in `kgdb.qa.reasoners`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

from kgdb.errors import KgdbError
from kgdb.protocol import ScoredPath
from kgdb.qa.answers import parse_answers
from kgdb.qa.prompts import Prompt

DEFAULT_SEED = 0  # SubgraphRAG: temperature 0, seed 0
DEFAULT_MAX_TOKENS = 1024


class LLMError(KgdbError):
    """The LLM endpoint failed in a way retrying will not fix (or retries ran out)."""


@dataclass
class Reasoning:
    answers: list[str]
    reply: str
    reasoner: str  # "openai:<model>", "vllm:<model>", "extractive"
    llm_used: bool
    refused: bool = False
    malformed: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    seconds: float = 0.0
    # answer -> indices of the evidence lines it rests on (filled by the extractive reasoner)
    support: dict[str, list[int]] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    # the next relation paths by score that did not give the answers (`rrp` without rethinking):
    # {"score", "path" (relations, "^-1" against the edge), "ends" (first names), "count"}
    alternatives: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def reading(self) -> dict[str, Any] | None:
        """How an LLM's reply became the answers (modes, dropped names, token budget); None without an LLM."""
        return None

    def tied_first(self) -> int:
        """How many of the first answers share the first one's score (0 without scores). Above one, the evidence
        did not rank them: their order is the answering rules' (for `rrp`: how many best paths reach each, the
        question's constraints, closeness to the question, the name)."""
        if not self.answers or self.answers[0] not in self.scores:
            return 0
        top = self.scores[self.answers[0]]
        return next((i for i, a in enumerate(self.answers) if self.scores.get(a) != top), len(self.answers))


class EvidenceTriple(Protocol):
    """What a reasoner reads of a retrieved triple (`kgdb.protocol.ScoredTriple` fits). Read-only members,
    so that frozen dataclasses fit."""

    @property
    def head(self) -> str: ...

    @property
    def relation(self) -> str: ...

    @property
    def tail(self) -> str: ...

    @property
    def score(self) -> float: ...

    @property
    def head_id(self) -> str: ...

    @property
    def tail_id(self) -> str: ...


@dataclass
class Evidence:
    """The retrieved triples and paths behind one prompt. `Evidence(question)` alone holds nothing to
    ground answers on: an LLM's `ans:` lines are then taken as written."""

    question: str
    triples: Sequence[EvidenceTriple] = ()  # best retriever score first
    topics: list[str] = field(default_factory=list)  # entity ids
    topic_names: list[str] = field(default_factory=list)
    cvt: set[str] = field(default_factory=set)  # ids of compound-value nodes
    paths: Sequence[ScoredPath] = ()  # the retriever's grounded reasoning paths, best first
    from_paths: bool = False  # the retriever plans relation paths (it may have found none)


@runtime_checkable
class Reasoner(Protocol):
    """One public method, `reason`; `settings()` says what to record next to results."""

    name: str
    uses_llm: bool

    def reason(self, prompt: Prompt, evidence: Evidence, names: dict[str, str] | None = None) -> Reasoning: ...

    def settings(self) -> dict[str, Any]: ...


def finish(reasoning: Reasoning, reply: str, names: dict[str, str] | None, read: Any = None) -> Reasoning:
    """The reply and its answers into `reasoning`. `read`: the reply already read against the evidence
    (a `kgdb.qa.reasoners.replies.ReadReply`: schema, `ans:` lines or free text); without it, the
    `ans:` lines as written."""
    parsed = read if read is not None else parse_answers(reply, names)
    reasoning.reply = reply
    reasoning.answers = list(parsed.answers)
    reasoning.refused = parsed.refused
    reasoning.malformed = parsed.malformed
    return reasoning
