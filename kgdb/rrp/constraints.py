"""Constraints on the core answer, as functions over a ranked list of candidate answers: literal constraints
(a year before / after / in, and "last" / "first" / "latest" / "earliest" as argmax / argmin over a year
attached to the candidate or to its CVT node) and answer types ("where" asks for a place, "who" for a person,
"what college" for a school), learned from the graph's own relations on training questions rather than from a
hand list per dataset.

Questions unlike the training data add such a constraint to a core question the ranker answers well ("the
team that *last* won", "the film released *after 2000*"); the right answer is often listed, not first. The
functions here take the candidates in the ranker's order and what the graph holds about them
(kgdb.cypher.answer_evidence) and return a new order; they never add a candidate and never empty the list.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kgdb.reading.constraints import YEAR, Constraints, YearBound, word_stems

if TYPE_CHECKING:
    from kgdb.cypher.answer_evidence import AttachedValue

_VALUE_YEAR = re.compile(rf"(?<![0-9]){YEAR}(?![0-9])")


def years_of(candidate: str, name: str | None, values: Iterable[AttachedValue]) -> list[int]:
    """The years a candidate carries: in its own id or name ("2011 Stanley Cup Finals", "1992-10-03") and in
    the literal values attached to it or its CVT node."""
    texts = [candidate, name or ""] + [v.value for v in values]
    return sorted({int(y) for t in texts for y in _VALUE_YEAR.findall(t)})


def apply_bounds(
    candidates: Sequence[str], years: Mapping[str, Sequence[int]], bounds: Sequence[YearBound]
) -> list[str]:
    """Candidates with a year that meets every bound first, the rest after, each group in the given order."""
    meets = _meeting(candidates, years, bounds)
    return meets + [c for c in candidates if c not in set(meets)]


def apply_extreme(candidates: Sequence[str], years: Mapping[str, Sequence[int]], extreme: str | None) -> list[str]:
    """The candidate(s) with the latest (earliest) year first, then the others in the given order; a
    candidate without a year does not compete. Ties keep the given order."""
    first = _extreme(candidates, years, extreme)
    return first + [c for c in candidates if c not in set(first)]


def apply_literal(candidates: Sequence[str], years: Mapping[str, Sequence[int]], constraints: Constraints) -> list[str]:
    """Bounds, then the extreme among the candidates that met them (or among all, if none did)."""
    ordered = apply_bounds(candidates, years, constraints.bounds)
    if constraints.extreme is None:
        return ordered
    pool = _meeting(ordered, years, constraints.bounds) or ordered
    return apply_extreme(pool, years, constraints.extreme) + [c for c in ordered if c not in set(pool)]


def literal_choice(
    candidates: Sequence[str], years: Mapping[str, Sequence[int]], constraints: Constraints
) -> list[str]:
    """The candidates the literal constraint chooses, in the given order: those with a year meeting every bound,
    and of them (or of all, if none does) the latest / earliest; empty where no year decides."""
    meets = _meeting(candidates, years, constraints.bounds)
    if constraints.extreme is None:
        return meets
    return _extreme(meets or candidates, years, constraints.extreme)


def _meeting(candidates: Sequence[str], years: Mapping[str, Sequence[int]], bounds: Sequence[YearBound]) -> list[str]:
    if not bounds:
        return []
    return [c for c in candidates if any(all(b.holds(y) for b in bounds) for y in years.get(c, ()))]


def _extreme(candidates: Sequence[str], years: Mapping[str, Sequence[int]], extreme: str | None) -> list[str]:
    if extreme is None:
        return []
    dated = {c: (max(years[c]) if extreme == "latest" else min(years[c])) for c in candidates if years.get(c)}
    if not dated:
        return []
    best = max(dated.values()) if extreme == "latest" else min(dated.values())
    return [c for c in candidates if dated.get(c) == best]


@dataclass
class AnswerTypeModel:
    """Per answer cue, the log-odds that a candidate carrying a graph feature (`out:<relation>`,
    `in:<relation>`, `literal`, `cvt`; kgdb.cypher.answer_evidence.type_features) is a gold answer rather
    than another candidate of the same question, counted on training questions. A cue seen in fewer than
    `min_questions` training questions falls back to its wh-word ("what college" -> "what")."""

    weights: dict[str, dict[str, float]] = field(default_factory=dict)
    min_questions: int = 5

    @classmethod
    def fit(
        cls,
        examples: Iterable[tuple[str, Sequence[frozenset[str]], Sequence[bool]]],
        *,
        min_questions: int = 5,
        min_count: int = 3,
        smoothing: float = 1.0,
    ) -> AnswerTypeModel:
        """`examples`: per training question its cue, its candidates' features and which are gold. Only
        questions with both a gold and a non-gold candidate teach anything."""
        gold: dict[str, Counter] = defaultdict(Counter)
        other: dict[str, Counter] = defaultdict(Counter)
        n_gold: Counter = Counter()
        n_other: Counter = Counter()
        questions: Counter = Counter()
        for cue, features, is_gold in examples:
            if not any(is_gold) or all(is_gold):
                continue
            for key in dict.fromkeys((cue, cue.split(" ")[0])):
                questions[key] += 1
                for feats, g in zip(features, is_gold):
                    (gold if g else other)[key].update(feats)
                    (n_gold if g else n_other)[key] += 1
        weights = {}
        for key in questions:
            if questions[key] < min_questions:
                continue
            seen = {f for f in set(gold[key]) | set(other[key]) if gold[key][f] + other[key][f] >= min_count}
            weights[key] = {
                f: math.log((gold[key][f] + smoothing) / (n_gold[key] + 2 * smoothing))
                - math.log((other[key][f] + smoothing) / (n_other[key] + 2 * smoothing))
                for f in seen
            }
        return cls(weights, min_questions)

    def score(self, cue: str, features: frozenset[str]) -> float:
        table = self.weights.get(cue) or self.weights.get(cue.split(" ")[0]) or {}
        return sum(table.get(f, 0.0) for f in features)

    def rerank(
        self, cue: str, candidates: Sequence[str], features: Mapping[str, frozenset[str]], *, margin: float = 0.0
    ) -> list[str]:
        """Candidates by type score, best first; one that is not better than the first by more than `margin`
        keeps its place behind it (the ranker's order decides among fitting candidates)."""
        if not candidates:
            return []
        scores = {c: self.score(cue, features.get(c, frozenset())) for c in candidates}
        top = scores[candidates[0]]
        if all(scores[c] <= top + margin for c in candidates):
            return list(candidates)
        return sorted(candidates, key=lambda c: -scores[c])

    def to_json(self) -> dict:
        return {"min_questions": self.min_questions, "weights": self.weights}


def relation_words(relation: str) -> set[str]:
    """The stems of the words a relation's own name writes (its last part: `education.university.
    number_of_postgraduates` writes "number", "postgraduates")."""
    return word_stems(relation.split(":", 1)[-1].rsplit(".", 1)[-1])


def apply_attributes(
    candidates: Sequence[str], relations: Mapping[str, Iterable[str]], asked: Iterable[str]
) -> list[str]:
    """Candidates whose own relationships (`relations`: `out:` / `in:` relation types, as `type_features`
    reads them) name more of the `asked` word stems first, the rest after, each group in the given order.
    Only words that some candidates' relations name and others' do not count: an attribute every candidate
    has tells nothing."""
    stems = set(asked)
    named = {c: stems & {s for r in relations.get(c, ()) for s in relation_words(r)} for c in candidates}
    common = set.intersection(*named.values()) if named else set()
    count = {c: len(named[c] - common) for c in candidates}
    return sorted(candidates, key=lambda c: -count[c])
