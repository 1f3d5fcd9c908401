"""How closely two spellings of a name agree: a question's text misspells or drops the accents of names
the graph holds ("laua hollenbrand" for Laura Hillenbrand, "tien quan ca" for Tiến Quân Ca)."""

from __future__ import annotations

import re
import unicodedata
from difflib import SequenceMatcher

# Two spellings of several words within this string similarity name the same thing; chosen on the CWQ
# training split, topics linked (docs/experiments/2026-11-28-capitalised-names.md).
SPELLING_RATIO = 0.85


_NUMBER = re.compile(r"[0-9]+")


def spelt_alike(a: str, b: str) -> bool:
    """Whether `a` and `b` (lower-cased) are one name spelt two ways; one word that close is most often
    another word ("isabella", "sabella"), so single words never are, and names whose numbers differ are
    two things ("2000 fa cup final", "2001 FA Cup Final"), however close their letters."""
    return (
        len(a.split()) >= 2
        and _NUMBER.findall(a) == _NUMBER.findall(b)
        and SequenceMatcher(None, a, b).ratio() >= SPELLING_RATIO
    )


def without_accents(text: str) -> str:
    """`text` with each accented letter replaced by its base letter, one character for one, so that
    positions in the result are positions in `text`."""
    return "".join(unicodedata.normalize("NFKD", c)[0] for c in text)
