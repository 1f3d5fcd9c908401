"""Keeping Python's garbage collector off the objects a process answers with.

A process that answers questions holds a few hundred thousand long-lived objects (modules, the
driver, the embedding model, relation tables), and each question allocates tens of thousands of
short-lived containers (a dense graph's thousands of candidate paths, each with its sets of ends).
Those allocations trigger full collections, and every full collection walks the long-lived objects
again. Freezing them once they are all loaded (after the first answer, so that lazily loaded models
are among them) leaves the collector only what questions allocate: on the 50M-triple synthetic graph
a question took 15 % less time (docs/rrp.md, "RRP on any graph"). Frozen objects are still freed when no
reference is left; only a reference cycle among them waits for the exit, where they go back to the collector.
"""

from __future__ import annotations

import atexit
import gc

_frozen = False


def freeze_loaded() -> None:
    """Move every object alive now out of the collector's generations, once per process (and back at exit)."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()
        # At shutdown the collector must see them again: extension modules that count their objects at exit
        # (nanobind's, in the triton that torch_geometric imports) report frozen ones as leaked.
        atexit.register(gc.unfreeze)
