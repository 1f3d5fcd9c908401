"""What a training run tells whoever started it: one object with a no-op method per event, so the
command line (progress bars), the Python API (nothing, or a subclass) and tests subscribe to the
events they care about. No torch here: the command line builds its subclass before any model loads.
"""

from __future__ import annotations

from typing import Any


class TrainEvents:
    """Override the methods you need; every one defaults to doing nothing."""

    def message(self, text: str) -> None:
        """A line worth showing (labels counted, features cached, where the state is saved)."""

    def phase(self, description: str, total: int | None) -> None:
        """Data preparation entered a step of `total` units (None: unknown), e.g. "fetch+label train"."""

    def advance(self, n: int = 1) -> None:
        """`n` units of the current phase are done."""

    def split(self, report: Any) -> None:
        """A question split was prepared (`kgdb.pipeline.train.SplitReport`)."""

    def started(self, steps_per_epoch: int | None, max_epochs: int) -> None:
        """The epochs begin; `steps_per_epoch` counts questions (None: not known)."""

    def step(self, loss: float, questions: int) -> None:
        """An optimiser step on `questions` questions ended with `loss`."""

    def epoch(self, log: Any) -> None:
        """An epoch ended and was validated; `log.describe()` is its one-line summary."""


class EpochCallbacks(TrainEvents):
    """The two callbacks the tensor-level trainers have always taken, as events."""

    def __init__(self, on_step=None, on_epoch=None, events: TrainEvents | None = None):
        self._on_step, self._on_epoch, self._events = on_step, on_epoch, events or TrainEvents()

    def step(self, loss: float, questions: int) -> None:
        self._events.step(loss, questions)
        if self._on_step is not None:
            self._on_step(loss, questions)

    def epoch(self, log: Any) -> None:
        self._events.epoch(log)
        if self._on_epoch is not None:
            self._on_epoch(log)
