"""Which checkpoint serves a method on the connected graph, and why.

Read from checkpoint config files and one fingerprint query (no torch), so the answering policy
(`kgdb.qa.policy`), `kgdb retrieve`, `kgdb eval retrieval`, `Kgdb.retrieve` and `RetrievePipeline`
all choose the same way. How far a choice may stray from what was asked is the caller's `Fallback`:
an evaluation measures the method it names, `kgdb ask` answers with the best model it has.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.cypher.tables import graph_fingerprint
from kgdb.models.checkpoints import (
    Checkpoint,
    CheckpointError,
    NoCheckpointError,
    check_compatible,
    find_checkpoint,
    list_checkpoints,
)
from kgdb.models.default import DEFAULT_RETRIEVER, SHIPPED_FOLDER, shipped_checkpoint
from kgdb.pipeline.vectors import data_fingerprint, trained_on_this_data
from kgdb.scoring.twins import TRAINABLE_BUILTINS

UNTRAINED_BUILTINS = frozenset({"cosine"})  # checked against the registry by tests/unit/test_fast_ask.py
RANKER_KIND, PLANNER_KIND = "rrp-ranker", "rrp-planner"  # the `retriever` their checkpoints record


class Fallback(enum.Enum):
    """What may stand in when the method asked for has no checkpoint trained on this graph."""

    NONE = "none"  # nothing: `NoCheckpointError`
    SHIPPED = "shipped"  # the same method's checkpoint shipped with kgdb
    STAND_IN = "stand-in"  # that, else the shipped default retriever (cosine-dde), else cosine


@dataclass(frozen=True)
class GraphFacts:
    """What the choice reads of the connected graph: its fingerprints and embedding space."""

    fingerprint: str
    data: str  # `kgdb.pipeline.vectors.data_fingerprint`
    embedding_model: str | None
    dim: int | None

    @classmethod
    def of(cls, graph: Graph) -> "GraphFacts":
        fingerprint, info = graph_fingerprint(graph)
        return cls(
            fingerprint, data_fingerprint(info), info.get("model"), int(info["dim"]) if info.get("dim") else None
        )

    def trained_here(self, ckpt: Checkpoint) -> bool:
        return bool(trained_on_this_data(ckpt.config, self.fingerprint, self.data))

    def misfit(self, ckpt: Checkpoint) -> str | None:
        """Why `ckpt` cannot read this graph's vectors (another embedding model), or None."""
        if self.dim is None:
            return None
        try:
            check_compatible(ckpt, self.embedding_model, self.dim)
        except CheckpointError as exc:
            return str(exc)
        return None


@dataclass(frozen=True)
class ModelChoice:
    """A method and the checkpoint it runs with; `why` in one sentence; `note`, when set, is told
    with every answer (a model that was not trained on this graph stands in)."""

    retriever: str
    checkpoint: Checkpoint | None
    why: str
    note: str | None = None

    @property
    def shipped(self) -> bool:
        return self.checkpoint is not None and self.checkpoint.path.parent == SHIPPED_FOLDER

    def checkpoint_text(self) -> str:
        if self.checkpoint is None:
            return "none"
        origin = "shipped with kgdb" if self.shipped else str(self.checkpoint.path)
        return f"{self.checkpoint.name} ({origin}, trained on {self.checkpoint.config.get('dataset', '?')})"


def is_trainable(retriever: str) -> bool:
    """From the built-in facts where they answer (no torch), else from the registry."""
    if retriever in TRAINABLE_BUILTINS or retriever in UNTRAINED_BUILTINS:
        return retriever in TRAINABLE_BUILTINS
    from kgdb.models import registry

    return registry.get(retriever).trainable


def newest_trained(settings: Settings, facts: GraphFacts, kind: str) -> Checkpoint | None:
    """The newest checkpoint of `kind` trained on this graph (or a load of the same data)."""
    found = [
        c
        for c in list_checkpoints(Path(settings.checkpoints_dir))
        if c.config.get("retriever") == kind and facts.trained_here(c)
    ]
    return max(found, key=lambda c: (c.config.get("created", ""), c.name)) if found else None


def shipped(kind: str) -> Checkpoint | None:
    folder = shipped_checkpoint(kind)
    return find_checkpoint(str(folder), SHIPPED_FOLDER) if folder is not None else None


def named(settings: Settings, checkpoint: str) -> Checkpoint:
    return find_checkpoint(checkpoint, Path(settings.checkpoints_dir))


def choose_retriever_model(
    facts: GraphFacts,
    settings: Settings,
    retriever: str,
    checkpoint: str | None = None,
    fallback: Fallback = Fallback.NONE,
    *,
    asked: bool = True,
) -> ModelChoice:
    """A registered retriever's checkpoint: the one named, none for an untrained retriever, the newest
    trained on this graph, else what `fallback` allows. `asked`: the user named `retriever` (else the
    policy chose it, and a stand-in's note does not name it)."""
    if checkpoint:
        return ModelChoice(retriever, named(settings, checkpoint), "the checkpoint named with --checkpoint")
    if not is_trainable(retriever):
        return ModelChoice(retriever, None, f"{retriever} is not trained: it needs no checkpoint")
    own = newest_trained(settings, facts, retriever)
    if own is not None:
        return ModelChoice(retriever, own, f"the newest {retriever} checkpoint trained on this graph")
    missing = (
        f"no {retriever} checkpoint in {settings.checkpoints_dir} was trained on this graph "
        f"(fingerprint {facts.fingerprint[:12]})"
    )
    if fallback is Fallback.NONE:
        raise NoCheckpointError(
            f"{missing}; pass --checkpoint NAME or run `kgdb train {retriever}`", retriever=retriever
        )
    return _stand_in(facts, retriever, missing, fallback, asked)


def _stand_in(facts: GraphFacts, retriever: str, missing: str, fallback: Fallback, asked: bool) -> ModelChoice:
    why = missing if asked else "no retriever was trained on this graph"
    candidates = [retriever] if fallback is Fallback.SHIPPED else list(dict.fromkeys([retriever, DEFAULT_RETRIEVER]))
    for name in candidates:
        ckpt = shipped(name)
        if ckpt is None:
            continue
        if (misfit := facts.misfit(ckpt)) is not None:
            why += f"; the shipped {name} checkpoint does not fit this graph: {misfit}"
            continue
        trained = ckpt.config.get("dataset", "?")
        used = f"the {name} checkpoint shipped with kgdb (trained on {trained})"
        return ModelChoice(name, ckpt, f"{why}, so {used} answers", note=f"{why}; meanwhile {used} was used")
    if fallback is Fallback.SHIPPED:
        raise NoCheckpointError(f"{why}; pass --checkpoint NAME or run `kgdb train {retriever}`", retriever=retriever)
    return ModelChoice(
        "cosine",
        None,
        f"{why}, so the untrained cosine retriever answers",
        note=f"{why}; meanwhile the cosine retriever was used",
    )


def choose_path_model(
    facts: GraphFacts, settings: Settings, checkpoint: str | None = None, *, required: bool = True
) -> ModelChoice:
    """What plans relation paths: the named planner or ranker, else the newest ranker trained on this
    graph, else the newest planner, else the portable ranker shipped with kgdb where it fits the
    graph's embedding model. Without any: `NoCheckpointError` when `required`, else no checkpoint."""
    retriever = "relation-paths"
    if checkpoint:
        return ModelChoice(retriever, named(settings, checkpoint), "the planner or ranker named with --checkpoint")
    for kind in (RANKER_KIND, PLANNER_KIND):
        if (own := newest_trained(settings, facts, kind)) is not None:
            return ModelChoice(retriever, own, f"the newest {kind} trained on this graph")
    missing = f"no RRP planner or ranker in {settings.checkpoints_dir} was trained on this graph"
    portable = shipped(RANKER_KIND)
    misfit = facts.misfit(portable) if portable is not None else "this install has none"
    if portable is not None and misfit is None:
        why = (
            f"{missing}, so the portable rrp-ranker shipped with kgdb ranks the relation paths "
            f"(trained on {portable.config.get('dataset', '?')})"
        )
        # the note `kgdb ask` prints: one line; `--explain` gives the whole why
        note = "the portable rrp-ranker shipped with kgdb ranks the paths (`kgdb train rrp-ranker` trains one for this graph)"
        return ModelChoice(retriever, portable, why, note=note)
    if required:
        raise NoCheckpointError(
            f"{missing} and the portable rrp-ranker cannot stand in ({misfit}); "
            "run `kgdb train rrp-ranker` or pass --checkpoint NAME",
            retriever=PLANNER_KIND,
        )
    return ModelChoice(retriever, None, f"{missing} and the portable rrp-ranker cannot stand in ({misfit})")


def portable_ranker_misfit(facts: GraphFacts) -> str | None:
    """Why the shipped portable ranker cannot plan on this graph, or None when it can."""
    portable = shipped(RANKER_KIND)
    return "this install ships none" if portable is None else facts.misfit(portable)
