"""How well a confidence tells right answers from wrong (kgdb/qa/confidence.py), on tiny hand-made sets and a
seeded random one checked against a brute-force count."""

from __future__ import annotations

import numpy as np
import pytest

from kgdb.qa.confidence import COVERAGES, auroc, ece, reliability, risk_coverage, summary


def _pairwise_auroc(confidence, right) -> float:
    pos = [c for c, r in zip(confidence, right) if r]
    neg = [c for c, r in zip(confidence, right) if not r]
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auroc_is_the_pairwise_count_with_ties_as_half(seed):
    rng = np.random.default_rng(seed)
    right = rng.random(120) < 0.4
    confidence = np.round(rng.random(120) * 0.5 + 0.3 * right, 1)  # rounded: many ties, across the classes too
    assert auroc(confidence, right) == pytest.approx(_pairwise_auroc(confidence, right), abs=1e-12)


def test_auroc_on_hand_cases():
    assert auroc([0.9, 0.8, 0.2, 0.1], [True, True, False, False]) == 1.0
    assert auroc([0.1, 0.2, 0.8, 0.9], [True, True, False, False]) == 0.0
    assert auroc([0.5, 0.5, 0.5], [True, False, True]) == 0.5
    assert auroc([0.9, 0.3, 0.6], [True, False, True]) == 1.0
    assert auroc([0.3, 0.9, 0.6], [True, False, True]) == 0.0


def test_auroc_is_none_without_both_right_and_wrong_answers():
    assert auroc([0.2, 0.9], [True, True]) is None
    assert auroc([0.2, 0.9], [False, False]) is None
    assert auroc([], []) is None


def test_ece_is_zero_where_each_bin_is_as_accurate_as_it_is_confident():
    confidence = [0.25] * 4 + [0.5] * 2 + [0.75] * 4
    right = [True, False, False, False] + [True, False] + [True, True, False, True]
    assert ece(confidence, right) == pytest.approx(0.0, abs=1e-12)


def test_ece_and_reliability_on_a_hand_case():
    confidence, right = [0.9, 0.9, 0.25, 0.25], [True, False, False, False]
    # two bins: 0.9 confident and half right (gap 0.4), 0.25 confident and never right (gap 0.25)
    assert ece(confidence, right) == pytest.approx((2 * 0.4 + 2 * 0.25) / 4)
    table = reliability(confidence, right)
    assert [(r["n"], r["accuracy"]) for r in table] == [(2, 0.0), (2, 0.5)]
    assert [r["confidence"] for r in table] == pytest.approx([0.25, 0.9])
    assert all(r["low"] <= r["confidence"] <= r["high"] for r in table)
    assert all(r["high"] - r["low"] == pytest.approx(1 / 15) for r in table)
    # one bin for all: |mean accuracy - mean confidence|
    assert ece(confidence, right, bins=1) == pytest.approx(abs(0.25 - 0.575))
    assert ece([], []) is None


def test_confidence_at_the_ends_falls_in_the_first_and_last_bin():
    table = reliability([0.0, 1.0], [False, True], bins=4)
    assert [(r["low"], r["high"], r["n"]) for r in table] == [(0.0, 0.25, 1), (0.75, 1.0, 1)]


# sorted by confidence: 2 (0.9), 5 (0.8), then the ties 1, 3, 4, 6 (0.5) in the given order, 7, 8, 0, 9
CONFIDENCE = [0.1, 0.5, 0.9, 0.5, 0.5, 0.8, 0.5, 0.3, 0.2, 0.05]
RIGHT = [False, True, True, False, False, False, False, True, False, False]


def test_risk_coverage_is_hit1_of_the_most_confident_share():
    table = risk_coverage(CONFIDENCE, RIGHT, coverages=(10, 20, 30, 40, 80, 100))
    assert list(table) == [10, 20, 30, 40, 80, 100]
    assert table[10] == 100.0 and table[20] == 50.0
    # ties keep the given order: question 1 (right) comes before 3, 4 and 6 (wrong)
    assert table[30] == pytest.approx(200 / 3) and table[40] == 50.0
    assert table[80] == pytest.approx(300 / 8) and table[100] == 30.0


def test_risk_coverage_default_coverages_and_at_least_one_question():
    table = risk_coverage(CONFIDENCE, RIGHT)
    assert list(table) == list(COVERAGES) and table[100] == 30.0
    assert risk_coverage([0.2, 0.9], [False, True], coverages=(1,)) == {1: 100.0}


def test_summary_with_a_threshold_counts_the_unsure_among_wrong_and_right():
    confidence, right = [0.9, 0.8, 0.3, 0.2, 0.6], [True, False, False, True, True]
    out = summary(confidence, right, threshold=0.5)
    # below 0.5: questions 2 (wrong) and 3 (right); one of the two wrong, one of the three right
    assert out["threshold"] == 0.5
    assert out["unsure_wrong"] == pytest.approx(50.0) and out["unsure_right"] == pytest.approx(100 / 3)
    assert out["n"] == 5 and out["auroc"] == pytest.approx(_pairwise_auroc(confidence, right))
    assert out["ece"] == pytest.approx(ece(confidence, right))
    assert out["risk_coverage"] == risk_coverage(confidence, right)
    assert out["reliability"] == reliability(confidence, right)
    # the threshold itself is sure
    assert summary([0.5, 0.4], [True, False], threshold=0.5)["unsure_right"] == 0.0


def test_summary_without_a_threshold_or_without_one_class():
    out = summary([0.9, 0.1], [True, False])
    assert "threshold" not in out and "unsure_wrong" not in out and "unsure_right" not in out
    all_right = summary([0.9, 0.1], [True, True], threshold=0.5)
    assert all_right["unsure_wrong"] is None and all_right["unsure_right"] == 50.0 and all_right["auroc"] is None
