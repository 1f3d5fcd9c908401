"""Which registered models also score in numpy (their twins), and the other facts about the
built-in models that answering needs before torch is imported.

The seam (`kgdb.pipeline.retrieve`) serves a retriever through its twin whenever the twin applies,
so a cold `kgdb ask` imports no torch (seconds). The table is keyed by registry name because the
torch classes are exactly what must not be imported to ask them; a test checks every name against
the registry and compares each twin with its torch module on random subgraphs, so a twin added here
is covered without editing the test.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

import numpy as np

from kgdb.scoring.retrievers import ScoredSubgraph, cosine_dde_scores, cosine_scores
from kgdb.scoring.weights import read_arrays

TRAINABLE_BUILTINS = frozenset({"subgraphrag", "rapl", "cosine-dde"})
"""The built-in retrievers that train: a cold `kgdb ask` whose default retriever has no checkpoint for
the graph falls back to the shipped cosine-dde without loading the torch models just to learn that
they are trainable (a test checks this set against the registered classes)."""

NumpyScorer = Callable[[np.ndarray, np.ndarray, ScoredSubgraph, np.ndarray], np.ndarray]
"""One question's triple scores from (entity table, relation table, fetched subgraph, question vector)."""

TwinScore = Callable[[dict[str, np.ndarray], dict, np.ndarray, np.ndarray, ScoredSubgraph, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class RetrieverTwin:
    """A registered retriever's `forward` for one question, in numpy.

    `score(weights, config, entity, relation, subgraph, question)`: `weights` are the model's
    safetensors arrays (its `state_dict`), `config` its model config (`Retriever.config()`).
    `trained`: the twin serves the retriever with a checkpoint only; otherwise without one only (an
    untrained retriever handed a checkpoint keeps its torch module, which knows what to make of it).
    """

    score: TwinScore
    trained: bool


def _cosine(
    weights: dict[str, np.ndarray],
    config: dict,
    entity: np.ndarray,
    relation: np.ndarray,
    sg: ScoredSubgraph,
    question: np.ndarray,
) -> np.ndarray:
    return cosine_scores(entity, relation, sg.head, sg.relation, sg.tail, sg.entity_idx, question)


RETRIEVER_TWINS: dict[str, RetrieverTwin] = {
    "cosine": RetrieverTwin(_cosine, trained=False),
    "cosine-dde": RetrieverTwin(cosine_dde_scores, trained=True),
}


def numpy_scorer(retriever: str, checkpoint: Path | None = None) -> NumpyScorer | None:
    """The twin of `retriever` with the weights in `checkpoint`, or None: its torch module scores."""
    twin = RETRIEVER_TWINS.get(retriever)
    if twin is None or twin.trained != (checkpoint is not None):
        return None
    weights: dict[str, np.ndarray] = {}
    config: dict = {}
    if checkpoint is not None:
        config = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))["model"]
        weights = read_arrays(checkpoint / "model.safetensors")
    return partial(twin.score, weights, config)
