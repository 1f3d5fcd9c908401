"""Training the RRP path ranker (`kgdb.rrp.models.path_ranker.PathRanker`) on enumerated candidates.

Mini-batches of questions, Adam with weight decay (a few hundred WebQSP questions against a
thousand relations), the listwise loss over each question's candidates. After every epoch the val
questions are ranked (`val`: one group per question file, averaged) and the model with the best val
answer Hit@1 of its top path (the expected Hit@1 when the top path's answers are taken in any order:
gold ends / ends), then Macro-F1, then val loss, is kept, with early stopping on patience (`kgdb.training.fit`).
Tensors only: the examples come from the seam
(`kgdb.rrp.path_ranker`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import cast

import numpy as np
import torch

from kgdb.rrp.models.path_ranker import PathRanker
from kgdb.rrp.models.planner import pack_questions
from kgdb.training.events import EpochCallbacks, TrainEvents
from kgdb.training.fit import EpochTotals, ExamplesTask, FitConfig, fit


@dataclass
class RankerExample:
    qid: str
    q_emb: np.ndarray  # float32 [d], question without the topic names
    words: list[int]  # hashed word features
    tokens: np.ndarray  # int64 [N, H] candidate paths as planner tokens, 0-padded
    dense: np.ndarray  # float32 [N, F]
    positive: np.ndarray  # bool [N]: the candidates that match the answers best
    hit: np.ndarray  # float32 [N]: gold share of the candidate's answers (expected Hit@1 of taking it)
    f1: np.ndarray  # float32 [N]: F1 of the candidate's answers against the gold ones


def reliable_positives(
    f1: np.ndarray, hops: np.ndarray, closeness: np.ndarray, margin: float | None = None
) -> np.ndarray:
    """The positive candidates of one question (bool [N]): the best answer F1, then the fewest hops; with a
    `margin`, of those only the ones whose question-relation cosine (`closeness`, the cos_max feature) is
    within `margin` of the best of them. A path that reaches the answers by coincidence (Barack Obama's
    children's other parent, for "who is the wife of barack obama?") is then no positive beside one that
    says what is asked (his marriage). None when no candidate reaches a gold answer."""
    positive = np.zeros(len(f1), bool)
    if not len(f1) or f1.max() <= 0:
        return positive
    best = f1 >= f1.max() - 1e-9
    positive = best & (hops == hops[best].min())
    return positive if margin is None else positive & (closeness >= closeness[positive].max() - margin)


@dataclass(frozen=True)
class RankerTrainConfig:
    lr: float = 2e-3
    weight_decay: float = 1e-4
    batch_size: int = 16
    max_epochs: int = 40
    patience: int = 6
    seed: int = 42


@dataclass
class RankerEpoch:
    epoch: int
    loss: float
    val_hit1: float
    val_f1: float
    val_path_hit1: float  # the top candidate is a positive
    val_loss: float  # listwise loss on val: breaks ties of Hit@1 and Macro-F1
    seconds: float

    def describe(self) -> str:
        return (
            f"epoch {self.epoch}: loss {self.loss:.4f}, val answer Hit@1 {self.val_hit1:.4f} "
            "(expected over the top path's answers), "
            f"Macro-F1 {self.val_f1:.4f}, path Hit@1 {self.val_path_hit1:.4f}, {self.seconds:.1f} s"
        )


@dataclass
class RankerResult:
    best_epoch: int
    best_val_hit1: float
    best_val_f1: float
    epochs: list[RankerEpoch] = field(default_factory=list)
    train_questions: int = 0
    skipped_no_positive: int = 0

    def to_json(self) -> dict:
        return asdict(self)


def collate(batch: Sequence[RankerExample], device: torch.device | str = "cpu"):
    """(q_emb [B, d], words, offsets, tokens [N, H], dense [N, F], owner [N], positive [N])."""
    width = max(ex.tokens.shape[1] for ex in batch)
    tokens = np.concatenate([np.pad(ex.tokens, ((0, 0), (0, width - ex.tokens.shape[1]))) for ex in batch])
    owner = np.concatenate([np.full(len(ex.tokens), i, np.int64) for i, ex in enumerate(batch)])
    words, offsets = pack_questions([ex.words for ex in batch], device)

    def t(a, dt):
        return torch.as_tensor(a, dtype=dt, device=device)

    return (
        t(np.stack([ex.q_emb for ex in batch]), torch.float32),
        words,
        offsets,
        t(tokens, torch.long),
        t(np.concatenate([ex.dense for ex in batch]), torch.float32),
        t(owner, torch.long),
        t(np.concatenate([ex.positive for ex in batch]), torch.bool),
    )


@torch.no_grad()
def rank_scores(model: PathRanker, ex: RankerExample) -> np.ndarray:
    q, words, offsets, tokens, dense, owner, _ = collate([ex], model.relation_emb.device)
    return model.eval()(q, words, offsets, tokens, dense, owner).cpu().numpy()


def evaluate_ranker(model: PathRanker, examples: Sequence[RankerExample]) -> tuple[float, float, float, float]:
    """(expected answer Hit@1, Macro-F1, path Hit@1) of the top candidate over all `examples` (a
    question without candidates counts as a miss), and the mean listwise loss of the questions with
    a positive (what breaks ties between epochs that rank as well)."""
    hit = f1 = path = loss = 0.0
    scored = 0
    for ex in examples:
        if not len(ex.tokens):
            continue
        s = rank_scores(model, ex)
        top = int(np.argmax(s))
        hit, f1, path = hit + float(ex.hit[top]), f1 + float(ex.f1[top]), path + bool(ex.positive[top])
        if ex.positive.any():
            p = np.exp(s - s.max())
            loss, scored = loss - float(np.log(max(p[ex.positive].sum() / p.sum(), 1e-12))), scored + 1
    n = max(len(examples), 1)
    return hit / n, f1 / n, path / n, loss / max(scored, 1)


def evaluate_groups(model: PathRanker, groups: Sequence[Sequence[RankerExample]]) -> tuple[float, float, float, float]:
    """`evaluate_ranker` averaged over groups (one per question file), so each file counts the same
    whatever its size."""
    scores = np.array([evaluate_ranker(model, g) for g in groups])
    return cast(tuple[float, float, float, float], tuple(float(x) for x in scores.mean(axis=0)))


class RankerTask(ExamplesTask[RankerExample]):
    """The ranker's part of `fit`: the listwise loss over a batch's candidates; selection on val answer
    Hit@1, then Macro-F1, then the val loss."""

    kind = "rrp-ranker"
    model: PathRanker

    def loss(self, objective: torch.nn.Module, batch: list[int]) -> torch.Tensor:
        examples = [self.train[i] for i in batch]
        q, words, offsets, tokens, dense, owner, positive = collate(examples, self.model.relation_emb.device)
        loss = cast(PathRanker, objective).loss  # `objective()` is the model itself
        return loss(objective(q, words, offsets, tokens, dense, owner), owner, positive) / len(examples)

    def validate(self) -> tuple[tuple, tuple[float, float, float, float]]:
        hit, f1, path, val_loss = evaluate_groups(self.model, self.val)
        return (hit, f1, -val_loss), (hit, f1, path, val_loss)

    def log(self, epoch: int, totals: EpochTotals, metrics: tuple[float, float, float, float]) -> RankerEpoch:
        return RankerEpoch(epoch, totals.loss_per_question, *metrics, totals.seconds + totals.val_seconds)


def train_ranker_model(
    model: PathRanker,
    train: Sequence[RankerExample],
    val: Sequence[Sequence[RankerExample]],
    cfg: RankerTrainConfig,
    on_epoch: Callable[[RankerEpoch], None] | None = None,
    events: TrainEvents | None = None,
) -> tuple[PathRanker, RankerResult]:
    usable = [ex for ex in train if ex.positive.any()]
    if not usable:
        raise ValueError("no training question has a candidate path that reaches an answer")
    outcome = fit(
        RankerTask(model, usable, val, cfg),
        FitConfig(cfg.max_epochs, cfg.patience, cfg.seed),
        EpochCallbacks(on_epoch=on_epoch, events=events),
    )
    best = next(e for e in outcome.epochs if e.epoch == outcome.best_epoch)
    return model, RankerResult(
        outcome.best_epoch,
        best.val_hit1,
        best.val_f1,
        outcome.epochs,
        train_questions=len(usable),
        skipped_no_positive=len(train) - len(usable),
    )
