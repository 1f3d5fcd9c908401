"""What a question's wording asks of its answer beyond the relation path: year bounds ("before 2000"), an
extreme ("last", "first"), the answer-type cue ("where", "what college"), and the stems of its words.
The answering side applies them to candidate answers (`kgdb.rrp.constraints`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

YEAR = r"(1[0-9]{3}|20[0-9]{2})"
_BOUND = re.compile(
    rf"\b(before|after|prior to|since|until|by|in|during|earlier than|later than)\s+(?:the year\s+)?{YEAR}\b",
    re.IGNORECASE,
)
_OPS = {
    "before": "before",
    "prior to": "before",
    "until": "before",
    "earlier than": "before",
    "by": "before",
    "after": "after",
    "since": "after",
    "later than": "after",
    "in": "in",
    "during": "in",
}
_LATEST = re.compile(r"\b(last|latest|most recent|most recently|newest|youngest)\b", re.IGNORECASE)
_EARLIEST = re.compile(r"\b(first|earliest|oldest)\b", re.IGNORECASE)
_WH = re.compile(r"\b(where|who|whom|whose|when|what|which|how many|how much)\b(?:\s+(\w+))?", re.IGNORECASE)
_NOT_A_NOUN = {
    "is",
    "was",
    "are",
    "were",
    "did",
    "does",
    "do",
    "has",
    "have",
    "had",
    "can",
    "could",
    "will",
    "would",
    "the",
    "a",
    "an",
    "of",
    "in",
    "to",
    "kind",
    "type",
    "sort",
}


@dataclass(frozen=True)
class YearBound:
    """`before` / `after` / `in` a year (before and after exclusive, as the words say)."""

    op: str
    year: int

    def holds(self, year: int) -> bool:
        return (
            year < self.year if self.op == "before" else year > self.year if self.op == "after" else year == self.year
        )


@dataclass(frozen=True)
class Constraints:
    """What a question's wording asks of its answer beyond the core relation path."""

    bounds: tuple[YearBound, ...] = ()
    extreme: str | None = None  # "latest" (argmax of the year) or "earliest" (argmin)
    cue: str = ""  # the answer-type cue: "where", "who", "what college", ...

    @property
    def literal(self) -> bool:
        return bool(self.bounds) or self.extreme is not None

    @property
    def asks_a_time(self) -> bool:
        """ "when …?", "what year …?", "which date …?"""
        return self.cue == "when" or self.cue.endswith((" year", " date"))


def answer_cue(text: str) -> str:
    """The question's wh-word, with the noun after "what" / "which" ("what college"); "" without one."""
    m = _WH.search(text)
    if m is None:
        return ""
    wh, nxt = m.group(1).lower(), (m.group(2) or "").lower()
    if wh in ("what", "which") and nxt and nxt not in _NOT_A_NOUN:
        return f"{wh} {nxt}"
    return "who" if wh in ("whom", "whose") else wh


def parse_constraints(text: str) -> Constraints:
    """Year bounds, an extreme and the answer-type cue of a question, by rule. A year inside a name the
    question quotes is still read as a bound: the constraint functions only reorder, so a wrong bound
    costs order, never an answer."""
    bounds = tuple(dict.fromkeys(YearBound(_OPS[m.group(1).lower()], int(m.group(2))) for m in _BOUND.finditer(text)))
    extreme = "latest" if _LATEST.search(text) else "earliest" if _EARLIEST.search(text) else None
    return Constraints(bounds, extreme, answer_cue(text))


# a word and a relation name's word are the same word when they share this many first letters or are equal
# ("released" and release_date, "postgraduates" and number_of_postgraduates)
STEM = 5


def word_stems(text: str) -> set[str]:
    """The stems of the words of `text` (split at anything not a letter or digit, `_` too), words of fewer
    than three letters aside."""
    return {w[:STEM] for w in re.split(r"[_\W]+", text.lower()) if len(w) >= 3}
