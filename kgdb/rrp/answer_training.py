"""Training the answer model (`kgdb.rrp.answer_model`) from answer rows (`kgdb eval rrp --rows`): two L2
logistic regressions over `answer_features` fitted by Newton's method, on val questions: the path ranker was
trained on the train splits, and its scores on questions it learnt from are not those unseen questions get
(WebQSP: Hit@1 88 on train, 74.5 on val). Every choice (the strength, the answer order, the calibrations, the
"not sure" threshold) is made on out-of-fold predictions; the test split stays untouched. numpy only; every
choice is written to `config.json` beside the model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kgdb.config import dump_json
from kgdb.errors import InputError
from kgdb.qa.confidence import auroc, summary
from kgdb.rrp.answer_features import FEATURES
from kgdb.rrp.answer_model import AnswerModel, Logistic, Platt, sigmoid

STRENGTHS = (0.01, 0.1, 1.0, 10.0, 100.0)  # L2 strengths tried, per training row
THRESHOLDS = tuple(round(t, 2) for t in np.arange(0.05, 0.96, 0.05))
FOLDS = 5


@dataclass(frozen=True)
class QuestionRows:
    """One question's candidates: rows of `answer_features` in the ranker's order, which are right, its split."""

    qid: str
    source: str  # the rows file it came from
    split: str
    x: np.ndarray
    right: np.ndarray  # bool per candidate


def read_rows(paths: Sequence[Path]) -> list[QuestionRows]:
    """The answer rows of `paths`; a line that is not one (`kgdb eval rrp --rows` writes them) is refused with
    its file and line."""
    out = []
    for path in paths:
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise InputError(f"cannot read the answer rows: {exc}", path=path) from exc
        for n, line in enumerate(lines, start=1):
            out.append(_row(line, Path(path), n))
    return out


def _row(line: str, path: Path, n: int) -> QuestionRows:
    try:
        rec = json.loads(line)
        if not isinstance(rec, dict):
            raise ValueError("a JSON object is expected")
        if rec.get("features") != list(FEATURES):
            raise InputError("rows made with other features than this kgdb computes", path=path, line=n)
        x = np.asarray(rec["x"], float)
        right = np.asarray(rec["right"], bool)
        if len(x) and (x.ndim != 2 or x.shape[1] != len(FEATURES)):
            raise ValueError(f"each row of x must hold {len(FEATURES)} numbers")
        if right.shape != (len(x),):
            raise ValueError(f"{len(x)} candidate rows but {right.size} right/wrong marks")
        return QuestionRows(str(rec["qid"]), path.name, str(rec["split"]), x.reshape(-1, len(FEATURES)), right)
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"not an answer row: {exc}", path=path, line=n) from exc


def fit_logistic(
    x: np.ndarray, y: np.ndarray, strength: float, weight: np.ndarray | None = None, iterations: int = 50
) -> tuple[np.ndarray, float]:
    """Weights and bias minimising the weighted mean log-loss + strength/2 * |w|^2 / n (Newton's method; the bias
    is not penalised; `weight`: one per row, mean 1, None: all 1). `x` is standardised already."""
    n, d = x.shape
    a = np.hstack([x, np.ones((n, 1))])
    v = np.ones(n) if weight is None else np.asarray(weight, float)
    w = np.zeros(d + 1)
    penalty = np.full(d + 1, strength / max(n, 1))
    penalty[-1] = 0.0
    for _ in range(iterations):
        p = sigmoid(a @ w)
        grad = a.T @ (v * (p - y)) / n + penalty * w
        hess = (a * (v * p * (1 - p))[:, None]).T @ a / n + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w[:-1], float(w[-1])


def fit_platt(logit: np.ndarray, y: np.ndarray) -> Platt:
    """a, b of sigmoid(a * logit + b) by maximum likelihood (a tiny penalty keeps a separable set finite)."""
    w, b = fit_logistic(logit.reshape(-1, 1), y.astype(float), strength=1e-3 * max(len(y), 1))
    return Platt(float(w[0]), b)


def train(paths: Sequence[Path], out: Path, *, split: str = "val", folds: int = FOLDS) -> dict:
    """Fit on the rows of `split` (default val: questions the path ranker never trained on, so its scores there
    are what unseen questions get), every choice made on out-of-fold predictions of `folds` deterministic folds:
    the L2 strength, whether the model orders the answers, the Platt calibrations and the "not sure" threshold.
    Writes `model.json` and `config.json` to `out`; returns the config. Deterministic: Newton's method from
    zero weights, folds by question order."""
    rows = [r for r in read_rows(paths) if r.split == split and len(r.x)]
    if len(rows) < folds:
        raise InputError(
            f"fewer than {folds} {split} questions with a candidate answer in the rows given", path="--rows"
        )
    x = np.vstack([r.x for r in rows])
    mean = x.mean(axis=0)
    scale = np.where(x.std(axis=0) > 1e-9, x.std(axis=0), 1.0)
    fold_of = [i % folds for i in range(len(rows))]
    tried = {s: _out_of_fold(rows, fold_of, folds, mean, scale, s) for s in STRENGTHS}
    strength = max(STRENGTHS, key=lambda s: (round(tried[s]["auroc"] or 0.0, 4), s))
    oof = tried[strength]
    ranker_hit1 = 100 * float(np.mean([r.right[0] for r in rows]))
    reorder = oof["model_hit1"] > ranker_hit1
    first_logit, first_right = (
        oof["first_logit" if reorder else "ranker_first_logit"],
        oof["first_right" if reorder else "ranker_first_right"],
    )
    question_cal = fit_platt(first_logit, first_right)
    answer_cal = fit_platt(oof["all_logit"], oof["all_right"])
    confidence = question_cal(first_logit)
    weight = _file_weights(rows)
    threshold = max(THRESHOLDS, key=lambda t: (_agreement(confidence, first_right, weight, t), -t))
    answer, question = _fit_both_from(rows, _split_rows(rows, (x - mean) / scale), strength, reorder)
    model = AnswerModel(
        FEATURES,
        tuple(map(float, mean)),
        tuple(map(float, scale)),
        answer,
        question,
        answer_cal,
        question_cal,
        float(threshold),
        reorder,
    )
    model.save(out)
    config = {
        "features": list(FEATURES),
        "rows": [Path(p).name for p in paths],
        "split": split,
        "questions": len(rows),
        "candidates": int(len(x)),
        "folds": folds,
        "strength": strength,
        "strength_rule": "the best out-of-fold AUROC of the first answer's confidence, then the stronger penalty",
        "strengths": {str(s): {k: tried[s][k] for k in ("auroc", "model_hit1")} for s in STRENGTHS},
        "reorder": reorder,
        "reorder_rule": "the model orders the answers when its out-of-fold Hit@1 beats the path ranker's order",
        "ranker_order_hit1": ranker_hit1,
        "min_confidence": threshold,
        "threshold_rule": "where 'sure' agrees most often with a right first answer and 'not sure' with a wrong one, "
        "out of fold, every rows file weighing the same",
        "out_of_fold": summary(confidence, first_right, threshold),
        "out_of_fold_per_file": _per_file(rows, confidence, first_right, threshold),
        "answer_weights": dict(zip(FEATURES, answer.weights)),
        "question_weights": dict(zip(FEATURES, question.weights)),
    }
    dump_json(config, out / "config.json")
    return config


def _file_weights(rows: list[QuestionRows]) -> np.ndarray:
    """One weight per question, mean 1, so that every rows file weighs the same in all."""
    count: dict[str, int] = {}
    for r in rows:
        count[r.source] = count.get(r.source, 0) + 1
    w = np.array([1.0 / count[r.source] for r in rows])
    return w / w.mean()


def _split_rows(rows: list[QuestionRows], z: np.ndarray) -> list[np.ndarray]:
    bounds = np.cumsum([0] + [len(r.x) for r in rows])
    return [z[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _first(r: QuestionRows, z: np.ndarray, answer: Logistic, reorder: bool) -> tuple[np.ndarray, bool]:
    """The standardised row of the question's first answer and whether it is right."""
    i = int(np.argmax(z @ np.asarray(answer.weights))) if reorder else 0
    # argmax keeps the first of equal logits: the ranker's order among those the model cannot tell apart
    return z[i], bool(r.right[i])


def _out_of_fold(
    rows: list[QuestionRows], fold_of: list[int], folds: int, mean: np.ndarray, scale: np.ndarray, strength: float
) -> dict:
    """Each question's logits from the models fitted without its fold, in both answer orders."""
    n = len(rows)
    z_rows = _split_rows(rows, (np.vstack([r.x for r in rows]) - mean) / scale)
    first_logit, first_right = np.zeros(n), np.zeros(n, bool)
    ranker_logit, ranker_right = np.zeros(n), np.zeros(n, bool)
    all_logit = [np.zeros(0)] * n
    for k in range(folds):
        fit = [i for i in range(n) if fold_of[i] != k]
        mine = [rows[i] for i in fit]
        answer, question = _fit_both_from(mine, [z_rows[i] for i in fit], strength, True)
        _, ranker_question = _fit_both_from(mine, [z_rows[i] for i in fit], strength, False)
        for i in (i for i in range(n) if fold_of[i] == k):
            z, r = z_rows[i], rows[i]
            all_logit[i] = z @ np.asarray(answer.weights) + answer.bias
            zf, right = _first(r, z, answer, True)
            first_logit[i], first_right[i] = zf @ np.asarray(question.weights) + question.bias, right
            ranker_logit[i] = z[0] @ np.asarray(ranker_question.weights) + ranker_question.bias
            ranker_right[i] = bool(r.right[0])
    return {
        "auroc": auroc(first_logit, first_right),
        "model_hit1": 100 * float(first_right.mean()),
        "first_logit": first_logit,
        "first_right": first_right,
        "ranker_first_logit": ranker_logit,
        "ranker_first_right": ranker_right,
        "all_logit": np.concatenate(all_logit),
        "all_right": np.concatenate([r.right for r in rows]),
    }


def _fit_both_from(
    rows: list[QuestionRows], z_rows: list[np.ndarray], strength: float, reorder: bool
) -> tuple[Logistic, Logistic]:
    """The answer model on every candidate (standardised rows `z_rows`), then the question model on the first
    candidate of each question in the order the answer model gives (`reorder`) or the ranker's. Each question
    file weighs the same (`_file_weights`): a large easy one (MetaQA) would otherwise set the confidence of all."""
    per_question = _file_weights(rows)
    per_row = np.concatenate([np.full(len(r.x), w) for r, w in zip(rows, per_question)])
    y = np.concatenate([r.right for r in rows]).astype(float)
    w, b = fit_logistic(np.vstack(z_rows), y, strength, per_row / per_row.mean())
    answer = Logistic(tuple(map(float, w)), b)
    firsts = [_first(r, z, answer, reorder) for r, z in zip(rows, z_rows)]
    wq, bq = fit_logistic(
        np.vstack([f[0] for f in firsts]), np.array([f[1] for f in firsts], float), strength, per_question
    )
    return answer, Logistic(tuple(map(float, wq)), bq)


def _per_file(rows: list[QuestionRows], confidence: np.ndarray, right: np.ndarray, threshold: float) -> dict:
    out = {}
    for source in sorted({r.source for r in rows}):
        mine = np.array([r.source == source for r in rows])
        figures = summary(confidence[mine], right[mine], threshold)
        figures.pop("reliability")
        out[source] = {"hit1": 100 * float(right[mine].mean()), **figures}
    return out


def _agreement(confidence: np.ndarray, right: np.ndarray, weight: np.ndarray, threshold: float) -> float:
    """The weighted share of questions where the verdict at `threshold` (sure / not sure) matches right / wrong."""
    return float(np.sum(weight * ((confidence >= threshold) == right)) / np.sum(weight))


def answer_rows(items: Sequence, mode: str, lambda1: float, theta: float, split: str) -> list[dict]:
    """One JSON-ready record per gathered question (`kgdb.rrp.structural.gather_questions`): its candidate
    answers in the ranker's order, their `answer_features` rows and which are right."""
    from kgdb.rrp.answer_features import MAX_CANDIDATES, answer_features, answer_paths
    from kgdb.rrp.answering import answers_of

    out = []
    for it in items:
        g = it.gathered
        if g is None:
            continue
        answers = answers_of(mode, g, lambda1, theta)[:MAX_CANDIDATES]
        x = answer_features(g, answers, answer_paths(g, mode, lambda1, theta))
        out.append(
            {
                "qid": it.qid,
                "split": split,
                "features": list(FEATURES),
                "candidates": answers,
                "x": x.round(6).tolist(),
                "right": [a in it.gold for a in answers],
            }
        )
    return out
