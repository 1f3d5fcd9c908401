"""The answer model: one logistic model over `answer_features` that orders a question's candidate answers and
gives each a calibrated probability of being right, and the question a probability that its first answer is.

Inference is numpy on a few dozen numbers, read from one JSON file (`answer-model/model.json`, its training
settings and figures in `config.json` beside it), so it adds nothing to the cold start. Trained by
`kgdb train answer-model` (`kgdb.rrp.answer_training`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from kgdb.errors import InputError
from kgdb.rrp.answer_features import FEATURES

MODEL_FILE = "model.json"
DEFAULT_DIR = Path(__file__).resolve().parent.parent / "models" / "default" / "answer-model"


@dataclass(frozen=True)
class Platt:
    """p = sigmoid(a * logit + b), fitted on val (Platt scaling: a temperature 1/a and a shift)."""

    a: float = 1.0
    b: float = 0.0

    def __call__(self, logit: np.ndarray) -> np.ndarray:
        return sigmoid(self.a * logit + self.b)


@dataclass(frozen=True)
class Logistic:
    """logit = standardised features @ weights + bias."""

    weights: tuple[float, ...]
    bias: float


@dataclass(frozen=True)
class AnswerModel:
    """Two logistic models over the same standardised features: `answer` orders the candidates (is this answer
    right?), `question` reads the first of them (is the first answer right?); each with its calibration."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    answer: Logistic
    question: Logistic
    answer_calibration: Platt  # a candidate's probability of being a right answer
    question_calibration: Platt  # the first answer's probability of being right
    min_confidence: float  # below it `kgdb ask` says "not sure" (chosen on held-out questions)
    reorder: bool  # order the candidates by the model (chosen on held-out questions); else the ranker's order

    def standardised(self, x: np.ndarray) -> np.ndarray:
        return (x - np.asarray(self.mean)) / np.asarray(self.scale)

    def logits(self, x: np.ndarray, which: Logistic | None = None) -> np.ndarray:
        m = which or self.answer
        return self.standardised(x) @ np.asarray(m.weights) + m.bias

    def contributions(self, x: np.ndarray) -> np.ndarray:
        """[n, features]: each feature's share of each candidate's answer logit (why one is above another)."""
        return self.standardised(x) * np.asarray(self.answer.weights)

    def to_json(self) -> dict:
        out = asdict(self)
        out["features"] = list(self.features)
        return out

    def save(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / MODEL_FILE
        path.write_text(json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, directory: Path = DEFAULT_DIR) -> AnswerModel:
        path = Path(directory) / MODEL_FILE
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(raw, dict):
                raise ValueError("a JSON object is expected")
            if tuple(raw.get("features", ())) != FEATURES:
                raise InputError(
                    "the answer model was trained on other features than this kgdb computes; "
                    "train it again with `kgdb train answer-model`",
                    path=path,
                )
            return cls(
                features=tuple(raw["features"]),
                mean=tuple(raw["mean"]),
                scale=tuple(raw["scale"]),
                answer=Logistic(tuple(raw["answer"]["weights"]), float(raw["answer"]["bias"])),
                question=Logistic(tuple(raw["question"]["weights"]), float(raw["question"]["bias"])),
                answer_calibration=Platt(**raw["answer_calibration"]),
                question_calibration=Platt(**raw["question_calibration"]),
                min_confidence=float(raw["min_confidence"]),
                reorder=bool(raw["reorder"]),
            )
        except InputError:
            raise
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"cannot read the answer model: {exc}", path=path) from exc


@dataclass(frozen=True)
class Judged:
    """A question's candidates as the model judged them: `order` (indices into the candidates, first answer
    first), each candidate's calibrated probability, and the question's confidence (its first answer's)."""

    order: list[int]
    probability: list[float]
    confidence: float
    # the feature that put the first answer above the second; None: nothing did, or the model keeps the ranker's order
    separated_by: str | None


def judge(model: AnswerModel, x: np.ndarray) -> Judged:
    """The model's reading of one question's candidate rows `x` (in the ranker's order)."""
    if len(x) == 0:
        return Judged([], [], 0.0, None)
    logit = model.logits(x)
    # a stable sort keeps the ranker's order among candidates the model cannot tell apart
    order = sorted(range(len(x)), key=lambda i: -logit[i]) if model.reorder else list(range(len(x)))
    first = order[0]
    confidence = float(model.question_calibration(model.logits(x[[first]], model.question))[0])
    probability = model.answer_calibration(logit).tolist()
    separated = None
    if model.reorder and len(order) > 1 and logit[first] > logit[order[1]]:
        diff = model.contributions(x[[first]])[0] - model.contributions(x[[order[1]]])[0]
        separated = model.features[int(np.argmax(diff))]
    return Judged(order, probability, confidence, separated)


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -60, 60)))


_LOADED: dict[Path, AnswerModel] = {}


def shipped_model(directory: Path = DEFAULT_DIR) -> AnswerModel | None:
    """The answer model in `directory` (the one shipped with kgdb by default), read once; None when absent."""
    directory = Path(directory)
    if directory not in _LOADED:
        if not (directory / MODEL_FILE).is_file():
            return None
        _LOADED[directory] = AnswerModel.load(directory)
    return _LOADED[directory]
