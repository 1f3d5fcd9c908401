"""Cap numpy's BLAS threads around small, latency-bound matmuls (one question's encoding or scoring).

On a busy 2-core machine OpenBLAS's extra threads only spin-wait: one question took ~1 s to encode
with two threads against 20 ms with one, and a [7000, 33] x [33, 32] product 55 ms against 0.5 ms
(the same reason the torch side runs one thread).
"""

from __future__ import annotations

import contextlib
from functools import lru_cache


@lru_cache(maxsize=1)
def _controller():
    from threadpoolctl import ThreadpoolController  # inspects the loaded BLAS libraries: once

    return ThreadpoolController()


def blas_threads(threads: int | None):
    """A context manager limiting BLAS to `threads` (None: leave them alone)."""
    if threads is None:
        return contextlib.nullcontext()
    return _controller().limit(limits=threads, user_api="blas")
