"""Compositional questions split in two, by the words around the topic's mention: "where was [the
director of inception] born?" asks an inner question about the topic ("what is the director of
inception?") whose answer is the topic of the outer one ("where was <that> born?").

A path ranker trained on WebQSP, which names its topics, ranks the inner one-hop path first for the
whole question (Inception's director, not his birthplace); asked separately, each part is a
question of the kind it was trained on. The split is a reading the planner may take
(`kgdb.rrp.path_ranker.RankedPathPlanner`), scored against the whole question's; this module
only finds the description around the mention.

Descriptions recognised, with m the topic's mention:
  m's <1-2 words>, ms' <1-2 words>          "lionel messi's country", "step brothers' director", "X's
                                            academic advisor" in "X's academic advisor's discovery"
  the <1-3 words> of [the [word]] m         "the director of inception", "the headliner of the X tour",
                                            "the illustrator of the book X"
  the <1-2 words> <participle> for <0-3 words> m
                                            "the artist nominated for awards for X"
  the <1-2 words> whose <1-3 words> is m    "the country whose capital is lima"
  the <1-2 words> where|in which m was|is <word>        "the country where albert einstein was born"
  the|a <1-2 words> who|that <1-4 words> m  "the man who directed the untouchables", "the actor that
                                            played the character X", "a person who went to X"
  the|a <1-2 words> who|that <1-5 words> named|called m
                                            "the jurisdiction that has a governmental office holder named X"
  the <1-2 words> with [the|a] <0-3 words> m  "the film with the character named X"
  the <1-2 words> where|in which <0-4 words> m <0-4 words>, ending the question or before a comma
                                            "what currency is used in the country in which X held office in 2013?",
                                            "in the area where the newspaper X is circulated, what ... ?"
  the [word] <word> <participle> by [the|a] <0-3 words> m
                                            "the franchise owned by X", "the nation represented by the anthem X"
m is the topic's name as the question writes it: in quotes or not (the person who said “...”), without
its accents ("tien quan ca"), a name of several words misspelt ("eddi fenech adami"), with the
capitalised words written right after it ("Ramble Elementary School" for Ramble Elementary), or its first
three words or more where the question shortens a long name ("Horace Mann School for the Deaf").
A description that is all the question asks ("what is the capital of france?") is no composition, nor
is a mention inside a coordination ("ike and tina turner's children": the duo's children), nor a
description beside "and" (two conditions on one answer: "the country that exports to japan and has …"),
nor a word after the name in a question that asks what or who the description is ("what is the zip code
of syracuse ny?"), nor a description inside a participle one ("who directed the films written by the writer
of X?": MetaQA's 3-hop questions, which the whole question reads), nor a participle description whose
name qualifies the plural ending the question ("the films starred by [X actors]"). A participle
description found here ("the films directed by steven spielberg") is most often read whole all the same:
the planner takes a composition only where the whole question's best path answers the description, and
MetaQA's 2-hop questions are read past it. A participle without "by" is no description ("the currency
used in france before the euro").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kgdb.reading.spelling import spelt_alike, without_accents
from kgdb.reading.words import FUNCTION_WORDS

# Words an outer question may keep beside its placeholder and still ask nothing of its own (time
# words: "who is the king of cambodia now?" asks the inner question alone).
_FILLER = FUNCTION_WORDS | frozenset(
    {
        "answers",
        "current",
        "currently",
        "known",
        "names",
        "now",
        "presently",
        "s",
        "still",
        "today",
        "what's",
        "whats",
        "where's",
        "who's",
        "wiki",
    }
)
_WORD = r"[\w'’.&-]+"
# the fewest first words of a long name a question may write for the whole name (`_first_words_mention`)
FIRST_WORDS = 3
_QUOTES_AND_STOPS = ",.;:?!\"'"
# Outer words that describe the answer by a participle around the description ("the films written by …")
_PARTICIPLE = re.compile(r"\bthe (?:[\w'’-]+ ){1,2}[\w'’-]+ by $")
# An outer question that asks what or who the description is ("what is …", "what is the name of …")
_IDENTITY = re.compile(r"^(?:what|who)(?:'s|’s| is| are| was| were)(?: the names? of)? $")
# A participle that describes by its agent ("the franchise owned by …", "the nation represented by …")
_BY = r"(?:[\w'’-]+(?:ed|en)|led|ran|run|made|held|built|won|sung|shot) by"
# A description that is a relative clause ("the man who directed …", "the country whose capital is …", "the
# film with the character …")
_CLAUSE = re.compile(rf"^(?:the|a|an) (?:{_WORD} ){{1,2}}(?:who|that|whose|where|in which|with|{_BY}) ")


@dataclass(frozen=True)
class Composition:
    phrase: str  # the description of the inner answer, as it stands in the question
    inner: str  # the inner question: "what is <phrase>?"
    before: str  # the question's words before the phrase
    after: str  # and after it

    @property
    def clause(self) -> bool:
        """Whether the description is a relative clause ("the man who directed x", "the country whose
        capital is x"): it describes another entity than the topic, never the topic itself."""
        return bool(_CLAUSE.match(self.phrase))

    def outer(self, answer: str) -> str:
        """The outer question: the question with `answer` (the inner answer's name) in the phrase's place.
        Joined, never formatted: the question is the user's text, braces and all."""
        return f"{self.before}{answer}{self.after}"


def _patterns(m: str) -> list[re.Pattern]:
    w = _WORD
    q = rf"(?:[\"“]{m}[\"”]|{m})"  # a title or a saying the question quotes, both quotes or none
    return [
        re.compile(
            rf"(?<!\w)({m}(?:['’]s|(?<=s)['’])(?: {w}){{1,2}}?)(?= (?:is|are|was|were|use|uses|used|in|of|located|born|from|speak|spoken)\b|['’]s |\?|$)"
        ),
        re.compile(rf"(?<!\w)(the (?:{w} ){{1,3}}of (?:the (?:{w} )?)?{q})(?!\w)"),
        re.compile(rf"(?<!\w)(the (?:{w} ){{1,2}}{w}(?:ed|en) for (?:(?:the|a|an) )?(?:{w} ){{0,3}}{q})(?!\w)"),
        re.compile(rf"(?<!\w)(the (?:{w} ){{1,2}}whose (?:{w} ){{1,3}}(?:is|was|are|were) {q})(?!\w)"),
        re.compile(rf"(?<!\w)(the (?:{w} ){{1,2}}(?:where|in which) {m} (?:was|is|were|are) {w})(?!\w)"),
        re.compile(
            rf"(?<!\w)((?:the|a|an) (?:{w} ){{1,2}}(?:who|that) (?:(?:{w} ){{1,4}}|(?:{w} ){{1,5}}(?:named|called) ){q})(?!\w)"
        ),
        re.compile(rf"(?<!\w)(the (?:{w} ){{1,2}}with (?:(?:the|a|an) )?(?:{w} ){{0,3}}{q})(?!\w)"),
        re.compile(rf"(?<!\w)(the (?:{w} ){{0,1}}{w} {_BY} (?:(?:the|a|an) )?(?:{w} ){{0,3}}{q})(?!\w)"),
        re.compile(rf"(?<!\w)(the (?:{w} ){{1,2}}(?:where|in which) (?:{w} ){{0,4}}{q}(?: {w}){{0,4}})(?= ?\?|,|$)"),
    ]


def _content(text: str) -> list[str]:
    """The words of `text` that ask something (`_FILLER` and numbers aside)."""
    return [w for w in re.findall(r"[\w'’-]+", text) if w not in _FILLER and not w.isdigit()]


def _mention(text: str, name: str) -> tuple[int, int] | None:
    """Where `text` names `name`: the name itself, written without its accents ("tien quan ca"), or the
    first run of as many words spelt alike ("eddi fenech adami"); None where the text does not name it."""
    if not name:
        return None
    found = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) or re.search(
        rf"(?<!\w){re.escape(without_accents(name))}(?!\w)", without_accents(text)
    )
    if found:
        return found.span()
    words, n = list(re.finditer(r"\S+", text)), len(name.split())
    for first, last in zip(words, words[n - 1 :]):
        run = text[first.start() : last.end()]
        start = first.start() + len(run) - len(run.lstrip(_QUOTES_AND_STOPS))
        end = last.end() - len(run) + len(run.rstrip(_QUOTES_AND_STOPS))
        if spelt_alike(text[start:end], name):
            return start, end
    return None


def _first_words_mention(text: str, name: str) -> tuple[int, int] | None:
    """Where `text` names the longest run of `name`'s first words, at least FIRST_WORDS of them and fewer than
    all: a question shortens a long name ("Horace Mann School for the Deaf" for "... and Hard of Hearing")."""
    words = name.split()
    for n in range(len(words) - 1, FIRST_WORDS - 1, -1):
        found = _mention(text, " ".join(words[:n]).rstrip(_QUOTES_AND_STOPS))
        if found:
            return found
    return None


def _with_capitalised_words_after(written: str, text: str, span: tuple[int, int]) -> str:
    """The mention at `span` with the capitalised words the question writes right after it, which name it
    too ("the president who attended Ramble Elementary School", topic "Ramble Elementary"); only in a
    question that writes other words in lower case (capitals throughout mark nothing). `text` is `written`
    lower-cased."""
    start, end = span
    if len(written) == len(text) and len(re.findall(r"(?<!\S)[a-z]", written)) >= 2:
        more = re.match(r"(?: [A-Z][\w'’&-]*)+", written[end:])
        end += more.end() if more else 0
    return text[start:end]


def split_composition(question: str, topic_name: str) -> Composition | None:
    """The inner description around the topic's mention and the two questions it makes, or None."""
    text = " ".join(question.lower().split())
    topic = " ".join(topic_name.lower().split())
    span = _mention(text, topic) or _first_words_mention(text, topic)
    if not span:
        return None
    name = _with_capitalised_words_after(" ".join(question.split()), text, span)
    for pattern in _patterns(re.escape(name)):
        found = pattern.search(text)
        if not found:
            continue
        if re.search(rf"(?:\band|\bor|&) {re.escape(name)}", text[: found.end(1)]):
            return None
        phrase = found.group(1)
        if phrase.split()[1] in _FILLER:  # "the name of sonia gandhi": no description
            return None
        before, after = text[: found.start(1)], text[found.end(1) :]
        if _PARTICIPLE.search(before):
            return None  # "who directed the films written by [the writer of X]": the outer words are two hops
        if re.search(r"\band\b", f"{before} {after}"):
            return None  # "which city has treasure island and was once the home of X?": two conditions on one answer
        if not _content(f"{before} {after}"):  # "what is the capital of france?": the description is the whole question
            return None
        if re.search(rf" {_BY} ", phrase) and re.fullmatch(r" [\w'’-]+s ?\??", after):
            return None  # "the movies written by X writers": the name qualifies the plural that ends the question
        if _IDENTITY.match(before) and len(_content(after)) <= 1:
            return None  # "what is the zip code of syracuse ny?": a word after the name is part of it
        return Composition(phrase, f"what is {phrase}?", before, after)
    return None
