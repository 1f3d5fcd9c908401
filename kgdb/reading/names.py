"""How a name relates to the words that mention it, with no graph at hand: whether a name holds or spells a
mention, a name's initials, and the other forms a mention may take in a name (a demonym's base, an
abbreviation spelt out). Linking scores candidates with these (`kgdb.cypher.linking`); the reading and the
planners choose among linked candidates with them."""

from __future__ import annotations

import re

from kgdb.reading.spelling import spelt_alike
from kgdb.reading.words import SMALL_WORDS, words

# Demonym and adjective endings -> the endings of the name they derive from. Questions name a country
# or creed by its adjective ("what language do egyptians speak?" asks about Egypt, "italians" Italy,
# "islamic" Islam) and the graphs hold no aliases. A mention whose last word has such an ending is also
# queried as each base form of its longest listed ending; only a name that is exactly a base form is a
# candidate. Right after a verb of speaking the word names a language ("where do they speak german?").
DERIVATIONS = (
    ("ian", ("", "ia", "y", "e", "a", "i")),  # egyptian, russian, italian, ukrainian, canadian, haitian
    ("an", ("a", "", "o", "any")),  # korean, chilean, mexican, german
    ("ese", ("", "a")),  # japanese, chinese
    ("ic", ("",)),  # islamic
    ("i", ("",)),  # pakistani, israeli
)
MIN_BASE = 4
# Abbreviations names spell out: "st paul" also reads "saint paul", "mt lassen" "mount lassen"; like a
# demonym's base form, only a name that is exactly the spelt-out mention is a candidate.
SPELT_OUT = {"st": "saint", "mt": "mount", "ft": "fort"}
SPEECH_VERBS = frozenset({"speak", "speaks", "spoke", "spoken", "speaking"})
# A numbered name's abbreviation keeps its number, written either way ("WW2", "WWII": World War II): a
# word of two or three letters then a number, in digits or (written in capitals) in Roman numerals.
NUMBERED = re.compile(r"^[a-z]{2,3}(\d{1,2}|[ivx]{1,6})$")
ROMAN_LETTERS = re.compile(r"[ivxlcdm]+")
_ROMAN_UNITS = ("", "i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix")


def initials(name: str) -> set[str]:
    """A name's initials, with and without its small words: "National Rifle Association" -> nra,
    "United States of America" -> usa and usoa, "Franklin D. Roosevelt" -> fdr; a name that ends in a
    number also keeps it, written either way: "World War II" -> wwi, wwii and ww2."""
    said = words(name)
    if len(said) < 2:
        return set()
    found = {_first_letters(said), _first_letters([w for w in said if w not in SMALL_WORDS])}
    *named, number = said
    return found | {_first_letters(named) + form for form in numeral_forms(number)}


def _first_letters(said: list[str]) -> str:
    return "".join(w[0] for w in said)


def _roman(n: int) -> str:
    return "x" * (n // 10) + _ROMAN_UNITS[n % 10]


_FROM_ROMAN = {_roman(n): n for n in range(1, 40)}


def numeral_forms(word: str) -> set[str]:
    """A number from 1 to 39 in digits and in Roman numerals ("2" and "ii"), from either; else nothing."""
    n = int(word) if word.isdigit() else _FROM_ROMAN.get(word, 0)
    return {str(n), _roman(n)} if 1 <= n < 40 else set()


def base_forms(mention: str) -> list[str]:
    """The names a demonym or adjective may derive from (`DERIVATIONS`), plural dropped; in a mention of
    several words, its last ("eastern european": "eastern europe", "south korean": "south korea")."""
    *before, last = mention.split(" ")
    if not last.isalpha() or not all(w.isalpha() for w in before):
        return []
    word = last[:-1] if last.endswith("ns") else last
    for end, bases in DERIVATIONS:
        if word.endswith(end):
            forms = {f for f in (word[: -len(end)] + b for b in bases) if len(f) >= MIN_BASE}
            return sorted(" ".join([*before, f]) for f in forms)
    return []


def spelt_out(mention: str) -> list[str]:
    """The mention with its first word spelt out (`SPELT_OUT`), if it abbreviates one and more words follow."""
    first, _, rest = mention.partition(" ")
    return [f"{SPELT_OUT[first]} {rest}"] if rest and first in SPELT_OUT else []


def readings(mention: str) -> list[str]:
    """What else a mention may be written as in a name: a demonym's base forms, an abbreviation spelt out."""
    return base_forms(mention) + spelt_out(mention)


def holds_mention(name: str, mention: str) -> bool:
    """Whether the name holds the mention's words (an exact, not a fuzzy, match)."""
    return f" {mention} " in f" {' '.join(words(name))} "


def names_mention(name: str, mention: str) -> bool:
    """Whether the name is what the mention says: it holds the mention's words, in order if not side by side
    ("1960 olympics" -> 1960 Summer Olympics), or a mention of several words spells it closely ("laua
    hollenbrand" -> Laura Hillenbrand, "katerine fugate"); one word that close is most often another word
    ("isabella" -> "Ernie Sabella"). A numbered abbreviation ("ww2") says the name it gives the initials
    of: its number leaves few others, where plain initials fit many."""
    return (
        _in_order(mention.split(), words(name))
        or spelt_alike(mention, name.lower())
        or (NUMBERED.match(mention) is not None and mention in initials(name))
    )


def _in_order(mention: list[str], name: list[str]) -> bool:
    """Whether `name` has the `mention` words in their order, side by side or not (`holds_mention`'s words, apart)."""
    rest = iter(name)
    return all(w in rest for w in mention)
