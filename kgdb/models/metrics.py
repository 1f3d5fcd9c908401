"""Retrieval metrics as the SubgraphRAG paper defines them: per question, then averaged.

- shortest-path triple recall@K: |top-K ∩ SP triples| / |SP triples|; questions without any
  labelled SP triple in their subgraph are left out of the average (and counted).
- answer-entity recall@K: |answers that are the head or tail of a top-K triple| / |answers|,
  over the question's gold answers that exist as entities in the graph (the paper's "-sub"
  convention); questions with no answer in the graph are left out (and counted). An answer that
  exists in the graph but not in the fetched subgraph counts as missed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from kgdb import ranking

KS = (50, 100, 200)


def top_k(scores: torch.Tensor, k: int) -> torch.Tensor:
    """`kgdb.ranking.top_k` for a tensor (indices on the CPU)."""
    return torch.from_numpy(ranking.top_k(scores.detach().float().cpu().numpy(), k))


def triple_recall_at(scores: torch.Tensor, labels: torch.Tensor, k: int) -> float | None:
    positives = int(labels.sum())
    if positives == 0:
        return None
    return float(labels[top_k(scores, k)].sum()) / positives


def answer_recall_at(
    order: np.ndarray, head: np.ndarray, tail: np.ndarray, answers: np.ndarray, n_answers: int, k: int
) -> float | None:
    """`order`: triple indices best first; `answers`: local node ids of the gold answers found in
    the subgraph; `n_answers`: gold answers present in the whole graph (the denominator)."""
    if n_answers == 0:
        return None
    top = order[:k]
    covered = np.union1d(head[top], tail[top])
    return float(np.isin(answers, covered).sum()) / n_answers


@dataclass
class RecallAccumulator:
    """Collects per-question recalls, overall and by hop bucket."""

    ks: tuple[int, ...] = KS
    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=lambda: {"no_sp_triples": 0, "no_answer_in_graph": 0})

    def add(self, bucket: str, metric: str, value: float | None) -> None:
        if value is None:
            return
        for b in ("all", bucket):
            self.values.setdefault(b, {}).setdefault(metric, []).append(value)

    def summary(self) -> dict[str, dict[str, dict[str, float]]]:
        out = {}
        for bucket, metrics in sorted(self.values.items()):
            out[bucket] = {m: {"mean": float(np.mean(v)), "n": len(v)} for m, v in sorted(metrics.items())}
        return out
