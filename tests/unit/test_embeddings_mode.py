"""Which embeddings a load writes: `auto` is eager up to the threshold, then lazy, and an unknown
mode is one clear error."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kgdb.cli import app
from kgdb.config import AUTO_LAZY_ABOVE, EmbeddingMode, resolve_embedding_mode

pytestmark = pytest.mark.usefixtures("one_thread")


def test_auto_is_eager_up_to_the_threshold_then_lazy():
    assert resolve_embedding_mode("auto", AUTO_LAZY_ABOVE) is EmbeddingMode.eager
    assert resolve_embedding_mode("auto", AUTO_LAZY_ABOVE + 1) is EmbeddingMode.lazy
    assert resolve_embedding_mode(EmbeddingMode.lazy, 1) is EmbeddingMode.lazy
    assert resolve_embedding_mode("eager", 10**9) is EmbeddingMode.eager
    with pytest.raises(ValueError):
        resolve_embedding_mode("sometimes", 1)


def test_an_unknown_embeddings_mode_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(
        app, ["load", "freebase-subset", str(tmp_path / "kg.tsv"), "--embeddings", "sometimes"], env={"COLUMNS": "400"}
    )
    assert result.exit_code == 2
    text = " ".join(result.output.replace("│", " ").split())
    assert "--embeddings" in text and "'sometimes' is not one of 'eager', 'lazy', 'auto'" in text
