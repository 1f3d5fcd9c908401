"""Seeds and CPU settings every training run sets before its first tensor."""

from __future__ import annotations

import random

import numpy as np
import torch


def prepare_cpu(device: str, threads: int | None) -> None:
    """Before a training run's first tensor, on a CPU: its torch threads (when given) and subnormal floats
    flushed to zero. Subnormals (the far tail of a softmax over hundreds of candidates, tiny optimiser
    moments) are slow on CPUs: the RRP ranker's five-file recipe went from 5 s to 15 s an epoch as they
    accumulated; flushed, every epoch took 3.6-3.8 s and the trained weights were bitwise the same (docs/rrp.md,
    "RRP on any graph"). The flag is per thread and worker threads copy it when they start, hence first."""
    from kgdb.models.base import resolve_device

    if resolve_device(device) == "cpu":
        if threads:
            torch.set_num_threads(threads)
        torch.set_flush_denormal(True)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
