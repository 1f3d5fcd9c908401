"""Reading and checking a checkpoint's `config.json` without torch.

The torch loader (`kgdb.models.checkpoints`) and the numpy twins (`kgdb.scoring.twins`) both read a
config through here, so a missing or mistyped key is one CheckpointError naming the file and the key,
whichever of them serves the checkpoint (a twin that read the file itself ended in a KeyError).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kgdb.scoring.weights import CheckpointError

CONFIG = "config.json"
AGAIN = "restore the file or train the checkpoint again"


def check_config(config: Any, where: Path) -> None:
    """Refuse a config.json without the keys every checkpoint has, or whose fields have the wrong JSON
    types (a hand edit, another tool's file), before any of it reaches a model constructor, which would
    fail with a traceback or, worse, not fail."""
    if not isinstance(config, dict):
        raise CheckpointError(f"{where}: expected a JSON object, got {type(config).__name__}")
    for key in ("retriever", "model"):
        if key not in config:
            raise CheckpointError(f"{where}: `{key}` is missing; {AGAIN}")
    if not isinstance(config.get("retriever"), str):
        raise CheckpointError(f"{where}: `retriever` must be a retriever name, got {config.get('retriever')!r}")
    dim = config.get("embedding_dim")
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim < 0):
        raise CheckpointError(f"{where}: `embedding_dim` must be a whole number, got {dim!r}")
    model = config.get("model")
    if not isinstance(model, dict):
        raise CheckpointError(f"{where}: `model` must be a JSON object of settings, got {type(model).__name__}")
    for key, value in model.items():
        # the JSON scalars a model setting can be: a list or object here is an edit, never a setting
        if value is not None and not isinstance(value, (bool, int, float, str)):
            raise CheckpointError(f"{where}: model setting `{key}` must be a number, true/false or text, got {value!r}")


def read_config(path: Path) -> dict[str, Any]:
    """A checkpoint's config.json as a dict, or CheckpointError naming the file (and the key at fault)."""
    try:
        config = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        raise CheckpointError(f"{path}: not valid JSON ({why}); {AGAIN}") from None
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot be read ({exc.strerror})") from None
    check_config(config, path)
    return config


def count_setting(config: dict[str, Any], key: str, where: Path) -> int:
    """The whole, non-negative model setting `key` (a number of rounds, a width) a numpy twin reads."""
    model = config["model"]
    if key not in model:
        raise CheckpointError(f"{where}: `model.{key}` is missing; {AGAIN}")
    value = model[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CheckpointError(f"{where}: `model.{key}` must be a whole number of at least 0, got {value!r}")
    return value
