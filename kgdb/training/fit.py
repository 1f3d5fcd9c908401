"""The one training loop every trainable kind shares: epochs, early stopping on a validation key,
the saved state that lets a killed run resume, seeding, DDP wrapping and progress events.

A kind supplies a `FitTask`: its model, its optimiser settings, the loss of one batch of training
examples and a validation that returns the key models are selected on (higher is better) with the
epoch's log. Inside a DDP process group (`kgdb.training.distributed`) each process takes every N-th
example of the shared epoch order and the gradients are averaged; rank 0 alone writes the state.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import numpy as np
import torch
from torch import nn

from kgdb.private_files import open_private, private_dir
from kgdb.training import distributed
from kgdb.training.events import TrainEvents
from kgdb.training.seeding import seed_everything

STATE_FILE = "train-state.pt"

Example = TypeVar("Example")


class ResumeMismatchError(ValueError):
    """`--resume` met a saved training state written by another configuration."""


@dataclass(frozen=True)
class FitConfig:
    """How the loop runs, whatever the kind (the kind's own settings live in its `FitTask.config`)."""

    max_epochs: int
    patience: int
    seed: int
    state_path: Path | None = None  # the state is written there after every epoch
    resume: bool = False  # continue from `state_path` when it exists
    clip_grad_norm: float | None = None
    later_ties_win: bool = False  # an epoch as good as the best replaces it (small val sets)


@dataclass
class EpochTotals:
    """What the loop measured of one epoch, for the kind's log."""

    loss_sum: float  # the steps' losses added
    steps: int
    weighted_loss: float  # each step's loss times its questions, added
    questions: int
    seconds: float  # wall time of the training pass
    cpu_seconds: float  # process CPU time of the same pass
    val_seconds: float  # wall time of the validation

    @property
    def loss_per_step(self) -> float:
        return self.loss_sum / max(self.steps, 1)

    @property
    def loss_per_question(self) -> float:
        return self.weighted_loss / max(self.questions, 1)


@dataclass
class FitOutcome:
    best_epoch: int = 0
    best_key: tuple | None = None
    epochs: list = field(default_factory=list)  # the kind's epoch logs
    resumed_from_epoch: int = 0  # the last epoch of the saved run this one continued (0: a fresh run)


@runtime_checkable
class WeightDecayed(Protocol):
    """A kind's training config that sets Adam's weight decay (the others train without)."""

    weight_decay: float


class FitTask(ABC):
    """One kind's part of training. `config` is its frozen training config: `lr`, `batch_size` and
    the settings a resumed run must share (everything but `max_epochs` and `patience`)."""

    kind: str
    model: nn.Module
    config: Any

    def optimizer(self) -> torch.optim.Optimizer:
        decay = self.config.weight_decay if isinstance(self.config, WeightDecayed) else 0.0
        return torch.optim.Adam(self.model.parameters(), lr=self.config.lr, weight_decay=decay)

    @abstractmethod
    def examples(self) -> int:
        """How many training examples an epoch permutes."""

    def batches(self, order: list[int]) -> list[list[int]]:
        """The epoch's steps from this process's share of the permuted examples."""
        size = self.config.batch_size
        return [order[i : i + size] for i in range(0, len(order), size)]

    def objective(self) -> nn.Module:
        """The module whose parameters a step trains (what DDP wraps)."""
        return self.model

    @abstractmethod
    def loss(self, objective: nn.Module, batch: list[int]) -> torch.Tensor:
        """The loss to back-propagate for the training examples `batch` (indices)."""

    @abstractmethod
    def validate(self) -> tuple[tuple, Any]:
        """(selection key, the metrics `log` reads) after an epoch's training pass."""

    @abstractmethod
    def log(self, epoch: int, totals: EpochTotals, metrics: Any) -> Any:
        """The epoch's log (a dataclass with `describe()`), kept in the outcome."""


class ExamplesTask(FitTask, Generic[Example]):
    """A task whose training examples are a list (`train`, batches index it) and whose validation reads
    `val` as it was given."""

    def __init__(self, model: nn.Module, train: Sequence[Example], val: Any, config: Any):
        self.model, self.config, self.train, self.val = model, config, list(train), val

    def examples(self) -> int:
        return len(self.train)


@dataclass
class _Run:
    """The state a resumed run restores."""

    best_state: dict
    opt: torch.optim.Optimizer
    order_rng: np.random.Generator
    outcome: FitOutcome = field(default_factory=FitOutcome)
    bad_epochs: int = 0
    next_epoch: int = 1


def fit(task: FitTask, cfg: FitConfig, events: TrainEvents | None = None) -> FitOutcome:
    """Train `task.model` in place; it ends restored to its best validation epoch, in eval mode."""
    events = events or TrainEvents()
    seed_everything(cfg.seed)
    model = task.model
    rank, size = distributed.world()
    step = distributed.wrap(task.objective())
    run = _Run(
        {k: v.detach().clone() for k, v in model.state_dict().items()},
        task.optimizer(),
        np.random.default_rng(cfg.seed),
    )
    if cfg.resume and cfg.state_path is not None and cfg.state_path.is_file():
        _restore(run, task, cfg)
    events.started(task.examples(), cfg.max_epochs)
    for epoch in range(run.next_epoch, cfg.max_epochs + 1):
        totals = _train_epoch(task, step, run, cfg, events, rank, size)
        t1 = time.perf_counter()
        model.eval()
        key, metrics = task.validate()
        totals.val_seconds = time.perf_counter() - t1
        log = task.log(epoch, totals, metrics)
        run.outcome.epochs.append(log)
        events.epoch(log)
        if (
            run.outcome.best_key is None
            or key > run.outcome.best_key
            or (cfg.later_ties_win and key == run.outcome.best_key)
        ):
            run.outcome.best_key, run.outcome.best_epoch = key, epoch
            run.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            run.bad_epochs = 0
        else:
            run.bad_epochs += 1
        if cfg.state_path is not None and rank == 0:
            _save(cfg.state_path, task, run, epoch)
        if run.bad_epochs >= cfg.patience:
            break
    model.load_state_dict(run.best_state)
    model.eval()
    return run.outcome


def _train_epoch(
    task: FitTask, step: nn.Module, run: _Run, cfg: FitConfig, events: TrainEvents, rank: int, size: int
) -> EpochTotals:
    t0, c0 = time.perf_counter(), time.process_time()
    task.model.train()
    loss_sum = weighted = 0.0
    questions = 0
    steps = task.batches(distributed.shard(run.order_rng.permutation(task.examples()).tolist(), rank, size))
    for batch in steps:
        loss = task.loss(step, batch)
        run.opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.clip_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(task.model.parameters(), cfg.clip_grad_norm)
        run.opt.step()
        value = float(loss.detach())
        loss_sum, weighted, questions = loss_sum + value, weighted + value * len(batch), questions + len(batch)
        events.step(value, len(batch))
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
    loss_sum, n_steps, weighted, all_questions = distributed.all_sum([loss_sum, len(steps), weighted, questions])
    return EpochTotals(loss_sum, int(n_steps), weighted, int(all_questions), seconds, cpu_seconds, 0.0)


def _trajectory(config: Any, saved: dict) -> dict:
    # States written before a setting existed hold its default. The stopping settings may change:
    # a run can be extended, or ended at its last saved epoch.
    return {k: v for k, v in {**asdict(type(config)()), **saved}.items() if k not in ("max_epochs", "patience")}


def _restore(run: _Run, task: FitTask, cfg: FitConfig) -> None:
    if cfg.state_path is None:
        raise ValueError("no training state to restore: the fit configuration names no state_path")
    saved = torch.load(cfg.state_path, map_location=_device(task.model), weights_only=False)
    if (
        "outcome" not in saved
        or saved["retriever"] != task.kind
        or _trajectory(task.config, saved["config"]) != _trajectory(task.config, asdict(task.config))
    ):
        raise ResumeMismatchError(
            f"{cfg.state_path} was written by another training configuration (other settings: "
            f"{saved.get('config')}); drop --resume or use another --name"
        )
    task.model.load_state_dict(saved["model"])
    run.opt.load_state_dict(saved["optimizer"])
    run.best_state, run.bad_epochs = saved["best_state"], saved["bad_epochs"]
    run.order_rng.bit_generator.state = saved["order_rng"]
    torch.set_rng_state(saved["torch_rng"])
    run.outcome = saved["outcome"]
    run.outcome.best_key = tuple(run.outcome.best_key) if run.outcome.best_key is not None else None
    run.outcome.resumed_from_epoch = saved["epoch"]
    run.next_epoch = saved["epoch"] + 1
    if run.bad_epochs >= cfg.patience:
        run.next_epoch = cfg.max_epochs + 1  # the saved run had already stopped early


def saved_epoch(path: Path) -> tuple[int, int] | None:
    """(last saved epoch, epochs since the best) of a saved state, None without one."""
    if not path.is_file():
        return None
    saved = torch.load(path, weights_only=False)
    return saved["epoch"], saved["bad_epochs"]


def _device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def _save(path: Path, task: FitTask, run: _Run, epoch: int) -> None:
    private_dir(path.parent)
    tmp = path.with_suffix(".tmp")
    with open_private(tmp, "wb") as fh:
        torch.save(
            {
                "retriever": task.kind,  # the kind's name (the key predates the other kinds)
                "config": asdict(task.config),
                "epoch": epoch,
                "model": task.model.state_dict(),
                "optimizer": run.opt.state_dict(),
                "best_state": run.best_state,
                "best_key": list(run.outcome.best_key or ()),
                "bad_epochs": run.bad_epochs,
                "order_rng": run.order_rng.bit_generator.state,
                "torch_rng": torch.get_rng_state(),
                "outcome": run.outcome,
            },
            fh,
        )
    tmp.replace(path)  # a kill during the write leaves the previous epoch's state intact
