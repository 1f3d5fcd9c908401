"""The one top-k of kgdb: best first, ties kept in triple order, so every ranking is deterministic."""

from __future__ import annotations

import numpy as np


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first; ties keep index order (stable sort)."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    return order[: max(0, k)]
