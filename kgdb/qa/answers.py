"""Parse a reasoner's reply into an answer list.

Rules (SubgraphRAG reference behaviour, made explicit):
- every line whose text starts with `ans:` (any case, after list bullets, numbering or markdown
  emphasis) gives one answer; the rest of the reply is explanation;
- refusals ("not available", "no information available", "none", "unknown", ...) are dropped
  and mark the reply as a refusal when nothing else remains;
- duplicates (same text after case and whitespace folding) are kept once, first position wins;
- Freebase mids (`m.0abc`, `g.11x`) are replaced by the entity's name when the caller knows it;
- a reply with no `ans:` line at all is `malformed` (the reasoner may ask once more).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from kgdb.ids import is_mid

_ANS_LINE = re.compile(r"^\s*(?:[-*•>]+\s*|\d+[.)]\s*)?[*_`]*\s*ans\s*[*_`]*\s*:\s*[*_`]*(.*)$", re.IGNORECASE)
_REFUSALS = (
    "not available",
    "no information available",
    "no answer",
    "none",
    "unknown",
    "n/a",
    "not found",
    "cannot be determined",
    "no information",
)


@dataclass
class ParsedAnswers:
    answers: list[str] = field(default_factory=list)
    refused: bool = False  # the reply said the evidence does not hold the answer
    malformed: bool = False  # no `ans:` line at all
    dropped: list[str] = field(default_factory=list)  # refusal lines and duplicates, for debugging


def is_refusal(text: str) -> bool:
    t = text.strip().strip(".").strip().lower()
    return t == "" or any(t == r or t.startswith(r + " ") or t.startswith(r + ".") for r in _REFUSALS)


def _clean(text: str) -> str:
    text = text.strip().rstrip("*_`").strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


def parse_answers(reply: str | None, names: Mapping[str, str] | None = None) -> ParsedAnswers:
    """Answers from the `ans:` lines of `reply`; `names` maps mids (Entity.id) to readable names."""
    out = ParsedAnswers()
    if not reply:
        out.malformed = True
        return out
    seen: set[str] = set()
    found_line = False
    for line in reply.splitlines():
        m = _ANS_LINE.match(line)
        if not m:
            continue
        found_line = True
        answer = _clean(m.group(1))
        if is_refusal(answer):
            out.dropped.append(answer)
            continue
        if names and is_mid(answer):
            answer = names.get(answer, answer)
        key = " ".join(answer.lower().split())
        if key in seen:
            out.dropped.append(answer)
            continue
        seen.add(key)
        out.answers.append(answer)
    out.malformed = not found_line
    out.refused = found_line and not out.answers
    return out
