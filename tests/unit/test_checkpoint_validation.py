"""A damaged or edited checkpoint is refused on load with one line naming its file, never a
traceback and never loaded with NaN weights; every saved config records the kgdb version."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import kgdb
from kgdb.models.checkpoints import (
    CONFIG,
    WEIGHTS,
    CheckpointError,
    find_checkpoint,
    list_checkpoints,
    load_model,
    save_checkpoint,
)
from kgdb.models.retrievers.subgraphrag import SubgraphRAG, SubgraphRAGConfig
from kgdb.scoring.weights import read_arrays

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def ckpt_dir(tmp_path):
    folder = tmp_path / "ckpts" / "small"
    save_checkpoint(
        SubgraphRAG(SubgraphRAGConfig(hidden=8), 16),
        folder,
        {"graph_fingerprint": "f" * 64, "embedding_model": "m", "embedding_dim": 16},
    )
    return folder


def _load(folder):
    return load_model(find_checkpoint(str(folder), folder.parent))


def _refused(folder, *needles: str, file: str | None = None) -> str:
    with pytest.raises(CheckpointError) as err:
        _load(folder)
    message = str(err.value)
    assert "\n" not in message and str(folder / (file or "")).rstrip("/") in message, message
    for needle in needles:
        assert needle in message, message
    return message


def test_a_saved_checkpoint_loads_and_records_the_kgdb_version(ckpt_dir):
    assert json.loads((ckpt_dir / CONFIG).read_text())["kgdb_version"] == kgdb.__version__
    assert isinstance(_load(ckpt_dir), SubgraphRAG)


@pytest.mark.parametrize("cut", [0, 7, 200, -40])
def test_truncated_weights_are_refused_naming_the_file(ckpt_dir, cut):
    data = (ckpt_dir / WEIGHTS).read_bytes()
    (ckpt_dir / WEIGHTS).write_bytes(data[:cut])
    _refused(ckpt_dir, "not a readable safetensors file", file=WEIGHTS)


def _rewrite(folder, change) -> None:
    tensors = {k: v.clone() for k, v in SubgraphRAG(SubgraphRAGConfig(hidden=8), 16).state_dict().items()}
    change(tensors)
    save_file(tensors, str(folder / WEIGHTS))


@pytest.mark.parametrize(
    "change, needle",
    [
        (lambda t: t["hidden.weight"].__setitem__((0, 0), float("nan")), "non-finite"),
        (lambda t: t["out.bias"].__setitem__(0, float("inf")), "non-finite"),
        (lambda t: t.__setitem__("hidden.weight", torch.zeros(8, 85)), "shape"),
        (lambda t: t.__setitem__("hidden.bias", t["hidden.bias"].double()), "dtype"),
        (lambda t: t.__setitem__("hidden.bias", t["hidden.bias"].to(torch.int64)), "dtype"),
        (lambda t: t.pop("out.bias"), "missing"),
        (lambda t: t.__setitem__("extra", torch.zeros(1)), "unexpected"),
    ],
    ids=["nan", "inf", "shape", "float64", "int64", "missing", "unexpected"],
)
def test_weights_that_do_not_fit_the_model_are_refused(ckpt_dir, change, needle):
    _rewrite(ckpt_dir, change)
    _refused(ckpt_dir, needle, file=WEIGHTS)


@pytest.mark.parametrize(
    "edit, needle",
    [
        (lambda c: "{not json", "not valid JSON"),
        (lambda c: b"\xff\xfe{}", "not valid JSON"),
        (lambda c: [1, 2], "JSON object"),
        (lambda c: {**c, "retriever": 7}, "retriever"),
        (lambda c: {**c, "retriever": "no-such-retriever"}, "no-such-retriever"),
        (lambda c: {**c, "model": "hidden=8"}, "model"),
        (lambda c: {**c, "model": {**c["model"], "hidden": "eight"}}, "hidden"),
        (lambda c: {**c, "model": {**c["model"], "hidden": [8]}}, "hidden"),
        (lambda c: {**c, "model": {**c["model"], "hidden": True}}, "hidden"),
        (lambda c: {**c, "model": {**c["model"], "hidden": 8.5}}, "hidden"),
        (lambda c: {**c, "model": {**c["model"], "hidden": -3}}, "hidden"),
        (lambda c: {**c, "model": {**c["model"], "width": 3}}, "width"),
        (lambda c: {**c, "embedding_dim": "sixteen"}, "embedding_dim"),
        (lambda c: {**c, "embedding_dim": 17}, "shape"),
    ],
    ids=[
        "broken",
        "not-utf8",
        "list",
        "retriever-type",
        "retriever-unknown",
        "model-type",
        "hidden-text",
        "hidden-list",
        "hidden-bool",
        "hidden-fraction",
        "hidden-negative",
        "unknown-setting",
        "dim-text",
        "dim-wrong",
    ],
)
def test_an_edited_config_is_refused_naming_the_file(ckpt_dir, edit, needle):
    config = json.loads((ckpt_dir / CONFIG).read_text())
    new = edit(config)
    if isinstance(new, bytes):
        (ckpt_dir / CONFIG).write_bytes(new)
    else:
        (ckpt_dir / CONFIG).write_text(new if isinstance(new, str) else json.dumps(new))
    _refused(ckpt_dir, needle)


def test_listing_checkpoints_skips_unreadable_configs(ckpt_dir):
    broken = ckpt_dir.parent / "broken"
    broken.mkdir()
    (broken / CONFIG).write_bytes(b"\xff[")
    (ckpt_dir.parent / "listed").mkdir()
    (ckpt_dir.parent / "listed" / CONFIG).write_text("[1]")
    assert [c.name for c in list_checkpoints(ckpt_dir.parent)] == ["small"]


def test_numpy_weights_with_nan_are_refused(ckpt_dir):
    _rewrite(ckpt_dir, lambda t: t["hidden.weight"].__setitem__((1, 2), float("nan")))
    with pytest.raises(CheckpointError, match="non-finite"):
        read_arrays(ckpt_dir / WEIGHTS)
    _rewrite(ckpt_dir, lambda t: None)
    assert np.isfinite(read_arrays(ckpt_dir / WEIGHTS)["hidden.weight"]).all()
