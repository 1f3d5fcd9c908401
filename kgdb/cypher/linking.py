"""Entity linking: question text -> ranked topic entities, and explicit topics -> entity ids.

Candidates come from Neo4j (`link_candidates.cypher`): the full-text index on names, queried with
every candidate mention of the question (word n-grams, exact phrase or fuzzy), plus the nearest
names in the entity vector index. They are re-ranked here by

    score = name_match + VECTOR_WEIGHT * cosine(question, name) + DEGREE_WEIGHT * log1p(degree)

where name_match is the string similarity between the mention and the name (difflib ratio, so
`jamaican` ~ `Jamaica`), weighted up for longer mentions. Degree is a popularity prior: questions
ask about well-connected entities far more often than about obscure namesakes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np

from kgdb.cypher import Graph
from kgdb.errors import KgdbError

MAX_NGRAM = 6
VECTOR_WEIGHT = 0.5
DEGREE_WEIGHT = 0.05
# Words that never start or end a mention (questions are full of them).
STOPWORDS = frozenset(
    """a an the of in on at to for from by with and or is are was were be been being do does did
    what who whom whose which where when why how that this these those it its his her their there
    he she they them we you i me my your our has have had will would can could should shall may
    might much many name type kind year years people person play played country countries city
    called call named live lives lived born die died speak spoke go went get got make made
    language languages government official education headquarters located place take plays follow
    most first second last famous""".split()
)
_TOKEN = re.compile(r"[\w'’.&-]+", re.UNICODE)
_LUCENE_SPECIAL = re.compile(r'([+\-!(){}\[\]^"~*?:\\/&|])')


@dataclass(frozen=True)
class LinkedEntity:
    id: str
    name: str
    score: float
    mention: str | None  # the question words that matched; None for a vector-only candidate


def mentions(question: str, max_ngram: int = MAX_NGRAM) -> list[str]:
    """Candidate mentions: word n-grams that neither start nor end with a stopword, longest first."""
    words = [w.strip(".'’-") for w in _TOKEN.findall(question.lower())]
    words = [w for w in words if w]
    found: dict[str, None] = {}
    for n in range(min(max_ngram, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            gram = words[i : i + n]
            if gram[0] in STOPWORDS or gram[-1] in STOPWORDS:
                continue
            found[" ".join(gram)] = None
    return list(found)


def lucene_query(mention: str) -> str:
    """Exact phrase, or every word fuzzily (edit distance 1 for words of 4+ letters)."""
    words = [_LUCENE_SPECIAL.sub(r"\\\1", w) for w in mention.split()]
    phrase = '"' + " ".join(words) + '"'
    fuzzy = " AND ".join(f"{w}~1" if len(w) >= 4 else w for w in words)
    return f"{phrase} OR ({fuzzy})"


def link_entities(graph: Graph, question: str, question_embedding: np.ndarray, k: int = 5) -> list[LinkedEntity]:
    """The k most likely topic entities of `question`, best first (ties by id: deterministic)."""
    grams = mentions(question)
    rows = graph.run(
        "link_candidates",
        mentions=[{"mention": g, "query": lucene_query(g)} for g in grams],
        per_mention=10,
        vector_k=max(10, k),
        question_embedding=np.asarray(question_embedding, dtype=np.float32).tolist(),
    )
    best: dict[str, LinkedEntity] = {}
    for row in rows:
        name = row["name"] or row["id"]
        match = _name_match(row["mention"], name) if row["mention"] else 0.0
        score = match + VECTOR_WEIGHT * row["vector_score"] + DEGREE_WEIGHT * math.log1p(row["degree"])
        old = best.get(row["id"])
        if old is None or score > old.score:
            best[row["id"]] = LinkedEntity(row["id"], name, round(score, 6), row["mention"])
    return sorted(best.values(), key=lambda e: (-e.score, e.id))[:k]


def _name_match(mention: str, name: str) -> float:
    """String similarity of mention and name, favouring mentions of several words."""
    ratio = SequenceMatcher(None, mention, name.lower()).ratio()
    return ratio * (1.0 + 0.1 * min(len(mention.split()), 3))


def resolve_topics(graph: Graph, names_or_ids: list[str]) -> list[str]:
    """Entity ids for topics given by id (`m.02mjmr`, `/m/02mjmr`, or a name-id) or by name.

    A name matches case-sensitively first, then case-insensitively; among namesakes the entity
    with the most relationships wins. Raises KgdbError naming the first key that matches nothing.
    """
    from kgdb.loaders.writer import normalise_mid  # numpy-only module; shares the mid rule

    keys = [normalise_mid(k.strip()) for k in names_or_ids]
    rows = graph.run("resolve_topics", keys=[{"key": k, "phrase": _phrase(k)} for k in keys])
    found = {row["key"]: row["id"] for row in rows}
    for original, key in zip(names_or_ids, keys):
        if found.get(key) is None:
            raise KgdbError(f"topic {original!r} matches no entity id or name in the graph")
    return list(dict.fromkeys(found[k] for k in keys))


def _phrase(text: str) -> str:
    words = [_LUCENE_SPECIAL.sub(r"\\\1", w) for w in text.split()]
    return '"' + " ".join(words) + '"' if words else ""
