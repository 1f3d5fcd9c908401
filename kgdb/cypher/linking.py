"""Entity linking: question text -> ranked topic entities, and explicit topics -> entity ids.

Candidates come from Neo4j (`link_candidates.cypher`): the full-text index on names, queried with
every candidate mention of the question (word n-grams, exact phrase or fuzzy), plus the nearest
names in the entity vector index. They are re-ranked here by

    score = name_match + VECTOR_WEIGHT * cosine(question, name) + DEGREE_WEIGHT * log1p(degree)
            + SPECIFICITY_WEIGHT * specificity(mention)

where name_match is the string similarity between the mention and the name (difflib ratio, so
`jamaican` ~ `Jamaica`), weighted up for longer mentions, and raised to FUZZY_POWER when the name
does not hold the mention's words (a misspelt or inflected mention still matches well; an ordinary
word one letter from a name, "come" ~ "Rome", "wife" ~ "Fife", counts little). Degree is a
popularity prior: questions ask about well-connected entities far more often than about obscure
namesakes. Specificity is the inverse document frequency of the mention's query among the graph's
names, scaled to [0, 1]: a word that matches hundreds of names ("college", "time", "california", or
"come", one letter from many) is more often the question's wording than its topic; a word that
matches one ("greeley" of "greeley colorado") names what is asked about. Candidates matched only
by words inside a longer mention that is exactly some candidate's name rank after all others
(longest match first: "Rarwir Non CVAD" named in full is not the popular "Rarwir").

The graphs hold no aliases, so four readings stand in for them: a demonym or adjective, alone or
ending a mention ("egyptians", "islamic", "eastern european"), also matches the name it derives from
("Egypt", "Islam", "Eastern Europe"; `base_forms`); a
mention starting with an abbreviation ("st nicholas") also matches the name that spells it out
("Saint Nicholas"; `spelt_out`); a short mention ("nra") matches the names it is the initials of among
its own nearest names by meaning (`initials`); a possessive is also read without its 's. And of each
mention's first full-text hits the best-connected join the few the text score ranks first (POPULAR).

`question_topics` is the one linking policy every command shares (retrieve, ask, train, eval).
On a graph loaded with lazy embeddings, candidates without a stored vector get theirs from the
`entity_vectors` callable the seam passes in (encoded and written back on use), so the ranking is
the one an eagerly embedded graph gives; without it their cosine counts as 0.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Callable, Sequence

import numpy as np

from kgdb.cypher import Graph
from kgdb.data.spelling import spelt_alike
from kgdb.errors import DatabaseError, InputError, KgdbError
from kgdb.ids import normalise_mid

MAX_NGRAM = 6
VECTOR_WEIGHT = 0.5
# Chosen on the WebQSP training split on the WebQSP subset and the distractor graph and on MetaQA
# training questions (linking by answerability included, `RankedPathPlanner.choose_topic`); docs/answering.md,
# "Linking by answerability".
DEGREE_WEIGHT = 0.12
SPECIFICITY_WEIGHT = 1.5
FUZZY_POWER = 2.0
# Names counted per mention for its document frequency: beyond it a mention is generic anyway (no
# mention of the WebQSP and MetaQA training questions matched more on their graphs).
DF_CAP = 1000
# The full-text score prefers short names, so a mention's first hits can miss the entity it names
# ("united states" -> "United States Dollar", "... Senate"; "United States of America" comes later):
# of its first POPULAR_POOL hits, the POPULAR best-connected that hold the mention's words join.
POPULAR_POOL = 100
POPULAR = 2
# Words that never start or end a mention (questions are full of them).
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "and",
        "or",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "do",
        "does",
        "did",
        "what",
        "who",
        "whom",
        "whose",
        "which",
        "where",
        "when",
        "why",
        "how",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "his",
        "her",
        "their",
        "there",
        "he",
        "she",
        "they",
        "them",
        "we",
        "you",
        "i",
        "me",
        "my",
        "your",
        "our",
        "has",
        "have",
        "had",
        "will",
        "would",
        "can",
        "could",
        "should",
        "shall",
        "may",
        "might",
        "much",
        "many",
        "name",
        "type",
        "kind",
        "year",
        "years",
        "people",
        "person",
        "play",
        "played",
        "country",
        "countries",
        "city",
        "called",
        "call",
        "named",
        "live",
        "lives",
        "lived",
        "born",
        "die",
        "died",
        "speak",
        "spoke",
        "go",
        "went",
        "get",
        "got",
        "make",
        "made",
        "language",
        "languages",
        "government",
        "official",
        "education",
        "headquarters",
        "located",
        "place",
        "take",
        "plays",
        "follow",
        "most",
        "first",
        "second",
        "last",
        "famous",
    ]
)
# Of those, the words that end many names of several words ("kansas city", "mexico city", "sex and the
# city"): such a gram is a mention. Chosen on the training questions: adding "people", "country",
# "language", "government" and "place" gained nothing and linked "what is serbian language called?"
# to the language instead of WebQSP's Serbia (docs/answering.md, "Linking by answerability").
NAME_ENDS = frozenset({"city"})
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
DERIVED_WEIGHT = 0.7  # chosen on the training questions with the weights above
# Initials and abbreviations ("nra", "usa", "fdr", "gm"): the graphs hold no aliases, but the embedding
# model places a short mention near the name it abbreviates. A one-word mention of at most MAX_INITIALS
# letters (longer abbreviations are mostly names as written: NASA, NATO) is embedded on its own; of its
# INITIALS_K nearest names, those it gives the initials of are candidates, their string match weighted by
# INITIALS_WEIGHT. Embedding it costs ~8 ms on these CPUs, for the ~27% of WebQSP questions with such a word.
MAX_INITIALS = 3
# A numbered name's abbreviation keeps its number, written either way ("WW2", "WWII": World War II): a
# word of two or three letters then a number, in digits or (written in capitals) in Roman numerals.
_NUMBERED = re.compile(r"^[a-z]{2,3}(\d{1,2}|[ivx]{1,6})$")
_ROMAN_LETTERS = re.compile(r"[ivxlcdm]+")
_ROMAN_UNITS = ("", "i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix")
INITIALS_K = 20
INITIALS_WEIGHT = 1.0  # chosen on the training questions (0.5 and 0.7 within 0.2)
SMALL_WORDS = frozenset({"of", "the", "and", "for", "de", "&"})
_TOKEN = re.compile(r"[\w'’.&-]+", re.UNICODE)
_QUOTED = re.compile(r'["“]([^"“”]+)["”]')
_POSSESSIVE = re.compile(r"['’]s$")
_LUCENE_SPECIAL = re.compile(r'([+\-!(){}\[\]^"~*?:\\/&|])')


@dataclass(frozen=True)
class LinkedEntity:
    id: str
    name: str
    score: float
    mention: str | None  # the question words that matched; None for a vector-only candidate


# idx of entities -> their name vectors, filling those the graph lacks (kgdb.pipeline.vectors).
EntityVectorsFn = Callable[[Sequence[int]], "dict[int, np.ndarray]"]
# texts -> their embeddings, one row each (the embedding model's encode)
EncodeFn = Callable[[list[str]], np.ndarray]


class NoTopicError(InputError):
    """The question names no entity of the graph, and no usable topic was given."""


@dataclass(frozen=True)
class Topics:
    """Where retrieval starts, and how the starting entities were found."""

    ids: list[str]
    source: str  # "given" or "linked"
    linked: list[LinkedEntity]  # linker candidates (empty for given topics)
    missing: list[str]  # given topics that are not in the graph (dropped)

    def note(self) -> str | None:
        if not self.missing:
            return None
        named = ", ".join(map(repr, self.missing))
        if self.source == "linked":
            return (
                f"no given topic is an entity of the graph ({named}): the topics were linked from the question instead"
            )
        return f"{len(self.missing)} given topic(s) not in the graph were dropped: {named}"


def question_topics(
    graph: Graph,
    question: str,
    question_embedding: np.ndarray | None,
    topics: list[str] | None = None,
    *,
    top: int = 1,
    entity_vectors: EntityVectorsFn | None = None,
    encode: EncodeFn | None = None,
) -> Topics:
    """The one entity-linking policy of kgdb.

    - Topics given (names or ids, as a user passes with --topic or a question file lists them):
      each is resolved; those the graph lacks are dropped and reported in `missing`.
    - No topics, or none of those given is in the graph (a question file written for a fuller
      graph): the question is linked from its text, and only candidates a mention matched count (a
      vector-only neighbour is not a mention); the best `top` are taken, and the note says why.
      None matched: NoTopicError naming the closest entities by meaning, before anything is written.

    `question_embedding` is only read when the question is linked; None: `encode` makes it.
    """
    missing: list[str] = []
    if topics:
        found = resolve_each(graph, topics)
        ids = list(dict.fromkeys(found.values()))
        missing = [t for t in dict.fromkeys(topics) if t and t.strip() and t not in found]
        if ids:
            return Topics(ids, "given", [], missing)
    given = f"none of the topics {', '.join(map(repr, missing))} is an entity of the graph" if missing else ""
    where = "--topic" if missing else None
    if question_embedding is None:
        if encode is None:  # a caller with nothing to read the question's text with
            raise NoTopicError(given or "no topic given and no way to link the question", path=where)
        question_embedding = encode([question])[0]
    linked = link_entities(
        graph, question, question_embedding, k=max(5, top), entity_vectors=entity_vectors, encode=encode
    )
    mentioned = [e for e in linked if e.mention]
    if not mentioned:
        near = ", ".join(repr(e.name) for e in linked[:3]) or "none"
        raise NoTopicError(
            (f"{given}, and " if given else "")
            + f"no entity of the graph is mentioned in {question!r} (closest by meaning: {near}); "
            "name one in the question or pass --topic NAME",
            path=where,
        )
    return Topics([e.id for e in mentioned[:top]], "linked", linked, missing)


def existing_entities(graph: Graph, keys: list[str]) -> list[str]:
    """Entity ids of those `keys` (ids or names) that exist in the graph; the rest are dropped."""
    return list(dict.fromkeys(i for i in resolve_each(graph, keys).values()))


def resolve_each(graph: Graph, keys: list[str]) -> dict[str, str]:
    """key -> entity id for each key (id or name) the graph has; one query when all resolve."""
    keys = [k for k in dict.fromkeys(keys) if k and k.strip()]
    if not keys:
        return {}
    try:
        return dict(zip(keys, _resolve(graph, keys)))
    except DatabaseError:
        raise  # a lost server is an error, never "this entity is not in the graph"
    except KgdbError:
        pass  # at least one key is missing: resolve one by one to keep the others
    found = {}
    for key in keys:
        try:
            found[key] = _resolve(graph, [key])[0]
        except DatabaseError:
            raise
        except KgdbError:
            continue
    return found


def _words(text: str) -> list[str]:
    """Lower-cased words as mentions are made of (edge punctuation stripped)."""
    return [w for w in (w.strip(".'’-") for w in _TOKEN.findall(text.lower())) if w]


def capitalised(question: str) -> set[str]:
    """The words written with a capital letter other than the question's first (lower-cased as in
    `_words`): a writer who capitalises marks names that way ("which has a country capital of Grodno?").
    Empty where no word is written in lower case (capitals throughout, or every word capitalised): then
    capitals mark nothing."""
    words = [w for w in (w.strip(".'’-") for w in _TOKEN.findall(question)[1:]) if w]
    if not any(w[:1].islower() for w in words):
        return set()
    return {_POSSESSIVE.sub("", w.lower()) for w in words if w[:1].isupper()}


def written_as_name(question: str, mention: str, written: set[str]) -> bool:
    """Whether `question` writes `mention` as a name: in quotes, or every word but the small ones with a
    capital (`written`: `capitalised(question)`: "Tien Quan Ca", "Governor of Arizona"), not as a word of
    its wording ("the writer who…")."""
    if mention in {" ".join(_words(span)) for span in _QUOTED.findall(question)}:
        return True
    words = {_POSSESSIVE.sub("", w) for w in _words(mention)} - SMALL_WORDS
    return bool(words) and words <= written


def mentions(question: str, max_ngram: int = MAX_NGRAM) -> list[str]:
    """Candidate mentions: each quoted span whole, then word n-grams that neither start nor end with a
    stopword (but may end with one of NAME_ENDS after another word), longest first.
    A quoted span is a title as the asker wrote it ("the composer of "thought of you"", "speak now"),
    whatever words it starts or ends with.
    A gram with a possessive is also taken without it: the name index holds "gretzky", not
    "gretzky's", and a name such as "McDonald's" keeps the form as written."""
    words = _words(question)
    found: dict[str, None] = {q: None for q in (" ".join(_words(span)) for span in _QUOTED.findall(question)) if q}
    for n in range(min(max_ngram, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            for gram in (words[i : i + n], [_POSSESSIVE.sub("", w) for w in words[i : i + n]]):
                if gram[0] not in STOPWORDS and (
                    gram[-1] not in STOPWORDS or (len(gram) > 1 and gram[-1] in NAME_ENDS)
                ):
                    found[" ".join(gram)] = None
    return list(found)


def initials(name: str) -> set[str]:
    """A name's initials, with and without its small words: "National Rifle Association" -> nra,
    "United States of America" -> usa and usoa, "Franklin D. Roosevelt" -> fdr; a name that ends in a
    number also keeps it, written either way: "World War II" -> wwi, wwii and ww2."""
    words = _words(name)
    if len(words) < 2:
        return set()
    found = {_first_letters(words), _first_letters([w for w in words if w not in SMALL_WORDS])}
    *named, number = words
    return found | {_first_letters(named) + form for form in numeral_forms(number)}


def _first_letters(words: list[str]) -> str:
    return "".join(w[0] for w in words)


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


def lucene_query(mention: str) -> str:
    """Exact phrase, or every word fuzzily (edit distance 1 for words of 4+ letters); a number is exact: a
    year one digit off ("2001 fa cup final" for "2000 fa cup final") is another year, not a typo."""
    words = [_LUCENE_SPECIAL.sub(r"\\\1", w) for w in mention.split()]
    phrase = '"' + " ".join(words) + '"'
    fuzzy = " AND ".join(f"{w}~1" if len(w) >= 4 and not w.isdigit() else w for w in words)
    return f"{phrase} OR ({fuzzy})"


def link_entities(
    graph: Graph,
    question: str,
    question_embedding: np.ndarray,
    k: int = 5,
    entity_vectors: EntityVectorsFn | None = None,
    encode: EncodeFn | None = None,
) -> list[LinkedEntity]:
    """The k most likely topic entities of `question`, best first (ties by id: deterministic). Without
    `encode` short mentions are not read as initials."""
    queries, short = _mention_queries(question, with_initials=encode is not None)
    vectors = np.asarray(encode(short), dtype=np.float32).tolist() if short and encode is not None else []
    rows = graph.run(
        "link_candidates",
        mentions=queries,
        initials=[{"mention": g, "vector": v} for g, v in zip(short, vectors)],
        initials_k=INITIALS_K,
        per_mention=10,
        pool=POPULAR_POOL,
        popular=POPULAR,
        df_cap=DF_CAP,
        vector_k=max(10, k),
        question_embedding=np.asarray(question_embedding, dtype=np.float32).tolist(),
    )
    filled = _missing_vector_scores(rows, question_embedding, entity_vectors)
    text_df = {row["mention"]: row["df"] for row in rows if row["kind"] == "name"}
    said = f" {' '.join(_words(question))} "
    best: dict[str, LinkedEntity] = {}
    for row in (_written_whole(r, said) for r in rows):
        score = _candidate_score(row, filled, text_df)
        if score is None:
            continue
        old = best.get(row["id"])
        if old is None or score > old.score:
            best[row["id"]] = LinkedEntity(row["id"], row["name"] or row["id"], round(score, 6), row["mention"])
    below = _inside_exact_names(list(best.values()))
    return sorted(best.values(), key=lambda e: (-min(e.score, below.get(e.id, math.inf)), e.id))[:k]


def _mention_queries(question: str, with_initials: bool) -> tuple[list[dict], list[str]]:
    """The full-text queries of `link_candidates` (each mention by name, and by its derived readings),
    and the short mentions to be read as initials by meaning."""
    grams = mentions(question)
    words = _words(question)
    spoken = {w for verb, w in zip(words, words[1:]) if verb in SPEECH_VERBS}
    queries = [{"mention": g, "query": lucene_query(g), "kind": "name"} for g in grams]
    queries += [
        {"mention": g, "query": " OR ".join(_phrase(f) for f in forms), "kind": "derived"}
        for g in grams
        if g not in spoken and (forms := readings(g))
    ]
    if not with_initials:
        return queries, []
    # a short word right after another word of a name qualifies it ("syracuse ny", "houston tx")
    qualifiers = {w for before, w in zip(words, words[1:]) if before not in STOPWORDS}
    short = [
        g
        for g in grams
        if (2 <= len(g) <= MAX_INITIALS and g.isalpha() and g not in qualifiers) or _numbered(g, question)
    ]
    return queries, short


def _numbered(gram: str, question: str) -> bool:
    """Whether a one-word mention abbreviates a numbered name ("ww2"; "wwii" only as WWII)."""
    found = _NUMBERED.match(gram)
    if not found or _ROMAN_LETTERS.fullmatch(gram):  # "III" is a number, not a name's initials
        return False
    return found.group(1).isdigit() or re.search(rf"\b{re.escape(gram.upper())}\b", question) is not None


def _written_whole(row: dict, said: str) -> dict:
    """`row` read as a mention of its whole name where the question (`said`: its words, space-padded)
    writes that name of several words whole: a title made of words that never start or end a mention
    ("the national anthem There is a Lovely Country") is only found by one of its words ("lovely"),
    whose match to the long name is weak."""
    if row["kind"] not in ("name", "popular") or not row["mention"]:
        return row
    name = " ".join(_words(row["name"] or ""))
    if " " in name and len(name) > len(row["mention"]) and f" {name} " in said:
        return {**row, "mention": name}
    return row


def _missing_vector_scores(
    rows: list[dict], question_embedding: np.ndarray, entity_vectors: EntityVectorsFn | None
) -> dict[int, float]:
    """Cosine to the question of candidates the query returned without a vector score (found by
    text only), from `entity_vectors` when given."""
    unscored = sorted({row["idx"] for row in rows if row["vector_score"] is None and row["idx"] is not None})
    if not unscored or entity_vectors is None:
        return {}
    q = np.asarray(question_embedding, dtype=np.float32)
    return {i: _cosine(v, q) for i, v in entity_vectors(unscored).items()}


def _candidate_score(row: dict, filled: dict[int, float], text_df: dict[str, int]) -> float | None:
    """A candidate row's linking score (name match, vector, degree and specificity), or None where
    the row does not stand for its mention."""
    name, kind, mention = row["name"] or row["id"], row["kind"], row["mention"]
    if kind == "derived":
        said = " ".join(_words(name))
        if said not in readings(mention):
            return None  # only a name that is exactly a base form (a spelt-out form) stands for the mention
        match = DERIVED_WEIGHT * _name_match(said, name)
    elif kind == "initials":
        if mention not in initials(name):
            return None  # a near name by meaning, not one the letters abbreviate
        match = INITIALS_WEIGHT * _name_match(" ".join(_words(name)), name)
    elif kind == "popular" and not holds_mention(name, mention):
        return None  # a well-connected fuzzy namesake ("Iceland" for "ireland") is no better for it
    else:
        match = _name_match(mention, name) if mention else 0.0
    vector_score = row["vector_score"] if row["vector_score"] is not None else filled.get(row["idx"], 0.0)
    score = match + VECTOR_WEIGHT * vector_score + DEGREE_WEIGHT * math.log1p(row["degree"])
    if mention:
        df = row["df"] if row["df"] is not None else text_df.get(mention, 0)
        score += SPECIFICITY_WEIGHT * specificity(df, row["entities"])
    return score


def _inside_exact_names(candidates: list[LinkedEntity]) -> dict[str, float]:
    """Candidates whose mention lies inside a longer mention that is exactly another candidate's
    whole name -> a rank just below that candidate (longest match first; every other order is kept).
    Without it a popular one-word namesake ("Rarwir", degree 809) beat the entity the question names
    in full ("Rarwir Non CVAD", degree 4) on the degree prior: 15% of the planted questions of the
    10M-triple synthetic graph linked the wrong topic."""
    exact: dict[str, float] = {}
    for e in candidates:
        if e.mention and " ".join(_words(e.name)) == e.mention:
            exact[e.mention] = max(exact.get(e.mention, -math.inf), e.score)
    below: dict[str, float] = {}
    for e in candidates:
        covers = [s for x, s in exact.items() if e.mention and len(x) > len(e.mention) and f" {e.mention} " in f" {x} "]
        if covers:
            below[e.id] = max(covers) - 1e-6
    return below


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Neo4j's vector.similarity.cosine as computed here: in [0, 1], (1 + cos) / 2."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return (1.0 + float(a @ b) / norm) / 2.0 if norm else 0.0


def _name_match(mention: str, name: str) -> float:
    """String similarity of mention and name, favouring mentions of several words; a fuzzy match (the
    name does not hold the mention's words) counts as ratio ** FUZZY_POWER."""
    ratio = SequenceMatcher(None, mention, name.lower()).ratio()
    if not holds_mention(name, mention):
        ratio **= FUZZY_POWER
    return ratio * (1.0 + 0.1 * min(len(mention.split()), 3))


def holds_mention(name: str, mention: str) -> bool:
    """Whether the name holds the mention's words (an exact, not a fuzzy, match)."""
    return f" {mention} " in f" {' '.join(_words(name))} "


def names_mention(name: str, mention: str) -> bool:
    """Whether the name is what the mention says: it holds the mention's words, in order if not side by side
    ("1960 olympics" -> 1960 Summer Olympics), or a mention of several words spells it closely ("laua
    hollenbrand" -> Laura Hillenbrand, "katerine fugate"); one word that close is most often another word
    ("isabella" -> "Ernie Sabella"). A numbered abbreviation ("ww2") says the name it gives the initials
    of: its number leaves few others, where plain initials fit many."""
    return (
        _in_order(mention.split(), _words(name))
        or spelt_alike(mention, name.lower())
        or (_NUMBERED.match(mention) is not None and mention in initials(name))
    )


def _in_order(words: list[str], name: list[str]) -> bool:
    """Whether `name` has the `words` in their order, side by side or not (`holds_mention`'s words, apart)."""
    rest = iter(name)
    return all(w in rest for w in words)


def specificity(df: int, entities: int) -> float:
    """1 - log(1 + df) / log(1 + entities), df the names a mention's query matches: near 1 for a
    mention that matches one name, 0 for one that matches them all."""
    return 1.0 - math.log1p(min(df, entities)) / math.log1p(entities) if entities > 0 else 0.0


def resolve_topics(graph: Graph, names_or_ids: list[str]) -> list[str]:
    """Entity ids for topics given by id (`m.02mjmr`, `/m/02mjmr`, or a name-id) or by name.

    A name matches case-sensitively first, then case-insensitively; among namesakes the entity
    with the most relationships wins. Raises KgdbError naming the first key that matches nothing.
    """
    return list(dict.fromkeys(_resolve(graph, names_or_ids)))


def _resolve(graph: Graph, names_or_ids: list[str]) -> list[str]:
    """One id per key, in order (duplicates kept); KgdbError naming the first key that matches nothing."""
    keys = [normalise_mid(k.strip()) for k in names_or_ids]
    rows = graph.run("resolve_topics", keys=[{"key": k, "phrase": _phrase(k)} for k in keys])
    found = {row["key"]: row["id"] for row in rows}
    for original, key in zip(names_or_ids, keys):
        if found.get(key) is None:
            raise KgdbError(f"topic {original!r} matches no entity id or name in the graph")
    return [found[k] for k in keys]


def _phrase(text: str) -> str:
    words = [_LUCENE_SPECIAL.sub(r"\\\1", w) for w in text.split()]
    return '"' + " ".join(words) + '"' if words else ""


def strip_mentions(question: str, names: Sequence[str]) -> str:
    """The question without the topic entity names (so its vector is about the relations asked)."""
    q = question
    for name in sorted((n for n in names if n), key=len, reverse=True):
        q = re.sub(re.escape(name), " ", q, flags=re.IGNORECASE)
    q = " ".join(q.split())
    return q or question
