"""Checkpoints: `<checkpoints_dir>/<name>/model.safetensors` + `config.json`, loadable by name.

`config.json` holds the model config, embedding model and dimension, the graph fingerprint of the
tables it was trained on, the training settings and the metrics; evaluation results are written
next to it (`eval-<dataset>-<split>-<retriever>.json`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgdb.config import dump_json
from kgdb.errors import KgdbError
from kgdb.private_files import make_private, private_dir
from kgdb.scoring.checkpoint_config import CONFIG, check_config, read_config
from kgdb.scoring.weights import CheckpointError, read_arrays  # the torch-free reader raises CheckpointError too

if TYPE_CHECKING:
    from kgdb.models.base import Retriever

# torch (safetensors.torch, the registry) is imported only where weights are read or written:
# finding a checkpoint, or finding that there is none (the fallback of `kgdb ask`), is
# JSON only and must not cost a cold process the torch import.

WEIGHTS = "model.safetensors"


@dataclass
class Checkpoint:
    path: Path
    config: dict[str, Any]

    @property
    def name(self) -> str:
        return self.path.name


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


def _check_settings_types(retriever: str, model: dict[str, Any], where: Path) -> None:
    """Each model setting of the type its Config field declares (JSON has no int/float/bool distinction
    Python would enforce: `true` is 1 and 8.5 reaches a layer size)."""
    import dataclasses
    import math
    import typing

    from kgdb.models import registry

    try:
        cls = registry.get(retriever)
    except KgdbError as exc:
        raise CheckpointError(f"{where}: {exc}") from None
    hints = typing.get_type_hints(cls.Config)
    fields = {f.name for f in dataclasses.fields(cls.Config)}
    for key, value in model.items():
        kind = hints.get(key) if key in fields else None
        checks: dict[Any, bool] = {
            int: isinstance(value, int) and not isinstance(value, bool),
            float: isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value),
            bool: isinstance(value, bool),
            str: isinstance(value, str),
        }
        ok = checks.get(kind, True)
        if not ok:
            raise CheckpointError(
                f"{where}: model setting `{key}` must be {getattr(kind, '__name__', kind)}, got {value!r}"
            )


def save_checkpoint(model: Retriever, directory: Path, config: dict[str, Any]) -> Path:
    """Write weights and config; `config` gets `retriever`, `model` and `created` filled in."""
    from safetensors.torch import save_file

    private_dir(directory)
    full = {
        **config,
        "retriever": model.name,
        "model": {k: v for k, v in model.config().items() if k != "retriever"},
        "embedding_dim": model.embedding_dim or config.get("embedding_dim"),
    }
    full.setdefault("created", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    full["kgdb_version"] = kgdb_version()  # the code that wrote it: a later load can say which one
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, str(directory / WEIGHTS), metadata={"retriever": model.name})
    make_private(directory / WEIGHTS)
    dump_json(full, directory / CONFIG)
    return directory


def kgdb_version() -> str:
    """`kgdb.__version__`, read from the package already imported (an import of `kgdb` here would make
    the model layer import the package's public API, for the import checker)."""
    return str(getattr(sys.modules["kgdb"], "__version__", "unknown"))


def find_checkpoint(name_or_path: str, checkpoints_dir: Path) -> Checkpoint:
    for candidate in (Path(name_or_path), checkpoints_dir / name_or_path):
        if (candidate / CONFIG).is_file():
            # resolved: a relative --checkpoint to a shipped model must still be recognised as shipped
            return Checkpoint(candidate.resolve(), read_config(candidate / CONFIG))
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
                out.append(Checkpoint(cfg.parent, read_config(cfg)))
            except CheckpointError:  # a damaged one is no candidate; naming it by --checkpoint says why
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

    return {k: torch.from_numpy(v) for k, v in read_arrays(path).items()}


def load_model(ckpt: Checkpoint, device: str = "cpu") -> Retriever:
    """The checkpoint's model with its weights, each checked against the model first: readable,
    finite, of the model's names, shapes and dtypes (CheckpointError naming the file otherwise)."""
    where = ckpt.path / CONFIG
    check_config(ckpt.config, where)
    _check_settings_types(ckpt.config["retriever"], ckpt.config.get("model") or {}, where)
    try:
        model = build_model(ckpt.config)
    except (KgdbError, TypeError, ValueError, RuntimeError) as exc:  # settings a model cannot be built with
        raise CheckpointError(f"{where}: {' '.join(str(exc).split())[:300]}") from None
    weights = ckpt.path / WEIGHTS
    if model.trainable:
        if not weights.is_file():
            raise CheckpointError(f"checkpoint {ckpt.path} has no {WEIGHTS}")
        state = read_weights(weights)
        check_state(state, model.state_dict(), weights)
        model.load_state_dict(state)
    return model.to(device).eval()


def check_state(state: dict, expected: dict, where: Path) -> None:
    """The same tensor names, shapes and dtypes as the model's own (`load_state_dict` would cast a
    float64 tensor silently and fail on the rest with a multi-line traceback)."""
    missing, unexpected = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    if missing or unexpected:
        parts = ([f"missing {', '.join(missing[:5])}"] if missing else []) + (
            [f"unexpected {', '.join(unexpected[:5])}"] if unexpected else []
        )
        raise CheckpointError(
            f"{where}: tensors do not fit the model ({'; '.join(parts)}); was it written by another model?"
        )
    for key, want in expected.items():
        got = state[key]
        if tuple(got.shape) != tuple(want.shape):
            raise CheckpointError(
                f"{where}: tensor {key} has shape {tuple(got.shape)}, the model needs {tuple(want.shape)}"
            )
        if got.dtype != want.dtype:
            raise CheckpointError(f"{where}: tensor {key} has dtype {got.dtype}, the model needs {want.dtype}")


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
