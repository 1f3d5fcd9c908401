"""What every reasoner returns and the errors it raises.

A reasoner turns a prompt (and the evidence behind it) into parsed answers; `Reasoning` records the
raw reply, the parsed answers and the token usage, whichever reasoner produced it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from kgdb.errors import KgdbError
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


class Reasoner(Protocol):
    name: str
    uses_llm: bool

    def reason(self, prompt: Prompt, evidence: Any = None, names: dict[str, str] | None = None) -> Reasoning: ...


def finish(reasoning: Reasoning, reply: str, names: dict[str, str] | None) -> Reasoning:
    parsed = parse_answers(reply, names)
    reasoning.reply = reply
    reasoning.answers = parsed.answers
    reasoning.refused = parsed.refused
    reasoning.malformed = parsed.malformed
    return reasoning
