"""Reading a checkpoint's `model.safetensors` as numpy arrays, without torch (the torch side wraps
them: `kgdb.models.checkpoints.read_weights`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def read_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a `model.safetensors`, with subnormal floats set to zero. A weight that small
    changes no score, but every multiply by it takes a slow path on CPUs: the shipped portable RRP
    ranker's 1,305 subnormal weights (of its first MLP layer's 34k; trained before `prepare_cpu`
    flushed them) made scoring 2.7k candidates take 56 ms instead of 10 (benchmarks/subnormals.py)."""
    from safetensors.numpy import load_file

    arrays = {k: np.array(v) for k, v in load_file(str(path)).items()}  # writable copies
    for a in arrays.values():
        if np.issubdtype(a.dtype, np.floating):
            a[np.abs(a) < np.finfo(a.dtype).tiny] = 0.0
    return arrays
