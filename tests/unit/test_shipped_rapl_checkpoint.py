"""The RAPL checkpoint trained on WebQSP ships inside the package, and it is small."""

from __future__ import annotations

import json

import pytest

from kgdb.models.default import shipped_checkpoint

pytestmark = pytest.mark.usefixtures("one_thread")


def test_shipped_default_checkpoint_is_in_the_package():
    path = shipped_checkpoint("rapl")
    assert path is not None, "kgdb/models/default/rapl-webqsp is missing"
    cfg = json.loads((path / "config.json").read_text())
    assert cfg["retriever"] == "rapl" and cfg["dataset"] == "webqsp"
    assert (path / "model.safetensors").stat().st_size < 5_000_000
