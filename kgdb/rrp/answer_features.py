"""What the answer model reads of one question's answers: a row of numbers per candidate answer, made from
the question as read (`QuestionReading`) and the paths that reached the answer (`Gathered`), never from the
question's text. numpy only, so answering keeps the cold start of the portable ranker.

The candidates are the answers in the order the path ranker and the tie features give them
(`kgdb.rrp.answering.answers_of`); the model (`kgdb.rrp.answer_model`) orders them again and says how sure
it is of each. `FEATURES` names the columns: what `kgdb ask --explain` and the model's config list.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from kgdb.reading.constraints import word_stems
from kgdb.rrp.answering import Gathered, GroundedPath, select

FEATURES = (
    # the question
    "answers",  # log(1 + the number of candidate answers)
    "ends",  # log(1 + the number of entities any answer path reaches)
    "top_score",  # the best path score
    "margin",  # the best score less the best score of a path to an entity outside the candidates
    "readings",  # log(1 + the number of relation paths that reach an answer)
    "second_reading",  # the best score of a relation path other than the best one
    "top_share",  # the best relation path's share of the summed scores of all of them
    "joint",  # the answers were read from several topics together
    "composed",  # the plan read the question as a composition
    "linked",  # the topics were linked from the text (not given)
    "link_score",  # the best link score of a chosen topic (1 for given topics)
    "topics",  # the number of topics
    "literal",  # the question sets a year bound or asks for the first / last
    "asks_time",  # "when", "what year"
    "asks_entity",  # "who", "where"
    "notes",  # log(1 + the notes retrieval made)
    # the answer
    "first",  # first in the path ranker's order
    "position",  # 1 / (1 + its place in that order)
    "best_share",  # the share of the best-scored paths that end at it
    "mass",  # the summed score of the relation paths that reach it
    "mass_share",  # that sum's share of the summed scores of all relation paths
    "answer_readings",  # log(1 + the relation paths that reach it)
    "topic_share",  # the share of the topics a path to it starts from
    "hops",  # the fewest relations on a path to it
    "path_words",  # the share of the question's words (topic names aside) its best path's relations write
    "cue_in_path",  # its best path's relations write the noun the question asks for ("which *country*")
    "through_cvt",  # its best path passes a compound-value node
    "structural",  # the structural reasoner's S2 for it (0 without one)
    "closeness",  # its name's closeness to the question less the best among the candidates
    "closeness_raw",  # its name's closeness to the question (topic names aside)
    "cue_in_types",  # its relationship types in the graph write the noun the question asks for
    "value",  # its name is a number or a date
    "value_when_time",  # a value, and the question asks for a time
    "value_when_entity",  # a value, and the question asks for a person or a place
)

# Candidates the model reads per question, in the ranker's order (the rest keep their place after them).
MAX_CANDIDATES = 50
_VALUE = re.compile(r"^[-+]?\d[\d,.\-/: ]*$|^\d{4}(-\d\d){0,2}(T.*)?$")


def is_value(name: str) -> bool:
    """A name that is a number or a date ("1998", "2004-05-01", "3.5"), not an entity's name."""
    return bool(_VALUE.match(name.strip()))


def answer_features(g: Gathered, answers: Sequence[str], paths: Sequence[GroundedPath]) -> np.ndarray:
    """float64 [len(answers), len(FEATURES)]: one row per candidate answer (`answers`, in the ranker's order,
    at most MAX_CANDIDATES) of the question gathered in `g`, read from the answer paths of its mode (`paths`)."""
    answers = list(answers)[:MAX_CANDIDATES]
    excluded = set(g.found.ids) | g.cvt
    stats = _PathStats([c for c in paths if c.path.answer not in excluded])
    reading = g.reading
    named = {s for t in g.found.ids for s in word_stems(g.names.get(t, t))}
    content = set(reading.content_stems) - named if reading is not None else set()
    cue = set(word_stems(" ".join(reading.asked_noun))) if reading is not None else set()
    close = g.closeness(sorted(set(answers)))
    best_close = max(close.values(), default=0.0)
    question = _question_row(g, answers, stats)
    asks_time, asks_entity = question[FEATURES.index("asks_time")], question[FEATURES.index("asks_entity")]
    rows = []
    for i, a in enumerate(answers):
        value = float(is_value(g.names.get(a, a)))
        path = stats.best_path.get(a)
        mass = sum(stats.reading_score[k] for k in stats.reaches.get(a, ()))
        rows.append(
            question
            + [
                float(i == 0),
                1.0 / (1 + i),
                stats.at_best.count(a) / max(len(stats.at_best), 1),
                mass,
                mass / stats.total,
                math.log1p(len(stats.reaches.get(a, ()))),
                len(stats.starts.get(a, ())) / max(len(g.found.ids), 1),
                float(stats.hops.get(a, 0)),
                _share(content, path),
                float(bool(cue) and path is not None and bool(cue & _relation_stems(path))),
                float(path is not None and bool(set(path.path.entities[1:-1]) & g.cvt)),
                float(g.s2.get(a, 0.0)),
                close[a] - best_close if a in close else 0.0,
                close.get(a, 0.0),
                float(bool(cue) and bool(cue & {s for t in g.answer_types.get(a, ()) for s in word_stems(t)})),
                value,
                value * asks_time,
                value * asks_entity,
            ]
        )
    return np.asarray(rows, dtype=np.float64).reshape(len(answers), len(FEATURES))


class _PathStats:
    """What the answer paths say, per relation path (reading) and per answer."""

    def __init__(self, usable: list[GroundedPath]):
        self.usable = usable
        self.top = max((c.path.score for c in usable), default=0.0)
        self.at_best = [c.path.answer for c in usable if c.path.score == self.top]
        self.reading_score: dict[tuple, float] = {}
        self.reaches: dict[str, set[tuple]] = {}
        self.starts: dict[str, set[str]] = {}
        self.hops: dict[str, int] = {}
        self.best_path: dict[str, GroundedPath] = {}
        for c in usable:
            key = (c.path.relations, c.path.directions)
            self.reading_score[key] = max(self.reading_score.get(key, 0.0), c.path.score)
            a = c.path.answer
            self.reaches.setdefault(a, set()).add(key)
            self.starts.setdefault(a, set()).add(c.path.entities[0])
            self.hops[a] = min(self.hops.get(a, 99), len(c.path.relations))
            if a not in self.best_path or c.path.score > self.best_path[a].path.score:
                self.best_path[a] = c
        self.scores = sorted(self.reading_score.values(), reverse=True)
        self.total = sum(self.scores) or 1.0


def _question_row(g: Gathered, answers: list[str], stats: _PathStats) -> list[float]:
    """The question's columns of FEATURES, the same on every candidate's row."""
    constraints = g.reading.constraints if g.reading is not None else None
    linked = g.found.source == "linked"
    chosen = set(g.found.ids)
    link = max((e.score for e in g.found.linked if e.id in chosen), default=1.0) if linked else 1.0
    candidates = set(answers)
    outside = max((c.path.score for c in stats.usable if c.path.answer not in candidates), default=0.0)
    scores = stats.scores
    return [
        math.log1p(len(answers)),
        math.log1p(len({c.path.answer for c in stats.usable})),
        stats.top,
        stats.top - outside,
        math.log1p(len(stats.reading_score)),
        scores[1] if len(scores) > 1 else 0.0,
        scores[0] / stats.total if scores else 0.0,
        float(bool(g.joint)),
        float(g.composed),
        float(linked),
        float(link),
        float(len(g.found.ids)),
        float(bool(constraints and constraints.literal)),
        float(bool(constraints and constraints.asks_a_time)),
        float(bool(constraints and constraints.cue in ("who", "where"))),
        math.log1p(len(g.notes)),
    ]


def _relation_stems(path: GroundedPath) -> set[str]:
    return {s for r in path.path.relations for s in word_stems(r)}


def _share(stems: set[str], path: GroundedPath | None) -> float:
    if not stems or path is None:
        return 0.0
    return len(stems & _relation_stems(path)) / len(stems)


def answer_paths(g: Gathered, mode: str, lambda1: float, theta: float) -> list[GroundedPath]:
    """The paths a question's answers come from in `mode` (what `answers_of` reads)."""
    if mode == "planner" or g.joint:
        return list(g.joint or g.planned)
    return select(mode, g.planned, g.structural, g.s2, g.found.ids, g.cvt, lambda1, theta)
