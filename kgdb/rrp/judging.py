"""A question's answers judged: the candidates in the path ranker's order (`answers_of`) read by the answer
model (`kgdb.rrp.answer_model`), which orders them and gives each a calibrated probability, and the
question a confidence that its first answer is right. What `RelationPathRetriever` answers with and what
`kgdb eval rrp` scores: one function, so both answer alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kgdb.errors import InputError
from kgdb.rrp.answer_features import answer_features, answer_paths
from kgdb.rrp.answer_model import DEFAULT_DIR, AnswerModel, judge, shipped_model
from kgdb.rrp.answering import Gathered, answers_of


@dataclass(frozen=True)
class JudgedAnswers:
    answers: list[str]  # entity ids, first answer first
    probability: dict[str, float] = field(default_factory=dict)  # id -> calibrated P(right); empty: no model
    confidence: float | None = None  # P(the first answer is right); None: no model
    min_confidence: float | None = None  # below it the answer is marked "not sure"
    separated_by: str | None = None  # the feature that put the first answer above the second

    @property
    def sure(self) -> bool | None:
        if self.confidence is None or self.min_confidence is None:
            return None
        return self.confidence >= self.min_confidence

    def to_json(self) -> dict:
        return {
            "confidence": self.confidence,
            "min_confidence": self.min_confidence,
            "sure": self.sure,
            "separated_by": self.separated_by,
            "probability": self.probability,
        }


def answer_model(setting: str) -> AnswerModel | None:
    """The model `Settings.answer_model` names: "default" (shipped; None where it is absent), "none", or a
    directory."""
    if setting == "none":
        return None
    if setting == "default":
        return shipped_model(DEFAULT_DIR)
    model = shipped_model(Path(setting))
    if model is None:
        raise InputError("no answer model (model.json) in this directory", path=setting)
    return model


def judged_answers(g: Gathered, mode: str, lambda1: float, theta: float, model: AnswerModel | None) -> JudgedAnswers:
    """The answers of the question gathered in `g`, judged by `model` (None: the ranker's order, unjudged)."""
    ranked = answers_of(mode, g, lambda1, theta)
    if model is None or not ranked:
        return JudgedAnswers(ranked)
    x = answer_features(g, ranked, answer_paths(g, mode, lambda1, theta))
    j = judge(model, x)
    read = ranked[: len(x)]
    answers = [read[i] for i in j.order] + ranked[len(x) :]
    probability = {read[i]: round(j.probability[i], 6) for i in range(len(read))}
    return JudgedAnswers(answers, probability, round(j.confidence, 6), model.min_confidence, j.separated_by)
