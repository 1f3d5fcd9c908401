"""The answer model (kgdb/rrp/answer_model.py) and its training (kgdb/rrp/answer_training.py): the logistic
fits, training on synthetic answer rows, reading rows and models, and `judge` on hand-weighted models."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kgdb.errors import InputError
from kgdb.rrp.answer_features import FEATURES
from kgdb.rrp.answer_model import MODEL_FILE, AnswerModel, Logistic, Platt, judge, sigmoid
from kgdb.rrp.answer_training import STRENGTHS, THRESHOLDS, fit_logistic, fit_platt, read_rows, train

D = len(FEATURES)


def _weights(**named: float) -> tuple[float, ...]:
    w = [0.0] * D
    for name, value in named.items():
        w[FEATURES.index(name)] = value
    return tuple(w)


def _model(answer: dict, *, reorder=True, question: dict | None = None, q_bias=0.0, mean=0.0, scale=1.0, **cal):
    return AnswerModel(
        FEATURES,
        (mean,) * D,
        (scale,) * D,
        Logistic(_weights(**answer), 0.0),
        Logistic(_weights(**(question or {})), q_bias),
        cal.get("answer_calibration", Platt()),
        cal.get("question_calibration", Platt()),
        0.5,
        reorder,
    )


def _rows(**columns: list[float]) -> np.ndarray:
    n = len(next(iter(columns.values())))
    x = np.zeros((n, D))
    for name, values in columns.items():
        x[:, FEATURES.index(name)] = values
    return x


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_fit_logistic_on_a_separable_set_orders_the_classes(sign):
    x = np.array([[-2.0], [-1.5], [-1.0], [-0.5], [0.5], [1.0], [1.5], [2.0]])
    y = (sign * x[:, 0] > 0).astype(float)
    w, b = fit_logistic(x, y, strength=1.0)
    assert np.sign(w[0]) == sign
    p = sigmoid(x @ w + b)
    assert p[y == 1].min() > 0.5 > p[y == 0].max()


def test_fit_logistic_penalises_the_weights_and_not_the_bias():
    x = np.array([[-1.0], [-0.5], [0.5], [1.0]] * 5)
    y = (x[:, 0] > 0).astype(float)
    weak, _ = fit_logistic(x, y, strength=0.01)
    strong, _ = fit_logistic(x, y, strength=100.0)
    assert weak[0] > strong[0] > 0
    # a feature that says nothing: the bias alone fits the base rate, however strong the penalty
    flat = np.zeros((10, 1))
    for strength in (0.01, 1000.0):
        w, b = fit_logistic(flat, np.array([1.0] * 8 + [0.0] * 2), strength=strength)
        assert b == pytest.approx(math.log(4), abs=1e-6) and w[0] == pytest.approx(0.0, abs=1e-9)


def test_fit_platt_recovers_the_scale_of_the_logits():
    rng = np.random.default_rng(7)
    logit = rng.normal(0.0, 1.5, 4000)
    y = rng.random(4000) < sigmoid(2.0 * logit)
    platt = fit_platt(logit, y)
    assert platt.a == pytest.approx(2.0, abs=0.25) and platt.b == pytest.approx(0.0, abs=0.15)
    assert platt(np.array([0.5]))[0] == pytest.approx(sigmoid(platt.a * 0.5 + platt.b))


def _write_rows(path, seed: int, questions: int, *, split="val", ranker_right=False) -> None:
    """Answer rows as `answer_rows` writes them: "closeness" tells the right candidate (noisily); the ranker puts
    it first only by chance (or always, with `ranker_right`)."""
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(questions):
        k = int(rng.integers(2, 6))
        right = np.zeros(k, bool)
        right[0 if ranker_right else int(rng.integers(k))] = True
        x = rng.normal(0.0, 1.0, (k, D))
        x[:, FEATURES.index("closeness")] += 1.5 * right
        x[:, FEATURES.index("position")] = 1.0 / (1 + np.arange(k))
        x[:, FEATURES.index("first")] = np.arange(k) == 0
        record = {"qid": f"{split}-{seed}-{q}", "split": split, "features": list(FEATURES)}
        record |= {"candidates": [f"m.{q}.{i}" for i in range(k)], "x": x.round(6).tolist(), "right": right.tolist()}
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_train_writes_a_model_and_its_choices(tmp_path):
    files = [tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "train.jsonl"]
    _write_rows(files[0], 1, 30)
    _write_rows(files[1], 2, 30)
    _write_rows(files[2], 3, 40, split="train", ranker_right=True)  # another split: not read
    config = train(files, tmp_path / "model")
    assert (tmp_path / "model" / MODEL_FILE).is_file() and (tmp_path / "model" / "config.json").is_file()
    assert json.loads((tmp_path / "model" / "config.json").read_text()) == json.loads(json.dumps(config))
    assert config["questions"] == 60 and config["split"] == "val"
    assert config["strength"] in STRENGTHS and config["min_confidence"] in THRESHOLDS
    assert config["reorder"] is True  # closeness finds the right answer more often than the ranker's order
    oof = config["out_of_fold"]
    assert oof["n"] == 60 and oof["threshold"] == config["min_confidence"] and oof["auroc"] is not None
    assert set(config["out_of_fold_per_file"]) == {"a.jsonl", "b.jsonl"}
    assert max(config["answer_weights"], key=lambda f: abs(config["answer_weights"][f])) == "closeness"
    assert config["answer_weights"]["closeness"] > 0

    model = AnswerModel.load(tmp_path / "model")
    assert model.features == FEATURES and model.reorder is True
    assert model.min_confidence == config["min_confidence"]
    assert dict(zip(FEATURES, model.answer.weights)) == config["answer_weights"]

    train(files, tmp_path / "again")
    assert (tmp_path / "again" / MODEL_FILE).read_bytes() == (tmp_path / "model" / MODEL_FILE).read_bytes()


def test_train_keeps_the_rankers_order_when_the_model_cannot_beat_it(tmp_path):
    _write_rows(tmp_path / "rows.jsonl", 4, 60, ranker_right=True)
    config = train([tmp_path / "rows.jsonl"], tmp_path / "model")
    assert config["reorder"] is False and config["ranker_order_hit1"] == 100.0
    assert AnswerModel.load(tmp_path / "model").reorder is False


def test_train_needs_a_question_per_fold(tmp_path):
    _write_rows(tmp_path / "rows.jsonl", 5, 3)
    with pytest.raises(InputError, match="fewer than 5 val questions"):
        train([tmp_path / "rows.jsonl"], tmp_path / "model")


def test_read_rows_names_the_file_and_line_at_fault(tmp_path):
    path = tmp_path / "rows.jsonl"
    _write_rows(path, 6, 2)
    good = path.read_text().splitlines()
    assert [r.qid for r in read_rows([path])] == ["val-6-0", "val-6-1"] and read_rows([path])[0].source == "rows.jsonl"
    path.write_text(good[0] + "\n{not json\n")
    with pytest.raises(InputError, match=f"{path}:2"):
        read_rows([path])
    narrow = dict(json.loads(good[1]), x=[[0.0, 1.0, 2.0]])
    path.write_text(good[0] + "\n" + json.dumps(narrow) + "\n")
    with pytest.raises(InputError, match=f"{path}:2"):
        read_rows([path])
    other = dict(json.loads(good[0]), features=list(FEATURES[:-1]) + ["something_else"])
    path.write_text(json.dumps(other) + "\n")
    with pytest.raises(InputError, match=f"{path}:1.*other features"):
        read_rows([path])


def test_a_model_saved_is_the_model_loaded_and_other_features_are_refused(tmp_path):
    model = _model({"closeness": 1.5, "position": -0.25}, question={"top_score": 2.0}, q_bias=0.3, mean=0.1)
    model.save(tmp_path)
    assert AnswerModel.load(tmp_path) == model
    raw = json.loads((tmp_path / MODEL_FILE).read_text())
    (tmp_path / MODEL_FILE).write_text(json.dumps(dict(raw, features=list(FEATURES[::-1]))))
    with pytest.raises(InputError, match=str(tmp_path / MODEL_FILE)):
        AnswerModel.load(tmp_path)
    (tmp_path / MODEL_FILE).write_text("{")
    with pytest.raises(InputError, match=str(tmp_path / MODEL_FILE)):
        AnswerModel.load(tmp_path)


def test_judge_orders_by_the_answer_logit_and_names_what_separated_the_first_two():
    model = _model({"closeness": 2.0, "position": 1.0})
    x = _rows(closeness=[0.0, 1.0, 0.5], position=[1.0, 0.5, 1 / 3])  # logits 1, 2.5, 1.33
    judged = judge(model, x)
    assert judged.order == [1, 2, 0] and judged.separated_by == "closeness"
    # each candidate's probability, in the candidates' order
    assert judged.probability == pytest.approx(sigmoid(np.array([1.0, 2.5, 1 + 1 / 3])).tolist())
    by_position = judge(model, _rows(closeness=[0.2, 0.2, 0.0], position=[1.0, 0.5, 1 / 3]))
    assert by_position.order == [0, 1, 2] and by_position.separated_by == "position"


def test_judge_keeps_the_given_order_among_equal_logits():
    model = _model({"closeness": 1.0})
    tied = judge(model, _rows(closeness=[0.3, 0.9, 0.3, 0.9]))
    assert tied.order == [1, 3, 0, 2] and tied.separated_by is None
    assert judge(model, _rows(closeness=[0.5] * 3)).order == [0, 1, 2]


def test_judge_without_reordering_keeps_the_rankers_order():
    model = _model({"closeness": 1.0}, reorder=False)
    judged = judge(model, _rows(closeness=[0.1, 0.9, 0.5]))
    assert judged.order == [0, 1, 2] and judged.separated_by is None  # the first is not above the second
    # the model did not order them, so it names no feature even where it scores the first higher
    assert judge(model, _rows(closeness=[0.9, 0.1], position=[1.0, 0.5])).separated_by is None


def test_judge_confidence_is_the_calibrated_question_logit_of_the_first_answer():
    calibration = {"answer_calibration": Platt(0.5, -1.0), "question_calibration": Platt(2.0, 0.1)}
    model = _model({"closeness": 1.0}, question={"top_score": 1.5}, q_bias=-0.5, mean=0.5, scale=2.0, **calibration)
    x = _rows(closeness=[0.0, 3.0], top_score=[0.2, 0.8])
    first_logit = 1.5 * (0.8 - 0.5) / 2.0 - 0.5  # candidate 1 comes first
    judged = judge(model, x)
    assert judged.order == [1, 0]
    assert judged.confidence == pytest.approx(float(sigmoid(2.0 * first_logit + 0.1)))
    kept = judge(_model({"closeness": 1.0}, question={"top_score": 1.5}, reorder=False, **calibration), x)
    assert kept.confidence == pytest.approx(float(sigmoid(2.0 * (1.5 * 0.2) + 0.1)))
    assert judge(model, np.zeros((0, D))) == type(judged)([], [], 0.0, None)
