"""Retrievers without weights that also score in plain numpy, so answering one question with them
needs no torch import (seconds of a cold `kgdb ask`).

`NUMPY_SCORERS` maps a registered retriever's name to a function computing exactly what its
torch `forward` computes for one question (tests/test_text_encoder.py compares them). The seam
(`kgdb.pipeline.retrieve`) uses it when that retriever is asked for without a checkpoint; anything
trained, batched scoring of many questions on a GPU and training keep the torch module.
This module never imports torch.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

NumpyScorer = Callable[..., np.ndarray]


def cosine_scores(
    entity: np.ndarray, relation: np.ndarray, head: np.ndarray, rel: np.ndarray, tail: np.ndarray, entity_idx: np.ndarray,
    question: np.ndarray,
) -> np.ndarray:
    """`CosineRetriever.forward` for one question: question · normalise(z_h + z_r + z_t), float32.

    `entity`/`relation` are the graph's tables, `entity_idx` maps local nodes to table rows and
    `head`/`rel`/`tail` are the candidate triples (local node ids, relation rows).
    """
    z = entity[np.asarray(entity_idx, dtype=np.int64)]
    triple = z[np.asarray(head, dtype=np.int64)] + relation[np.asarray(rel, dtype=np.int64)] + z[np.asarray(tail, dtype=np.int64)]
    # torch.nn.functional.normalize: x / max(||x||, 1e-12)
    norm = np.sqrt((triple * triple).sum(axis=1, keepdims=True, dtype=np.float32))
    triple = triple / np.maximum(norm, np.float32(1e-12))
    # Row-wise products, not a BLAS gemv: gemv takes different code paths for different rows, so
    # two triples with equal vectors (e.g. two CVTs with one relation to one tail) could score
    # 1e-7 apart and swap places in the top K; here equal rows give equal scores, as in torch.
    return (triple * np.asarray(question, dtype=np.float32)).sum(axis=1, dtype=np.float32)


NUMPY_SCORERS: dict[str, NumpyScorer] = {"cosine": cosine_scores}


def numpy_scorer(retriever: str) -> NumpyScorer | None:
    """The numpy scorer of an untrained retriever, or None (then the torch module is used)."""
    return NUMPY_SCORERS.get(retriever)
