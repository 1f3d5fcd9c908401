"""Training RRP's structural reasoner (`kgdb.models.structural.StructuralReasoner`) with Eq. 8.

Mini-batches of subgraphs (PyG `Batch`), Adam; after every epoch the val subgraphs are reasoned
forward and the model with the best val Hit@1 (the most probable non-topic entity of P^n is an
answer) is kept, with early stopping on patience. The training state is saved after every epoch
so `resume` continues a killed run. Tensors only: the examples come from the seam.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from torch_geometric.data import Batch, Data

from kgdb.models.structural import StructuralReasoner
from kgdb.training.trainer import seed_everything

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


def train_structural_model(
    model: StructuralReasoner,
    train: Sequence[StructuralExample],
    val: Sequence[StructuralExample],
    cfg: StructuralTrainConfig,
    *,
    state_dir: Path | None = None,
    resume: bool = False,
    on_step: Callable[[float], None] = lambda loss: None,
    on_epoch: Callable[[StructuralEpoch], None] = lambda e: None,
) -> tuple[StructuralReasoner, StructuralResult]:
    seed_everything(cfg.seed)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    rng = np.random.default_rng(cfg.seed)
    result = StructuralResult(train_questions=len(train))
    best_state, bad, first = copy.deepcopy(model.state_dict()), 0, 1
    state_path = state_dir / STATE if state_dir else None
    if resume:
        if state_path is None or not state_path.is_file():
            raise ValueError(f"nothing to resume: no {STATE} in {state_dir}")
        saved = torch.load(state_path, weights_only=False)
        fixed = ("lr", "batch_size", "seed")  # max_epochs and patience may change: stop a run early or extend it
        if any(saved["config"][k] != asdict(cfg)[k] for k in fixed):
            raise ValueError(f"the saved run used other settings ({saved['config']}); start afresh without --resume")
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        best_state, bad, rng = saved["best_state"], saved["bad"], saved["rng"]
        result = StructuralResult(**{**saved["result"], "epochs": [StructuralEpoch(**e) for e in saved["result"]["epochs"]]})
        first = result.resumed_from_epoch = saved["epoch"] + 1
        if bad >= cfg.patience:
            first = cfg.max_epochs + 1
    for epoch in range(first, cfg.max_epochs + 1):
        t0 = time.perf_counter()
        model.train()
        order = rng.permutation(len(train))
        total = 0.0
        for start in range(0, len(order), cfg.batch_size):
            batch = collate([to_data(train[i]) for i in order[start : start + cfg.batch_size]], model.relation_emb.device)
            loss = model.loss(batch)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            total += float(loss.detach()) * batch.num_graphs
            on_step(float(loss.detach()))
        log = StructuralEpoch(epoch, total / max(len(train), 1), hit1(model, val), time.perf_counter() - t0)
        result.epochs.append(log)
        on_epoch(log)
        if log.val_hit1 >= result.best_val_hit1:  # a tie goes to the longer-trained model (small val sets)
            result.best_epoch, result.best_val_hit1 = epoch, log.val_hit1
            best_state, bad = copy.deepcopy(model.state_dict()), 0
        else:
            bad += 1
        if state_path is not None:
            state_path.parent.mkdir(parents=True, exist_ok=True)
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "best_state": best_state, "bad": bad, "rng": rng,
                        "epoch": epoch, "config": asdict(cfg), "result": json.loads(json.dumps(result.to_json()))}, state_path)
        if bad >= cfg.patience:
            break
    model.load_state_dict(best_state)
    return model.eval(), result


def finished(state_dir: Path, cfg: StructuralTrainConfig) -> bool:
    """A saved run that `resume` would not train further (the data need not be rebuilt)."""
    path = state_dir / STATE
    if not path.is_file():
        return False
    saved = torch.load(path, weights_only=False)
    return saved["epoch"] >= cfg.max_epochs or saved["bad"] >= cfg.patience
