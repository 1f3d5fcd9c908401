"""The shared training loop (`kgdb.training.fit`) on a kind defined here: a run killed after an epoch
and resumed ends where an uninterrupted run ends, a resumed run with other settings is refused, early
stopping counts epochs without a better validation key, and the events hear every step and epoch."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
import torch

from kgdb.training.events import TrainEvents
from kgdb.training.fit import STATE_FILE, FitConfig, FitTask, ResumeMismatchError, fit


@dataclass(frozen=True)
class LineConfig:
    lr: float = 0.05
    batch_size: int = 3


@dataclass
class LineEpoch:
    epoch: int
    loss: float
    val_error: float

    def describe(self) -> str:
        return f"epoch {self.epoch}: {self.loss:.4f}"


class LineTask(FitTask):
    kind = "line"

    def __init__(self, cfg: LineConfig = LineConfig(), scores: list[float] | None = None):
        torch.manual_seed(0)
        self.config, self.model = cfg, torch.nn.Linear(2, 1)
        self.x = torch.linspace(-1, 1, 20).reshape(10, 2)
        self.y = self.x @ torch.tensor([[2.0], [-1.0]])
        self.scores = scores  # fixed validation keys, one per epoch, when given

    def examples(self) -> int:
        return len(self.x)

    def loss(self, objective, batch):
        return ((objective(self.x[batch]) - self.y[batch]) ** 2).mean()

    @torch.no_grad()
    def validate(self):
        error = float(((self.model(self.x) - self.y) ** 2).mean())
        key = -error if self.scores is None else self.scores.pop(0)
        return (key,), error

    def log(self, epoch, totals, metrics):
        return LineEpoch(epoch, totals.loss_per_step, metrics)


class Killed(Exception):
    pass


class Recorder(TrainEvents):
    def __init__(self, kill_at: int | None = None):
        self.steps, self.epochs, self.kill_at = [], [], kill_at

    def step(self, loss: float, questions: int) -> None:
        self.steps.append(questions)

    def epoch(self, log) -> None:
        if log.epoch == self.kill_at:
            raise Killed
        self.epochs.append(log.epoch)


def test_a_killed_run_resumes_to_the_state_of_an_uninterrupted_one(tmp_path):
    whole_task = LineTask()
    whole = fit(whole_task, FitConfig(5, 10, 1, tmp_path / "whole" / STATE_FILE))
    killed = FitConfig(5, 10, 1, tmp_path / "killed" / STATE_FILE)
    with pytest.raises(Killed):
        fit(LineTask(), killed, Recorder(kill_at=3))
    heard = Recorder()
    resumed_task = LineTask()
    resumed = fit(resumed_task, replace(killed, resume=True), heard)
    assert resumed.resumed_from_epoch == 2 and heard.epochs == [3, 4, 5] and heard.steps == [3, 3, 3, 1] * 3
    assert [e.loss for e in resumed.epochs] == [e.loss for e in whole.epochs]
    weights = zip(whole_task.model.state_dict().values(), resumed_task.model.state_dict().values())
    assert all(torch.equal(a, b) for a, b in weights)
    with pytest.raises(ResumeMismatchError, match="another training configuration"):
        fit(LineTask(LineConfig(lr=0.01)), replace(killed, resume=True))


def test_early_stopping_keeps_the_best_epoch_and_ties_go_to_the_later_one_when_asked():
    strict = fit(LineTask(scores=[0.5, 0.7, 0.7, 0.6, 0.7, 0.9]), FitConfig(6, 3, 1))
    assert strict.best_epoch == 2 and len(strict.epochs) == 5  # epochs 3-5 are no better: patience 3 stops after 5
    later = fit(LineTask(scores=[0.5, 0.7, 0.7, 0.6, 0.7, 0.9]), FitConfig(6, 3, 1, later_ties_win=True))
    assert later.best_epoch == 6 and len(later.epochs) == 6
