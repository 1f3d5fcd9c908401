"""Training the relation-path planner (`kgdb.rrp.models.planner.PathDecoder`) on labelled questions.

Mini-batches of questions, Adam, Eq. 2's loss; after every epoch the val split is decoded with
beam search and the model with the best val path Hit@1 (the top planned path is one of the
labelled shortest paths) is kept, with early stopping on patience. Tensors only: the examples
come from the seam (`kgdb.rrp.planner_training.train_planner`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import cast

import numpy as np
import torch

from kgdb.rrp.models.planner import PathDecoder, pack_questions
from kgdb.training.events import EpochCallbacks, TrainEvents
from kgdb.training.fit import EpochTotals, ExamplesTask, FitConfig, fit


@dataclass
class PlannerExample:
    qid: str
    q_emb: np.ndarray  # float32 [d], question without the topic names
    words: list[int]  # hashed word features
    paths: list[tuple[int, ...]]  # labelled relation paths as tokens (no STOP)


@dataclass(frozen=True)
class PlannerTrainConfig:
    lr: float = 1e-3
    batch_size: int = 64
    max_epochs: int = 30
    patience: int = 4
    seed: int = 42
    beam: int = 5
    max_paths_per_question: int = 16


@dataclass
class PlannerEpoch:
    epoch: int
    loss: float
    val_hit1: float
    val_hit_beam: float  # some labelled path among the beam
    seconds: float

    def describe(self) -> str:
        return (
            f"epoch {self.epoch}: loss {self.loss:.4f}, val path Hit@1 {self.val_hit1:.4f}, "
            f"Hit@beam {self.val_hit_beam:.4f}, {self.seconds:.1f} s"
        )


@dataclass
class PlannerResult:
    best_epoch: int
    best_val_hit1: float
    epochs: list[PlannerEpoch] = field(default_factory=list)
    train_questions: int = 0
    skipped_no_path: int = 0

    def to_json(self) -> dict:
        return asdict(self)


def _batch(model: PathDecoder, batch: Sequence[PlannerExample], cap: int):
    device = model.bias.device
    rows_q, rows_p, weights = [], [], []
    for i, ex in enumerate(batch):
        paths = ex.paths[:cap]
        for p in paths:
            rows_q.append(i)
            rows_p.append(list(p) + [0])
            weights.append(1.0 / len(paths))
    width = max(len(p) for p in rows_p)
    paths_t = torch.full((len(rows_p), width), -1, dtype=torch.long, device=device)
    for r, row in enumerate(rows_p):
        paths_t[r, : len(row)] = torch.tensor(row)
    q = torch.from_numpy(np.stack([batch[i].q_emb for i in rows_q])).to(device)
    words, offsets = pack_questions([batch[i].words for i in rows_q], device)
    return q, words, offsets, paths_t, torch.tensor(weights, device=device)


def evaluate_planner(model: PathDecoder, examples: Sequence[PlannerExample], beam: int) -> tuple[float, float]:
    """(Hit@1, Hit@beam) of the decoded relation paths against the labels."""
    model.eval()
    hit1 = hitk = 0
    device = model.bias.device
    for ex in examples:
        out = model.beam_search(torch.from_numpy(ex.q_emb).to(device), torch.tensor(ex.words, device=device), beam)
        labels = set(ex.paths)
        hit1 += bool(out) and out[0][0] in labels
        hitk += any(p in labels for p, _ in out)
    n = max(len(examples), 1)
    return hit1 / n, hitk / n


class PlannerTask(ExamplesTask[PlannerExample]):
    """The planner's part of `fit`: Eq. 2's loss over a batch's labelled paths, val path Hit@1."""

    kind = "rrp-planner"
    model: PathDecoder

    def loss(self, objective: torch.nn.Module, batch: list[int]) -> torch.Tensor:
        examples = [self.train[i] for i in batch]
        loss = cast(PathDecoder, objective).loss  # `objective()` is the model itself
        return loss(*_batch(self.model, examples, self.config.max_paths_per_question)) / len(examples)

    def validate(self) -> tuple[tuple, tuple[float, float]]:
        hit1, hitk = evaluate_planner(self.model, self.val, self.config.beam)
        return (hit1,), (hit1, hitk)

    def log(self, epoch: int, totals: EpochTotals, metrics: tuple[float, float]) -> PlannerEpoch:
        return PlannerEpoch(epoch, totals.loss_per_question, *metrics, totals.seconds)


def train_planner_model(
    model: PathDecoder,
    train: Sequence[PlannerExample],
    val: Sequence[PlannerExample],
    cfg: PlannerTrainConfig,
    on_epoch: Callable[[PlannerEpoch], None] | None = None,
    events: TrainEvents | None = None,
) -> tuple[PathDecoder, PlannerResult]:
    usable = [ex for ex in train if ex.paths]
    task = PlannerTask(model, usable, [ex for ex in val if ex.paths], cfg)
    outcome = fit(
        task, FitConfig(cfg.max_epochs, cfg.patience, cfg.seed), EpochCallbacks(on_epoch=on_epoch, events=events)
    )
    best = outcome.best_key[0] if outcome.best_key else -1.0
    return model, PlannerResult(
        outcome.best_epoch, best, outcome.epochs, train_questions=len(usable), skipped_no_path=len(train) - len(usable)
    )
