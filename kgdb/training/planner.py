"""Training the relation-path planner (`kgdb.models.planner.PathPlanner`) on labelled questions.

Mini-batches of questions, Adam, Eq. 2's loss; after every epoch the val split is decoded with
beam search and the model with the best val path Hit@1 (the top planned path is one of the
labelled shortest paths) is kept, with early stopping on patience. Tensors only: the examples
come from the seam (`kgdb.pipeline.train_planner`).
"""

from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

from kgdb.models.planner import PathPlanner, pack_questions
from kgdb.training.trainer import seed_everything


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


@dataclass
class PlannerResult:
    best_epoch: int
    best_val_hit1: float
    epochs: list[PlannerEpoch] = field(default_factory=list)
    train_questions: int = 0
    skipped_no_path: int = 0

    def to_json(self) -> dict:
        return asdict(self)


def _batch(model: PathPlanner, batch: Sequence[PlannerExample], cap: int):
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
    for r, p in enumerate(rows_p):
        paths_t[r, : len(p)] = torch.tensor(p)
    q = torch.from_numpy(np.stack([batch[i].q_emb for i in rows_q])).to(device)
    words, offsets = pack_questions([batch[i].words for i in rows_q], device)
    return q, words, offsets, paths_t, torch.tensor(weights, device=device)


def evaluate_planner(model: PathPlanner, examples: Sequence[PlannerExample], beam: int) -> tuple[float, float]:
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


def train_planner_model(
    model: PathPlanner,
    train: Sequence[PlannerExample],
    val: Sequence[PlannerExample],
    cfg: PlannerTrainConfig,
    on_epoch: Callable[[PlannerEpoch], None] = lambda e: None,
) -> tuple[PathPlanner, PlannerResult]:
    seed_everything(cfg.seed)
    usable = [ex for ex in train if ex.paths]
    labelled_val = [ex for ex in val if ex.paths]
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    rng = np.random.default_rng(cfg.seed)
    result = PlannerResult(0, -1.0, train_questions=len(usable), skipped_no_path=len(train) - len(usable))
    best_state, bad = copy.deepcopy(model.state_dict()), 0
    for epoch in range(1, cfg.max_epochs + 1):
        t0 = time.perf_counter()
        model.train()
        order = rng.permutation(len(usable))
        total = 0.0
        for start in range(0, len(order), cfg.batch_size):
            batch = [usable[i] for i in order[start : start + cfg.batch_size]]
            loss = model.loss(*_batch(model, batch, cfg.max_paths_per_question)) / len(batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(batch)
        seconds = time.perf_counter() - t0
        hit1, hitk = evaluate_planner(model, labelled_val, cfg.beam)
        log = PlannerEpoch(epoch, total / max(len(usable), 1), hit1, hitk, seconds)
        result.epochs.append(log)
        on_epoch(log)
        if hit1 > result.best_val_hit1:
            result.best_epoch, result.best_val_hit1 = epoch, hit1
            best_state, bad = copy.deepcopy(model.state_dict()), 0
        else:
            bad += 1
            if bad >= cfg.patience:
                break
    model.load_state_dict(best_state)
    return model.eval(), result
