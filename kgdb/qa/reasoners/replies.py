"""Answers from whatever an LLM wrote, each one an entity of the evidence, with how it was read.

Three readings, tried in order, and recorded per answer (a fourth, `schema-after-prose`, marks answers
from the schema-held request an OpenAI reasoner sends when a prose reply held nothing readable):
- `schema`: the JSON object `{"answers": [...]}` that `response_format` asked for (a cut-off reply
  still yields the names it completed; one broken off before any name is malformed, while a whole
  `{"answers": []}` is the model's refusal);
- `ans-line`: SubgraphRAG's `ans:` lines (kgdb.qa.answers), each mapped onto an evidence entity: the
  line itself, or the evidence names it mentions ("ans: The capital is Canberra" -> Canberra);
- `free-text`: no `ans:` line at all ("The capital of Australia is Canberra."): the evidence names the
  reply mentions, in reply order, leaving out names the question itself contains.
Small models copy the prompt's worked example ("ans: Pritzker Architecture Prize"); such an answer
is not in the evidence and is dropped, like every other answer that names no evidence entity.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kgdb.ids import is_mid
from kgdb.qa.answers import parse_answers
from kgdb.qa.metrics import normalize
from kgdb.qa.reasoners.base import Evidence, Reasoning

SCHEMA, ANS_LINE, FREE_TEXT = "schema", "ans-line", "free-text"
# a prose reply held nothing readable; the question asked again with a schema that requires an answer
SCHEMA_AFTER_PROSE = "schema-after-prose"
MAX_ANSWERS = 10
_JSON_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


@dataclass
class ReadReply:
    answers: list[str] = field(default_factory=list)
    modes: dict[str, str] = field(default_factory=dict)  # answer -> the reading that produced it
    dropped: list[str] = field(default_factory=list)  # answers that name no evidence entity
    refused: bool = False  # the reply said the evidence does not hold the answer
    malformed: bool = False  # nothing in the reply could be read as an answer or a refusal

    def add(self, answer: str, mode: str) -> None:
        if answer not in self.modes:
            self.answers.append(answer)
            self.modes[answer] = mode


@dataclass
class LLMReasoning(Reasoning):
    """An LLM reasoner's result: besides the answers, how each was read and what the prompt cost."""

    modes: dict[str, str] = field(default_factory=dict)  # answer -> "schema", "ans-line", "free-text", ...
    dropped: list[str] = field(default_factory=list)  # answers the reply gave that name no evidence entity
    # tokens: the endpoint's context, what was counted and sent, the evidence lines cut to fit, max_tokens
    budget: dict = field(default_factory=dict)

    def reading(self) -> dict[str, Any]:
        return {"modes": self.modes, "dropped": self.dropped, "budget": self.budget}


def evidence_names(evidence: Evidence) -> list[str]:
    """Names of the entities in the evidence (retrieved triples, grounded paths), best ranked first."""
    found: dict[str, None] = {}
    for t in evidence.triples:
        found.setdefault(t.head)
        found.setdefault(t.tail)
    for p in evidence.paths:
        for name in p.names or p.entities:
            found.setdefault(name)
    return [n for n in found if n and not is_mid(n)]


def answer_schema(candidates: list[str], max_answers: int = MAX_ANSWERS, at_least: int = 0) -> dict:
    """`response_format` for an answer list drawn from `candidates` (llama.cpp compiles it to a grammar,
    vLLM to guided decoding, OpenAI to structured outputs). An empty list is the refusal, unless
    `at_least` answers are required."""
    items: dict = {"type": "string", "enum": list(candidates)} if candidates else {"type": "string"}
    answers: dict = {"type": "array", "items": items, "maxItems": max_answers}
    if at_least:
        answers["minItems"] = at_least
    schema = {
        "type": "object",
        "properties": {"answers": answers},
        "required": ["answers"],
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": "kgdb_answers", "strict": True, "schema": schema}}


def _key(text: str) -> str:
    """Match key: the metrics' normalisation (case, punctuation, articles) with accents folded too."""
    folded = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return normalize(folded)


class Names:
    """The evidence's entity names, matched the way metrics match answers (case, accents, articles)."""

    def __init__(self, names: Iterable[str], question: str = ""):
        self.by_norm: dict[str, str] = {}
        for name in names:
            if name and not is_mid(name):
                self.by_norm.setdefault(_key(name), name)
        q = f" {_key(question)} "
        # names the question itself contains are its topics, rarely its answer
        self.in_question = {n for n in self.by_norm if n and f" {n} " in q}
        longest_first = sorted((n for n in self.by_norm if n), key=len, reverse=True)
        self._pattern = (
            re.compile(r"(?<!\w)(" + "|".join(re.escape(n) for n in longest_first) + r")(?!\w)")
            if longest_first
            else None
        )

    def exact(self, text: str) -> str | None:
        return self.by_norm.get(_key(text))

    def mentioned(self, text: str, skip_question: bool = True) -> list[str]:
        """Evidence names inside `text`, left to right, longest match first, each once."""
        if self._pattern is None:
            return []
        found: list[str] = []
        for m in self._pattern.finditer(_key(text)):
            key = m.group(1)
            if skip_question and key in self.in_question:
                continue
            name = self.by_norm[key]
            if name not in found:
                found.append(name)
        return found


def read_schema(reply: str) -> list[str] | None:
    """The `answers` of a JSON reply; a reply cut off by the token limit yields its complete strings."""
    return _schema_answers(reply)[0]


def _schema_answers(reply: str) -> tuple[list[str] | None, bool]:
    """`read_schema`'s answers, and whether the JSON was whole (a broken reply's list is what it completed)."""
    text = reply.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    if not text.startswith("{"):
        return None, False
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        if '"answers"' not in text:
            return None, False
        inside = text.split('"answers"', 1)[1]
        return [json.loads(f'"{s}"') for s in _JSON_STRING.findall(inside)], False
    if not isinstance(data, dict) or not isinstance(data.get("answers"), list):
        return None, True
    return [str(a) for a in data["answers"] if isinstance(a, (str, int, float))], True


def read_reply(reply: str, names: Names, ids: Mapping[str, str] | None = None, structured: bool = False) -> ReadReply:
    """Answers from `reply`, each an evidence entity. `structured`: the reply was asked for as JSON."""
    out = ReadReply()
    listed, whole = _schema_answers(reply) if structured or reply.lstrip().startswith(("{", "```")) else (None, False)
    if listed is not None:
        for item in listed[:MAX_ANSWERS]:
            _keep(out, item, names, SCHEMA)
        named_nothing = not out.answers and not out.dropped
        # `{"answers": []}` is the model's choice; JSON that breaks off before naming anything is no choice at all
        out.refused = named_nothing and whole
        out.malformed = named_nothing and not whole
        return out
    parsed = parse_answers(reply, ids)
    if not parsed.malformed:
        for item in parsed.answers:
            _keep(out, item, names, ANS_LINE)
        out.refused = parsed.refused
        if out.answers or parsed.refused:
            return out
    for name in names.mentioned(reply)[:MAX_ANSWERS]:
        out.add(name, FREE_TEXT)
    out.malformed = not out.answers and not out.refused
    return out


def _keep(out: ReadReply, item: str, names: Names, mode: str) -> None:
    exact = names.exact(item)
    if exact is not None:
        out.add(exact, mode)
        return
    inside = names.mentioned(item)
    if inside:
        for name in inside:
            out.add(name, mode)
    elif item.strip():
        out.dropped.append(item)
