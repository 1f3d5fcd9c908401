"""The words of a question as every reader takes them: lower-cased tokens, quoted spans, the words a writer
capitalises, and the question without some names (what the encoders read)."""

from __future__ import annotations

import re
from collections.abc import Sequence

# The words every question is made of: neither a mention starts or ends with one, nor does a composed
# question ask anything with one alone (`kgdb.reading.mentions.STOPWORDS`, `kgdb.reading.composition`).
FUNCTION_WORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "at",
        "be",
        "been",
        "by",
        "call",
        "called",
        "did",
        "do",
        "does",
        "for",
        "from",
        "how",
        "in",
        "is",
        "it",
        "its",
        "name",
        "of",
        "on",
        "or",
        "that",
        "the",
        "these",
        "this",
        "those",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "with",
    }
)
SMALL_WORDS = frozenset({"of", "the", "and", "for", "de", "&"})
TOKEN = re.compile(r"[\w'’.&-]+", re.UNICODE)
QUOTED = re.compile(r'["“]([^"“”]+)["”]')
POSSESSIVE = re.compile(r"['’]s$")


def words(text: str) -> list[str]:
    """Lower-cased words as mentions are made of (edge punctuation stripped)."""
    return [w for w in (w.strip(".'’-") for w in TOKEN.findall(text.lower())) if w]


def quoted(question: str) -> list[str]:
    """The spans the question quotes, each as its words joined by one space."""
    return [" ".join(words(span)) for span in QUOTED.findall(question)]


def capitalised(question: str) -> set[str]:
    """The words written with a capital letter other than the question's first (lower-cased as in
    `words`): a writer who capitalises marks names that way ("which has a country capital of Grodno?").
    Empty where no word is written in lower case (capitals throughout, or every word capitalised): then
    capitals mark nothing."""
    words = [w for w in (w.strip(".'’-") for w in TOKEN.findall(question)[1:]) if w]
    if not any(w[:1].islower() for w in words):
        return set()
    return {POSSESSIVE.sub("", w.lower()) for w in words if w[:1].isupper()}


def written_as_name(mention: str, quoted: Sequence[str] | set[str], written: set[str]) -> bool:
    """Whether a question writes `mention` as a name: in quotes (`quoted`: its quoted spans), or every word
    but the small ones with a capital (`written`: `capitalised(question)`: "Tien Quan Ca", "Governor of
    Arizona"), not as a word of its wording ("the writer who…")."""
    if mention in quoted:
        return True
    names = {POSSESSIVE.sub("", w) for w in words(mention)} - SMALL_WORDS
    return bool(names) and names <= written


def strip_mentions(question: str, names: Sequence[str]) -> str:
    """The question without the topic entity names (so its vector is about the relations asked)."""
    q = question
    for name in sorted((n for n in names if n), key=len, reverse=True):
        q = re.sub(re.escape(name), " ", q, flags=re.IGNORECASE)
    q = " ".join(q.split())
    return q or question
