"""Reading a checkpoint's `model.safetensors` as numpy arrays, without torch (the torch side wraps
them: `kgdb.models.checkpoints.read_weights`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from kgdb.errors import KgdbError


class CheckpointError(KgdbError):
    """A checkpoint is missing, unreadable or does not fit the graph (or its model)."""


def read_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a `model.safetensors` (CheckpointError naming the file when it is unreadable or
    holds a non-finite value), with subnormal floats set to zero. A weight that small
    changes no score, but every multiply by it takes a slow path on CPUs: the shipped portable RRP
    ranker's 1,305 subnormal weights (of its first MLP layer's 34k; trained before `prepare_cpu`
    flushed them) made scoring 2.7k candidates take 56 ms instead of 10 (benchmarks/subnormals.py)."""
    try:
        arrays = {k: np.array(v) for k, v in load_file(str(path)).items()}  # writable copies
    except Exception as exc:  # safetensors raises its own error, OSError or ValueError for a damaged file
        why = " ".join(f"{type(exc).__name__}: {exc}".split())[:160]
        raise CheckpointError(f"{path}: not a readable safetensors file ({why}); restore it or train again") from None
    for key, a in arrays.items():
        if np.issubdtype(a.dtype, np.floating):
            # NaN weights score every triple NaN, and a NaN ranks anywhere: refuse them here, once
            if not np.isfinite(a).all():
                raise CheckpointError(
                    f"{path}: tensor {key} holds non-finite values (NaN or infinity); "
                    "the training that wrote it diverged: train again"
                )
            a[np.abs(a) < np.finfo(a.dtype).tiny] = 0.0
    return arrays
