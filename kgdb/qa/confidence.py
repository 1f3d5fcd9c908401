"""How well a confidence tells right answers from wrong ones: AUROC, expected calibration error, the
reliability table and risk-coverage (Hit@1 of the most confident share of questions). Pure functions of
(confidence, right) pairs, shared by `kgdb eval qa`, `kgdb eval rrp`, training and the benchmarks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

COVERAGES = (50, 60, 70, 80, 90, 100)
CURVE = tuple(range(5, 101, 5))  # the coverages of the risk-coverage curve benchmarks/confidence_plots.py draws
ECE_BINS = 15


def auroc(confidence: ArrayLike, right: ArrayLike) -> float | None:
    """The chance that a right answer is more confident than a wrong one (ties count half); None when all
    answers are right or all wrong."""
    c, y = np.asarray(confidence, float), np.asarray(right, bool)
    pos, neg = c[y], c[~y]
    if not len(pos) or not len(neg):
        return None
    # rank-sum (Mann-Whitney U) with average ranks for ties
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    values = np.concatenate([pos, neg])[order]
    ranks = np.empty(len(values))
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        ranks[i : j + 1] = (i + j) / 2 + 1
        i = j + 1
    pos_ranks = ranks[np.argsort(order, kind="mergesort")][: len(pos)]
    return float((pos_ranks.sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def reliability(confidence: ArrayLike, right: ArrayLike, bins: int = ECE_BINS) -> list[dict]:
    """Per equal-width confidence bin with questions in it: its range, count, mean confidence and accuracy."""
    c, y = np.asarray(confidence, float), np.asarray(right, float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(c, edges[1:-1], right=True), 0, bins - 1)
    out = []
    for b in range(bins):
        inside = which == b
        if inside.any():
            out.append(
                {
                    "low": float(edges[b]),
                    "high": float(edges[b + 1]),
                    "n": int(inside.sum()),
                    "confidence": float(c[inside].mean()),
                    "accuracy": float(y[inside].mean()),
                }
            )
    return out


def ece(confidence: ArrayLike, right: ArrayLike, bins: int = ECE_BINS) -> float | None:
    """Expected calibration error: the count-weighted mean |accuracy - confidence| over `bins` equal bins."""
    n = len(np.asarray(confidence))
    if not n:
        return None
    return float(sum(r["n"] * abs(r["accuracy"] - r["confidence"]) for r in reliability(confidence, right, bins)) / n)


def risk_coverage(confidence: ArrayLike, right: ArrayLike, coverages: Sequence[int] = COVERAGES) -> dict[int, float]:
    """Coverage % -> Hit@1 % of the most confident `coverage` % of questions (ties: in the given order)."""
    c, y = np.asarray(confidence, float), np.asarray(right, float)
    order = np.argsort(-c, kind="mergesort")
    out = {}
    for cov in coverages:
        k = max(1, int(round(len(c) * cov / 100)))
        out[int(cov)] = float(100 * y[order[:k]].mean()) if len(c) else 0.0
    return out


def summary(confidence: ArrayLike, right: ArrayLike, threshold: float | None = None) -> dict:
    """AUROC, ECE (15 bins), the risk-coverage table and, with a threshold, the share of wrong and of right first
    answers it marks "not sure"."""
    out: dict = {
        "n": len(np.asarray(confidence)),
        "auroc": auroc(confidence, right),
        "ece": ece(confidence, right),
        "risk_coverage": risk_coverage(confidence, right),
        "risk_coverage_curve": risk_coverage(confidence, right, CURVE),
        "reliability": reliability(confidence, right),
    }
    if threshold is not None:
        c, y = np.asarray(confidence, float), np.asarray(right, bool)
        unsure = c < threshold
        out["threshold"] = threshold
        out["unsure_wrong"] = float(100 * unsure[~y].mean()) if (~y).any() else None
        out["unsure_right"] = float(100 * unsure[y].mean()) if y.any() else None
    return out
