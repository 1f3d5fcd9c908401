"""What kgdb writes is the user's own: files 0600, the folders it creates 0700, whatever the umask,
unless KGDB_FILE_MODE asks for another mode. Each file is written through the kgdb function that
writes it for real (a split cache, a checkpoint, a training state, results JSON); the database-side
writers (cached tables, evaluation runs) are checked in tests/db/test_private_outputs.py."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

import numpy as np
import pytest

from kgdb.config import dump_json
from kgdb.data.cache import CachedQuestion, load_cache, save_cache
from kgdb.errors import InputError


@pytest.fixture(autouse=True)
def usual_umask(monkeypatch):
    """The common umask (022), under which a plain write makes a file every user may read."""
    monkeypatch.delenv("KGDB_FILE_MODE", raising=False)
    before = os.umask(0o022)
    yield
    os.umask(before)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def modes(root) -> dict[str, int]:
    """Every file and folder under `root` (itself excluded) with its mode."""
    return {str(p.relative_to(root)): mode(p) for p in sorted(root.rglob("*"))}


def private(root) -> bool:
    return all(m == (0o700 if (root / name).is_dir() else 0o600) for name, m in modes(root).items())


def test_a_split_cache_is_private(tmp_path):
    item = CachedQuestion(
        qid="q0",
        question="q?",
        head=np.array([0]),
        relation=np.array([0]),
        tail=np.array([1]),
        entity_idx=np.arange(2),
        is_cvt=np.zeros(2, bool),
        topic=np.array([0]),
        labels=np.zeros(1, bool),
        answers=np.array([1]),
        n_answers_in_graph=1,
        question_embedding=np.ones(4, np.float32),
        hop=1,
    )
    path = tmp_path / "cache" / "subgraphs" / "webqsp-test-abc.npz"
    assert save_cache(path, [item], {"key": "k"})
    assert load_cache(path) is not None  # still readable by its owner
    assert modes(tmp_path / "cache") == {
        "subgraphs": 0o700,
        "subgraphs/webqsp-test-abc.json": 0o600,
        "subgraphs/webqsp-test-abc.npz": 0o600,
    }


def test_a_checkpoint_is_private(tmp_path):
    from kgdb.models.checkpoints import find_checkpoint, load_model, save_checkpoint
    from kgdb.models.retrievers.subgraphrag import SubgraphRAG, SubgraphRAGConfig

    save_checkpoint(SubgraphRAG(SubgraphRAGConfig(hidden=8), 16), tmp_path / "ckpt" / "mine", {"dataset": "d"})
    assert modes(tmp_path / "ckpt") == {"mine": 0o700, "mine/config.json": 0o600, "mine/model.safetensors": 0o600}
    assert load_model(find_checkpoint("mine", tmp_path / "ckpt")) is not None  # still readable by its owner


def test_results_json_is_private_and_an_existing_folder_keeps_its_mode(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    dump_json({"hit@1": 1.0}, shared / "runs" / "qa" / "metrics.json")
    assert mode(shared) == 0o755  # the user's own folder: not kgdb's to change
    assert private(shared / "runs")


def test_a_training_state_is_private(tmp_path):
    """The state the training loop saves after each epoch (weights, optimizer), through `fit` itself."""
    import torch

    from kgdb.training.fit import STATE_FILE, FitConfig, FitTask, fit

    @dataclass(frozen=True)
    class LineConfig:
        lr: float = 0.05
        batch_size: int = 2

    class Line(FitTask):
        kind, config, model = "line", LineConfig(), torch.nn.Linear(2, 1)

        def examples(self) -> int:
            return 4

        def loss(self, objective, batch):
            return objective(torch.ones(len(batch), 2)).pow(2).mean()

        @torch.no_grad()
        def validate(self):
            return (0.0,), 0.0

        def log(self, epoch, totals, metrics):
            return f"epoch {epoch}"

    fit(Line(), FitConfig(2, 10, 1, tmp_path / "runs" / "line" / STATE_FILE))
    assert modes(tmp_path / "runs") == {"line": 0o700, f"line/{STATE_FILE}": 0o600}


def test_kgdb_file_mode_shares_with_the_group_when_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("KGDB_FILE_MODE", "0640")
    dump_json({}, tmp_path / "runs" / "metrics.json")
    assert modes(tmp_path) == {"runs": 0o750, "runs/metrics.json": 0o640}


@pytest.mark.parametrize("value", ["644x", "0444", "1777", "-1"])
def test_a_bad_kgdb_file_mode_is_one_clear_error(tmp_path, monkeypatch, value):
    monkeypatch.setenv("KGDB_FILE_MODE", value)
    with pytest.raises(InputError, match="KGDB_FILE_MODE: must be an octal file mode"):
        dump_json({}, tmp_path / "metrics.json")
