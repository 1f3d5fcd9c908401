"""A checkpoint whose config.json lacks a key the model needs (or holds it with the wrong type) is refused
with one CheckpointError naming the file and the key, on the route a cold `kgdb ask --checkpoint` takes:
the checkpoint chosen by name, then served by its numpy twin (no torch), or loaded as a torch module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgdb.config import Settings
from kgdb.models.checkpoints import CONFIG, WEIGHTS, CheckpointError, load_model, save_checkpoint
from kgdb.models.retrievers.cosine_dde import CosineDDE, CosineDDEConfig
from kgdb.pipeline.model_choice import GraphFacts, choose_retriever_model
from kgdb.scoring.twins import numpy_scorer

pytestmark = pytest.mark.usefixtures("one_thread")

DIM = 16
FACTS = GraphFacts("f" * 64, "d" * 64, "m", DIM)


@pytest.fixture
def folder(tmp_path) -> Path:
    out = tmp_path / "ckpts" / "dde"
    save_checkpoint(CosineDDE(CosineDDEConfig(), DIM), out, {"graph_fingerprint": "f" * 64, "embedding_model": "m"})
    return out


def _edit(folder: Path, edit) -> None:
    config = json.loads((folder / CONFIG).read_text())
    edit(config)
    (folder / CONFIG).write_text(json.dumps(config))


def _ask(folder: Path):
    """What `kgdb ask --retriever cosine-dde --checkpoint NAME` does before it fetches anything."""
    settings = Settings(checkpoints_dir=folder.parent)
    choice = choose_retriever_model(FACTS, settings, "cosine-dde", folder.name)
    assert choice.checkpoint is not None
    return numpy_scorer("cosine-dde", choice.checkpoint.path), choice.checkpoint


def _refused(call, folder: Path, file: str, *needles: str) -> str:
    with pytest.raises(CheckpointError) as err:
        call(folder)
    message = str(err.value)
    assert "\n" not in message and str(folder / file) in message, message
    for needle in needles:
        assert needle in message, message
    return message


def test_a_saved_checkpoint_is_served_by_its_twin(folder):
    scorer, ckpt = _ask(folder)
    assert scorer is not None and isinstance(load_model(ckpt), CosineDDE)


def test_a_config_without_model_is_refused_naming_file_and_key(folder):
    _edit(folder, lambda c: c.pop("model"))
    _refused(_ask, folder, CONFIG, "`model`", "missing")


def test_a_config_without_retriever_is_refused_naming_file_and_key(folder):
    _edit(folder, lambda c: c.pop("retriever"))
    _refused(_ask, folder, CONFIG, "`retriever`")


@pytest.mark.parametrize("key", ["walk_rounds", "dde_rounds", "dde_reverse_rounds"])
def test_the_twin_refuses_a_missing_model_setting(folder, key):
    _edit(folder, lambda c: c["model"].pop(key))
    _refused(_ask, folder, CONFIG, f"`model.{key}`", "missing")


@pytest.mark.parametrize("value", ["three", 2.5, -1, True, None])
def test_the_twin_refuses_a_model_setting_of_the_wrong_type(folder, value):
    def edit(config):
        config["model"]["walk_rounds"] = value

    _edit(folder, edit)
    _refused(_ask, folder, CONFIG, "walk_rounds")


def test_the_twin_refuses_weights_without_a_tensor_it_reads(folder):
    from safetensors.numpy import load_file, save_file

    arrays = load_file(str(folder / WEIGHTS))
    arrays.pop("mlp.2.bias")
    save_file(arrays, str(folder / WEIGHTS))
    _refused(_ask, folder, WEIGHTS, "mlp.2.bias")


def test_the_twin_called_on_its_own_checks_the_config_too(folder):
    _edit(folder, lambda c: c.pop("model"))
    _refused(lambda f: numpy_scorer("cosine-dde", f), folder, CONFIG, "`model`")
