"""`QuestionReading`: a question read once, before anything is retrieved.

`read_question` takes the text apart by rule: the mentions linking looks up, the words the writer
capitalises or quotes, the literal constraints and the answer-type cue, the stems of its words. Linking
adds the graph's candidates for the mentions and the topics chosen (`QuestionReading.linked`). From
then on retrieval, planning and answering read the question only through the reading: its fields, the
rules below that judge a mention, and its encodings. The text reaches a model only through
`QuestionReading.encoded` (a sentence encoder's vector and the words a planner hashes, made from the
question without some names, or from a part of a composed question), each made once per question.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from kgdb.reading.composition import Composition, split_composition
from kgdb.reading.constraints import Constraints, parse_constraints, word_stems
from kgdb.reading.mentions import Mentions, read_mentions
from kgdb.reading.words import FUNCTION_WORDS, capitalised, quoted, strip_mentions, words, written_as_name

# texts -> their embeddings, one row each (the embedding model's encode)
EncodeFn = Callable[[list[str]], np.ndarray]

# A question whose first question word is "where" or "who" asks for an entity (a place, a person),
# never for a value: a relation path whose answers are all literal values (dates, numbers) does not
# answer it. "where did george orwell die?" is not his date of death, which the ranker scored above his
# place of death. "whose" is left out: it is mostly relative ("when did the movies release whose
# actors …"). The WebQSP and MetaQA train and val splits hold no such question whose gold answer is a
# value (`kgdb.rrp.path_ranker.RankedPathPlanner.scored`).
QUESTION_WORD = re.compile(r"\b(what|which|when|where|who|whom|how|why)\b")


def asks_for_an_entity(text: str) -> bool:
    first = QUESTION_WORD.search(text.lower())
    return first is not None and first.group(1) in ("where", "who", "whom")


@dataclass(frozen=True)
class LinkedEntity:
    id: str
    name: str
    score: float
    mention: str | None  # the question words that matched; None for a vector-only candidate


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


@dataclass(frozen=True)
class Encoded:
    """What a model reads of one view of the question: `text` (for the encoders only: a planner hashes
    its words), its sentence vector, and whether it asks for an entity (`asks_for_an_entity`)."""

    text: str
    vector: np.ndarray
    asks_for_an_entity: bool


@dataclass(frozen=True)
class QuestionReading:
    """One question, read. `text` is kept to show and to encode; nothing downstream reads it otherwise."""

    text: str
    mentions: Mentions
    capitalised: frozenset[str]  # the words written with a capital by a writer who capitalises names
    quoted: tuple[str, ...]  # the spans it quotes
    constraints: Constraints
    stems: frozenset[str]  # `word_stems` of the question
    topics: Topics | None = None  # linking's candidates and the topics chosen (None before linking)
    names: Mapping[str, str] = field(default_factory=dict)  # topic id -> name
    # what the encoders made of it, and the compositions read around a topic's name: each made once
    _made: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def cue(self) -> str:
        """The answer-type cue: the wh-word, with the noun after "what" / "which" ("what college")."""
        return self.constraints.cue

    @property
    def asked_noun(self) -> list[str]:
        """The noun of "what state …", "which politician …": the kind of thing asked for."""
        return self.constraints.cue.split()[1:]

    @property
    def cue_stems(self) -> set[str]:
        return word_stems(self.constraints.cue)

    @property
    def content_stems(self) -> frozenset[str]:
        """The stems of its words other than function words (question words among them): what a relation path
        or an answer's name may repeat."""
        return frozenset(word_stems(" ".join(w for w in words(self.text) if w not in FUNCTION_WORDS)))

    def linked(self, topics: Topics, names: Mapping[str, str]) -> QuestionReading:
        """This reading with linking's result: the candidates, the topics chosen and their names."""
        return replace(self, topics=topics, names=MappingProxyType(dict(names)))

    def written_as_name(self, mention: str) -> bool:
        """Whether the question writes `mention` as a name: in quotes, or capitalised by a writer who
        capitalises names ("Tien Quan Ca", "Governor of Arizona"), not as a word of its wording."""
        return written_as_name(mention, self.quoted, set(self.capitalised))

    def composition(self, topic_name: str) -> Composition | None:
        """The description around `topic_name`'s mention that composes the question, if any
        (`kgdb.reading.composition`: "where was [the director of avatar] born?")."""
        key = ("composition", topic_name)
        if key not in self._made:
            self._made[key] = split_composition(self.text, topic_name)
        return self._made[key]

    def encoded(
        self,
        encode: EncodeFn,
        without: Sequence[str] = (),
        *,
        part: Composition | None = None,
        answer: str | None = None,
    ) -> Encoded:
        """The question, or a part of a composed question (`part`: its inner question; with `answer`, its
        outer question with `answer` in the description's place), without the names `without` (so its
        vector is about the relations asked), encoded by `encode`; made once per view and encoder."""
        key = ("encoded", encode, tuple(without), part, answer)
        if key not in self._made:
            text = self.text if part is None else part.inner if answer is None else part.outer(answer)
            plain = strip_mentions(text, list(without))
            self._made[key] = Encoded(plain, np.asarray(encode([plain])[0]), asks_for_an_entity(plain))
        return self._made[key]

    def plain(self, without: Sequence[str] | None = None) -> str:
        """The text an encoder reads where a planner hands it on (the structural reasoner reads the plan's):
        the question as typed, or without the names `without`."""
        key = ("plain", None if without is None else tuple(without))
        if key not in self._made:
            self._made[key] = self.text if without is None else strip_mentions(self.text, list(without))
        return self._made[key]

    def vector(self, encode: EncodeFn) -> np.ndarray:
        """The whole question's sentence vector, names and all (what linking compares names to)."""
        key = ("vector", encode)
        if key not in self._made:
            self._made[key] = np.asarray(encode([self.text])[0])
        return self._made[key]

    def to_json(self) -> dict[str, Any]:
        """What `kgdb ask --json` and `--explain` show of the reading."""
        c = self.constraints
        topics = self.topics
        first = self.names.get(topics.ids[0], topics.ids[0]) if topics is not None and topics.ids else None
        composed = self.composition(first) if first is not None else None
        return {
            "cue": c.cue,
            "constraints": {
                "years": [{"op": b.op, "year": b.year} for b in c.bounds],
                "extreme": c.extreme,
            },
            "written_as_names": sorted(self.capitalised),
            "quoted": list(self.quoted),
            # the description around the first topic's name that composes the question, if any
            "composition": {"description": composed.phrase, "inner_question": composed.inner} if composed else None,
            "topics": {
                "source": topics.source,
                "chosen": [{"id": i, "name": self.names.get(i, i)} for i in topics.ids],
                "candidates": [
                    {"id": e.id, "name": e.name, "score": e.score, "mention": e.mention} for e in topics.linked
                ],
                "missing": list(topics.missing),
            }
            if topics is not None
            else None,
        }


def read_question(text: str) -> QuestionReading:
    """The question read by rule, before linking (`QuestionReading.linked` adds the graph's candidates)."""
    constraints = parse_constraints(text)
    return QuestionReading(
        text=text,
        mentions=read_mentions(text),
        capitalised=frozenset(capitalised(text)),
        quoted=tuple(quoted(text)),
        constraints=constraints,
        stems=frozenset(word_stems(text)),
    )
