"""The mentions of a question linking looks up: word n-grams and quoted spans, the other forms a name may
write some of them in, and the short ones read as initials by meaning (`kgdb.cypher.linking` queries
the graph with them)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kgdb.reading.names import NUMBERED, ROMAN_LETTERS, SPEECH_VERBS, readings
from kgdb.reading.words import FUNCTION_WORDS, POSSESSIVE, QUOTED, words

MAX_NGRAM = 6
# Words that never start or end a mention (questions are full of them).
STOPWORDS = FUNCTION_WORDS | frozenset(
    {
        "being",
        "born",
        "can",
        "city",
        "could",
        "countries",
        "country",
        "die",
        "died",
        "education",
        "famous",
        "first",
        "follow",
        "get",
        "go",
        "got",
        "government",
        "had",
        "has",
        "have",
        "he",
        "headquarters",
        "her",
        "his",
        "i",
        "kind",
        "language",
        "languages",
        "last",
        "live",
        "lived",
        "lives",
        "located",
        "made",
        "make",
        "many",
        "may",
        "me",
        "might",
        "most",
        "much",
        "my",
        "named",
        "official",
        "our",
        "people",
        "person",
        "place",
        "play",
        "played",
        "plays",
        "second",
        "shall",
        "she",
        "should",
        "speak",
        "spoke",
        "take",
        "their",
        "them",
        "there",
        "they",
        "type",
        "we",
        "went",
        "will",
        "would",
        "year",
        "years",
        "you",
        "your",
    }
)
# Of those, the words that end many names of several words ("kansas city", "mexico city", "sex and the
# city"): such a gram is a mention. Chosen on the training questions: adding "people", "country",
# "language", "government" and "place" gained nothing and linked "what is serbian language called?"
# to the language instead of WebQSP's Serbia (docs/answering.md, "Linking by answerability").
NAME_ENDS = frozenset({"city"})
# Initials and abbreviations ("nra", "usa", "fdr", "gm"): the graphs hold no aliases, but the embedding
# model places a short mention near the name it abbreviates. A one-word mention of at most MAX_INITIALS
# letters (longer abbreviations are mostly names as written: NASA, NATO) is embedded on its own; of its
# INITIALS_K nearest names, those it gives the initials of are candidates, their string match weighted by
# INITIALS_WEIGHT. Embedding it costs ~8 ms on these CPUs, for the ~27% of WebQSP questions with such a word.
MAX_INITIALS = 3


@dataclass(frozen=True)
class Mentions:
    """What linking looks a question's names up by."""

    grams: tuple[str, ...]  # candidate mentions, quoted spans first, then n-grams longest first
    derived: tuple[tuple[str, tuple[str, ...]], ...]  # mention -> the forms a name may write it in
    short: tuple[str, ...]  # mentions also read as initials, by the names nearest in meaning
    said: str  # the question's words, space-padded: where a name of several words is written whole


def read_mentions(question: str) -> Mentions:
    """The mentions of `question`: each gram by name, by its derived readings (a demonym's base, an
    abbreviation spelt out; not a word right after a verb of speaking, which names a language), and the
    short ones (at most MAX_INITIALS letters, none qualifying the word before it, or a numbered name's
    abbreviation) to be read as initials."""
    grams = mentions(question)
    said = words(question)
    spoken = {w for verb, w in zip(said, said[1:]) if verb in SPEECH_VERBS}
    derived = tuple((g, tuple(forms)) for g in grams if g not in spoken and (forms := readings(g)))
    # a short word right after another word of a name qualifies it ("syracuse ny", "houston tx")
    qualifiers = {w for before, w in zip(said, said[1:]) if before not in STOPWORDS}
    short = tuple(
        g
        for g in grams
        if (2 <= len(g) <= MAX_INITIALS and g.isalpha() and g not in qualifiers) or numbered(g, question)
    )
    return Mentions(tuple(grams), derived, short, f" {' '.join(said)} ")


def mentions(question: str, max_ngram: int = MAX_NGRAM) -> list[str]:
    """Candidate mentions: each quoted span whole, then word n-grams that neither start nor end with a
    stopword (but may end with one of NAME_ENDS after another word), longest first.
    A quoted span is a title as the asker wrote it ("the composer of "thought of you"", "speak now"),
    whatever words it starts or ends with.
    A gram with a possessive is also taken without it: the name index holds "gretzky", not
    "gretzky's", and a name such as "McDonald's" keeps the form as written."""
    said = words(question)
    found: dict[str, None] = {q: None for q in (" ".join(words(span)) for span in QUOTED.findall(question)) if q}
    for n in range(min(max_ngram, len(said)), 0, -1):
        for i in range(len(said) - n + 1):
            for gram in (said[i : i + n], [POSSESSIVE.sub("", w) for w in said[i : i + n]]):
                if gram[0] not in STOPWORDS and (
                    gram[-1] not in STOPWORDS or (len(gram) > 1 and gram[-1] in NAME_ENDS)
                ):
                    found[" ".join(gram)] = None
    return list(found)


def numbered(gram: str, question: str) -> bool:
    """Whether a one-word mention abbreviates a numbered name ("ww2"; "wwii" only as WWII)."""
    found = NUMBERED.match(gram)
    if not found or ROMAN_LETTERS.fullmatch(gram):  # "III" is a number, not a name's initials
        return False
    return found.group(1).isdigit() or re.search(rf"\b{re.escape(gram.upper())}\b", question) is not None
