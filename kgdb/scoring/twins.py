"""Which registered models also score in numpy (their twins), and the other facts about the
built-in models that answering needs before torch is imported.

The seam (`kgdb.pipeline.retrieve`) serves a retriever through its twin whenever the twin applies,
so a cold `kgdb ask` imports no torch (seconds). The table is keyed by registry name because the
torch classes are exactly what must not be imported to ask them; a test checks every name against
the registry and compares each twin with its torch module on random subgraphs, so a twin added here
is covered without editing the test.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

import numpy as np

from kgdb.scoring.checkpoint_config import AGAIN, CONFIG, count_setting, read_config
from kgdb.scoring.retrievers import ScoredSubgraph, cosine_dde_scores, cosine_scores
from kgdb.scoring.weights import CheckpointError, read_arrays

TRAINABLE_BUILTINS = frozenset({"subgraphrag", "rapl", "cosine-dde"})
"""The built-in retrievers that train: a cold `kgdb ask` whose default retriever has no checkpoint for
the graph falls back to the shipped cosine-dde without loading the torch models just to learn that
they are trainable (a test checks this set against the registered classes)."""

NumpyScorer = Callable[[np.ndarray, np.ndarray, ScoredSubgraph, np.ndarray], np.ndarray]
"""One question's triple scores from (entity table, relation table, fetched subgraph, question vector)."""

WEIGHTS = "model.safetensors"

TwinScore = Callable[[dict[str, np.ndarray], dict, np.ndarray, np.ndarray, ScoredSubgraph, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class RetrieverTwin:
    """A registered retriever's `forward` for one question, in numpy.

    `score(weights, config, entity, relation, subgraph, question)`: `weights` are the model's
    safetensors arrays (its `state_dict`), `config` its model config (`Retriever.config()`).
    `trained`: the twin serves the retriever with a checkpoint only; otherwise without one only (an
    untrained retriever handed a checkpoint keeps its torch module, which knows what to make of it).
    `settings`: the model settings (whole numbers) and `tensors` the weights `score` reads, checked when
    the checkpoint is read, so that a config or weights file without one is refused naming it.
    """

    score: TwinScore
    trained: bool
    settings: tuple[str, ...] = ()
    tensors: tuple[str, ...] = ()


RETRIEVER_TWINS: dict[str, RetrieverTwin] = {
    # untrained: no weights, no config
    "cosine": RetrieverTwin(
        lambda _weights, _config, entity, relation, sg, question: cosine_scores(
            entity, relation, sg.head, sg.relation, sg.tail, sg.entity_idx, question
        ),
        trained=False,
    ),
    "cosine-dde": RetrieverTwin(
        cosine_dde_scores,
        trained=True,
        settings=("walk_rounds", "dde_rounds", "dde_reverse_rounds"),
        tensors=("mlp.0.weight", "mlp.0.bias", "mlp.2.weight", "mlp.2.bias"),
    ),
}


def numpy_scorer(retriever: str, checkpoint: Path | None = None) -> NumpyScorer | None:
    """The twin of `retriever` with the weights in `checkpoint`, or None: its torch module scores (and
    says why a checkpoint of another retriever does not fit). CheckpointError naming the file and the key
    when the checkpoint lacks a setting or a tensor the twin reads."""
    twin = RETRIEVER_TWINS.get(retriever)
    if twin is None or twin.trained != (checkpoint is not None):
        return None
    weights: dict[str, np.ndarray] = {}
    config: dict = {}
    if checkpoint is not None:
        where = checkpoint / CONFIG
        full = read_config(where)
        if full["retriever"] != retriever:
            return None
        config = {**full["model"], **{key: count_setting(full, key, where) for key in twin.settings}}
        weights = read_arrays(checkpoint / WEIGHTS)
        missing = [key for key in twin.tensors if key not in weights]
        if missing:
            raise CheckpointError(f"{checkpoint / WEIGHTS}: tensor {', '.join(missing)} is missing; {AGAIN}")
    return partial(twin.score, weights, config)
