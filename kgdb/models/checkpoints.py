"""Checkpoints: `<checkpoints_dir>/<name>/model.safetensors` + `config.json`, loadable by name.

`config.json` holds the model config, embedding model and dimension, the graph fingerprint of the
tables it was trained on, the training settings and the metrics; evaluation results are written
next to it (`eval-<dataset>-<split>-<retriever>.json`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgdb.config import dump_json
from kgdb.errors import KgdbError

if TYPE_CHECKING:
    from kgdb.models.base import Retriever

# torch (safetensors.torch, the registry) is imported only where weights are read or written:
# finding a checkpoint, or finding that there is none (the fallback of `kgdb ask`), is
# JSON only and must not cost a cold process the torch import.

WEIGHTS = "model.safetensors"
CONFIG = "config.json"


@dataclass
class Checkpoint:
    path: Path
    config: dict[str, Any]

    @property
    def name(self) -> str:
        return self.path.name


class CheckpointError(KgdbError):
    """A checkpoint is missing, unreadable or does not fit the graph."""


class NoCheckpointError(CheckpointError):
    """No checkpoint of a trainable retriever was found (by name, or for the connected graph)."""

    def __init__(self, message: str, retriever: str):
        super().__init__(message)
        self.retriever = retriever


def build_model(config: dict[str, Any]) -> Retriever:
    """An untrained model of the checkpoint's registered retriever and hyper-parameters."""
    from kgdb.models import registry

    model_cfg = dict(config.get("model") or {})
    dim = int(config.get("embedding_dim") or model_cfg.pop("embedding_dim", 0) or 0)
    model_cfg.pop("embedding_dim", None)
    return registry.build(str(config.get("retriever")), model_cfg, dim)


def save_checkpoint(model: Retriever, directory: Path, config: dict[str, Any]) -> Path:
    """Write weights and config; `config` gets `retriever`, `model` and `created` filled in."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    full = {
        **config,
        "retriever": model.name,
        "model": {k: v for k, v in model.config().items() if k != "retriever"},
        "embedding_dim": model.embedding_dim or config.get("embedding_dim"),
    }
    full.setdefault("created", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, str(directory / WEIGHTS), metadata={"retriever": model.name})
    dump_json(full, directory / CONFIG)
    return directory


def find_checkpoint(name_or_path: str, checkpoints_dir: Path) -> Checkpoint:
    for candidate in (Path(name_or_path), checkpoints_dir / name_or_path):
        if (candidate / CONFIG).is_file():
            # resolved: a relative --checkpoint to a shipped model must still be recognised as shipped
            return Checkpoint(candidate.resolve(), json.loads((candidate / CONFIG).read_text(encoding="utf-8")))
    known = ", ".join(c.name for c in list_checkpoints(checkpoints_dir)) or "none"
    raise NoCheckpointError(
        f"no checkpoint {name_or_path!r} in {checkpoints_dir} (known: {known}); train one with `kgdb train NAME`",
        retriever="",
    )


def list_checkpoints(checkpoints_dir: Path) -> list[Checkpoint]:
    out = []
    if checkpoints_dir.is_dir():
        for cfg in sorted(checkpoints_dir.glob(f"*/{CONFIG}")):
            try:
                out.append(Checkpoint(cfg.parent, json.loads(cfg.read_text(encoding="utf-8"))))
            except json.JSONDecodeError:
                continue
    return out


def checkpoint_for_graph(checkpoints_dir: Path, retriever: str, fingerprint: str) -> Checkpoint:
    """The newest checkpoint of `retriever` trained on the graph with this table fingerprint."""
    matches = [
        c
        for c in list_checkpoints(checkpoints_dir)
        if c.config.get("retriever") == retriever and c.config.get("graph_fingerprint") == fingerprint
    ]
    if not matches:
        raise NoCheckpointError(
            f"no {retriever} checkpoint in {checkpoints_dir} was trained on this graph "
            f"(fingerprint {fingerprint[:12]}); pass --checkpoint NAME or run `kgdb train {retriever}`",
            retriever=retriever,
        )
    return max(matches, key=lambda c: (c.config.get("created", ""), c.name))


def read_weights(path: Path) -> dict:
    """The tensors of a `model.safetensors` on the CPU, subnormal floats set to zero (`read_arrays`)."""
    import torch

    from kgdb.models.weights import read_arrays

    return {k: torch.from_numpy(v) for k, v in read_arrays(path).items()}


def load_model(ckpt: Checkpoint, device: str = "cpu") -> Retriever:
    model = build_model(ckpt.config)
    weights = ckpt.path / WEIGHTS
    if model.trainable:
        if not weights.is_file():
            raise CheckpointError(f"checkpoint {ckpt.path} has no {WEIGHTS}")
        model.load_state_dict(read_weights(weights))
    return model.to(device).eval()


def check_compatible(ckpt: Checkpoint, embedding_model: str | None, dim: int) -> None:
    """Refuse a checkpoint trained with another embedding space than the graph's tables."""
    want_dim = ckpt.config.get("embedding_dim")
    if want_dim is not None and int(want_dim) != dim:
        raise CheckpointError(
            f"checkpoint {ckpt.name} expects {want_dim}-dim embeddings ({ckpt.config.get('embedding_model')}) "
            f"but the graph's tables have dimension {dim}"
        )
    want_model = ckpt.config.get("embedding_model")
    if embedding_model and want_model and want_model != embedding_model:
        raise CheckpointError(
            f"checkpoint {ckpt.name} was trained on {want_model} embeddings but the graph uses {embedding_model}"
        )
