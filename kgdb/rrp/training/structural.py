"""Training RRP's structural reasoner (`kgdb.rrp.models.structural.StructuralReasoner`) with Eq. 8.

Mini-batches of subgraphs (PyG `Batch`), Adam; after every epoch the val subgraphs are reasoned
forward and the model with the best val Hit@1 (the most probable non-topic entity of P^n is an
answer) is kept, with early stopping on patience. The training state is saved after every epoch
so `resume` continues a killed run. Tensors only: the examples come from the seam.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import cast

import numpy as np
import torch
from torch_geometric.data import Batch, Data

from kgdb.rrp.models.structural import StructuralReasoner
from kgdb.training.events import EpochCallbacks, TrainEvents
from kgdb.training.fit import EpochTotals, ExamplesTask, FitConfig, fit, saved_epoch

STATE = "train_state.pt"


@dataclass
class StructuralExample:
    qid: str
    q_emb: np.ndarray  # float32 [d], question without the topic names
    words: list[int]  # hashed word features
    head: np.ndarray  # int64 [m] local
    relation: np.ndarray  # int64 [m]
    tail: np.ndarray  # int64 [m] local
    topic: np.ndarray  # bool [n]
    answer: np.ndarray  # bool [n]


@dataclass(frozen=True)
class StructuralTrainConfig:
    lr: float = 1e-3
    batch_size: int = 40  # the paper's
    max_epochs: int = 20
    patience: int = 3
    seed: int = 42


@dataclass
class StructuralEpoch:
    epoch: int
    loss: float
    val_hit1: float
    seconds: float

    def describe(self) -> str:
        return f"epoch {self.epoch}: loss {self.loss:.4f}, val Hit@1 {self.val_hit1:.4f}, {self.seconds:.1f} s"


@dataclass
class StructuralResult:
    best_epoch: int = 0
    best_val_hit1: float = -1.0
    epochs: list[StructuralEpoch] = field(default_factory=list)
    train_questions: int = 0
    resumed_from_epoch: int = 0

    def to_json(self) -> dict:
        return asdict(self)


def to_data(ex: StructuralExample) -> Data:
    return Data(
        edge_index=torch.from_numpy(np.stack([ex.head, ex.tail])).long(),
        edge_rel=torch.from_numpy(ex.relation).long(),
        topic=torch.from_numpy(ex.topic).bool(),
        answer=torch.from_numpy(ex.answer).bool(),
        q_emb=torch.from_numpy(ex.q_emb).float()[None],
        words=torch.tensor(ex.words, dtype=torch.long),
        n_words=torch.tensor([len(ex.words)]),
        num_nodes=len(ex.topic),
    )


def collate(datas: Sequence[Data], device: torch.device | str = "cpu") -> Batch:
    batch = Batch.from_data_list(list(datas))
    batch.word_offsets = torch.cumsum(batch.n_words, 0) - batch.n_words
    return batch.to(device)


@torch.no_grad()
def hit1(model: StructuralReasoner, examples: Sequence[StructuralExample], batch_size: int = 64) -> float:
    """Share of examples whose most probable non-topic entity at the last step is an answer."""
    model.eval()
    hits, device = 0, model.relation_emb.device
    for start in range(0, len(examples), batch_size):
        batch = collate([to_data(ex) for ex in examples[start : start + batch_size]], device)
        last = model(batch).log_probs[-1].masked_fill(batch.topic, float("-inf"))
        for g in range(batch.num_graphs):
            mask = batch.batch == g
            hits += bool(batch.answer[mask][int(torch.argmax(last[mask]))])
    return hits / max(len(examples), 1)


class StructuralTask(ExamplesTask[StructuralExample]):
    """The structural reasoner's part of `fit`: Eq. 8's loss on a batch of subgraphs, val Hit@1."""

    kind = "rrp"
    model: StructuralReasoner

    def loss(self, objective: torch.nn.Module, batch: list[int]) -> torch.Tensor:
        loss = cast(StructuralReasoner, objective).loss  # `objective()` is the model itself
        return loss(collate([to_data(self.train[i]) for i in batch], self.model.relation_emb.device))

    def validate(self) -> tuple[tuple, float]:
        value = hit1(self.model, self.val)
        return (value,), value

    def log(self, epoch: int, totals: EpochTotals, metrics: float) -> StructuralEpoch:
        return StructuralEpoch(epoch, totals.loss_per_question, metrics, totals.seconds + totals.val_seconds)


def train_structural_model(
    model: StructuralReasoner,
    train: Sequence[StructuralExample],
    val: Sequence[StructuralExample],
    cfg: StructuralTrainConfig,
    *,
    state_dir: Path | None = None,
    resume: bool = False,
    on_step: Callable[[float], None] | None = None,
    on_epoch: Callable[[StructuralEpoch], None] | None = None,
    events: TrainEvents | None = None,
) -> tuple[StructuralReasoner, StructuralResult]:
    state_path = state_dir / STATE if state_dir else None
    if resume and (state_path is None or not state_path.is_file()):
        raise ValueError(f"nothing to resume: no {STATE} in {state_dir}")
    # A tie goes to the longer-trained model (small val sets); gradients are clipped at norm 5.
    fit_cfg = FitConfig(
        cfg.max_epochs, cfg.patience, cfg.seed, state_path, resume, clip_grad_norm=5.0, later_ties_win=True
    )
    step = None if on_step is None else (lambda loss, questions: on_step(loss))
    outcome = fit(StructuralTask(model, train, val, cfg), fit_cfg, EpochCallbacks(step, on_epoch, events))
    best = outcome.best_key[0] if outcome.best_key else -1.0
    # The result names the first epoch this run trained (the saved one's successor).
    resumed = outcome.resumed_from_epoch + 1 if outcome.resumed_from_epoch else 0
    return model, StructuralResult(outcome.best_epoch, best, outcome.epochs, len(train), resumed)


def finished(state_dir: Path, cfg: StructuralTrainConfig) -> bool:
    """A saved run that `resume` would not train further (the data need not be rebuilt)."""
    saved = saved_epoch(state_dir / STATE)
    return saved is not None and (saved[0] >= cfg.max_epochs or saved[1] >= cfg.patience)
