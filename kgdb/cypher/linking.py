"""Entity linking: a question's mentions (`kgdb.reading`) -> ranked topic entities, and explicit topics -> entity ids.

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

The graphs hold no aliases, so four readings stand in for them (the question's side is read by
`kgdb.reading`: its mentions, and the rules comparing a mention with a name): a demonym or adjective, alone or
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
from difflib import SequenceMatcher
from typing import Callable, Sequence

import numpy as np

from kgdb.cypher import Graph
from kgdb.errors import DatabaseError, InputError, KgdbError
from kgdb.ids import normalise_mid
from kgdb.reading import LinkedEntity, QuestionReading, Topics
from kgdb.reading.mentions import Mentions
from kgdb.reading.names import holds_mention, initials, readings
from kgdb.reading.question import EncodeFn
from kgdb.reading.words import words

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
DERIVED_WEIGHT = 0.7  # chosen on the training questions with the weights above
# A short mention's INITIALS_K nearest names by meaning are read for the initials it may give
# (`kgdb.reading.mentions.MAX_INITIALS`); those it abbreviates are candidates, weighted by INITIALS_WEIGHT.
INITIALS_K = 20
INITIALS_WEIGHT = 1.0  # chosen on the training questions (0.5 and 0.7 within 0.2)
_LUCENE_SPECIAL = re.compile(r'([+\-!(){}\[\]^"~*?:\\/&|])')


# idx of entities -> their name vectors, filling those the graph lacks (kgdb.pipeline.vectors).
EntityVectorsFn = Callable[[Sequence[int]], "dict[int, np.ndarray]"]


class NoTopicError(InputError):
    """The question names no entity of the graph, and no usable topic was given."""


def question_topics(
    graph: Graph,
    reading: QuestionReading,
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
        question_embedding = reading.vector(encode)
    linked = link_entities(
        graph, reading, question_embedding, k=max(5, top), entity_vectors=entity_vectors, encode=encode
    )
    mentioned = [e for e in linked if e.mention]
    if not mentioned:
        near = ", ".join(repr(e.name) for e in linked[:3]) or "none"
        raise NoTopicError(
            (f"{given}, and " if given else "")
            + f"no entity of the graph is mentioned in {reading.text!r} (closest by meaning: {near}); "
            "name one in the question or pass --topic NAME",
            path=where,
        )
    return Topics([e.id for e in mentioned[:top]], "linked", linked, missing)


def topic_names(graph: Graph, found: Topics) -> dict[str, str]:
    """The names of the topics found: from linking's candidates, else read from the graph."""
    from kgdb.cypher.paths import entity_names

    names = {e.id: e.name for e in found.linked if e.id in found.ids}  # linking returned their names
    if len(names) < len(found.ids):
        names = {i: e.name for i, e in entity_names(graph, found.ids).items()}
    return names


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


def lucene_query(mention: str) -> str:
    """Exact phrase, or every word fuzzily (edit distance 1 for words of 4+ letters); a number is exact: a
    year one digit off ("2001 fa cup final" for "2000 fa cup final") is another year, not a typo."""
    words = [_LUCENE_SPECIAL.sub(r"\\\1", w) for w in mention.split()]
    phrase = '"' + " ".join(words) + '"'
    fuzzy = " AND ".join(f"{w}~1" if len(w) >= 4 and not w.isdigit() else w for w in words)
    return f"{phrase} OR ({fuzzy})"


def link_entities(
    graph: Graph,
    reading: QuestionReading,
    question_embedding: np.ndarray,
    k: int = 5,
    entity_vectors: EntityVectorsFn | None = None,
    encode: EncodeFn | None = None,
) -> list[LinkedEntity]:
    """The k most likely topic entities of the question `reading` read, best first (ties by id:
    deterministic). Without `encode` short mentions are not read as initials."""
    queries, short = _mention_queries(reading.mentions, with_initials=encode is not None)
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
    said = reading.mentions.said
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


def _mention_queries(mentions: Mentions, with_initials: bool) -> tuple[list[dict], list[str]]:
    """The full-text queries of `link_candidates` (each mention by name, and by its derived readings),
    and the short mentions to be read as initials by meaning."""
    queries = [{"mention": g, "query": lucene_query(g), "kind": "name"} for g in mentions.grams]
    queries += [
        {"mention": g, "query": " OR ".join(_phrase(f) for f in forms), "kind": "derived"}
        for g, forms in mentions.derived
    ]
    return queries, list(mentions.short) if with_initials else []


def _written_whole(row: dict, said: str) -> dict:
    """`row` read as a mention of its whole name where the question (`said`: its words, space-padded)
    writes that name of several words whole: a title made of words that never start or end a mention
    ("the national anthem There is a Lovely Country") is only found by one of its words ("lovely"),
    whose match to the long name is weak."""
    if row["kind"] not in ("name", "popular") or not row["mention"]:
        return row
    name = " ".join(words(row["name"] or ""))
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
        said = " ".join(words(name))
        if said not in readings(mention):
            return None  # only a name that is exactly a base form (a spelt-out form) stands for the mention
        match = DERIVED_WEIGHT * _name_match(said, name)
    elif kind == "initials":
        if mention not in initials(name):
            return None  # a near name by meaning, not one the letters abbreviate
        match = INITIALS_WEIGHT * _name_match(" ".join(words(name)), name)
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
        if e.mention and " ".join(words(e.name)) == e.mention:
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
