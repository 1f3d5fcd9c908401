"""benchmarks/device.py runs from an exported folder alone (no database): one row of figures per
device (SubgraphRAG and the shipped RAPL checkpoint), and a clear one-line refusal for a folder
that was never exported."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np

from kgdb.data.cache import CachedQuestion, save_cache
from support import ROOT

SCRIPT = ROOT / "benchmarks" / "device.py"


def _question(i: int, rng) -> CachedQuestion:
    n, m = 12, 30
    head, tail = rng.integers(0, n, m), rng.integers(0, n, m)
    labels = np.zeros(m, bool)
    labels[:3] = True
    q = rng.normal(size=8).astype(np.float32)
    return CachedQuestion(
        f"q{i}",
        f"question {i}",
        head,
        rng.integers(0, 5, m),
        tail,
        rng.choice(40, n, replace=False),
        np.zeros(n, bool),
        np.array([int(head[0])]),
        labels,
        np.array([int(tail[0])]),
        1,
        q / np.linalg.norm(q),
        1,
    )


def test_run_prints_a_row_per_device_from_the_exported_folder(tmp_path):
    rng = np.random.default_rng(0)
    save_cache(tmp_path / "train.npz", [_question(i, rng) for i in range(6)], {"split": "train"})
    save_cache(tmp_path / "test.npz", [_question(i, rng) for i in range(6, 10)], {"split": "test"})
    entity, relation = rng.normal(size=(40, 8)).astype(np.float32), rng.normal(size=(5, 8)).astype(np.float32)
    np.savez(tmp_path / "tables.npz", entity=entity, relation=relation)
    (tmp_path / "meta.json").write_text(
        json.dumps(
            {
                "dataset": "tiny",
                "fingerprint": "f",
                "embedding_model": "no-such-model",
                "hops": 2,
                "cap": 100,
                "names": ["Paris", "France"],
            }
        )
    )
    out = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "run",
            str(tmp_path),
            "--device",
            "cpu",
            "--warmup",
            "2",
            "--val",
            "2",
            "--batch",
            "3",
            "--rapl",
            "",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "tiny: 6 train / 4 test subgraphs" in out.stdout
    # triples/s one question and 3 per call, p50 / p95, DDE s, epoch s; RAPL skipped when asked
    assert re.search(r"^cpu\s+[\d,]+\s+[\d,]+\s+[\d.]+ / [\d.]+\s+[\d.]+\s+[\d.]+\s+skipped$", out.stdout, re.M), (
        out.stdout
    )
    # the shipped RAPL checkpoint lives in the 384-d MiniLM space: an 8-d table is refused by name
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "run", str(tmp_path), "--device", "cpu", "--warmup", "2", "--val", "2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert (
        out.returncode == 1 and "rapl-webqsp" in out.stderr and "384" in out.stderr and "Traceback" not in out.stderr
    ), out.stderr


def test_embed_names_the_model_it_cannot_load(tmp_path):
    (tmp_path / "meta.json").write_text(
        json.dumps({"dataset": "tiny", "embedding_model": "no-such-model", "names": ["Paris"]})
    )
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "embed", str(tmp_path), "--device", "cpu"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 1 and "cannot load embedding model 'no-such-model'" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr, out.stderr


def test_run_refuses_a_folder_that_was_never_exported(tmp_path):
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "run", str(tmp_path / "nowhere"), "--device", "cpu"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 1 and "no meta.json here" in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_a_float16_copy_of_the_model_embeds_the_exported_names(tmp_path):
    copy = tmp_path / "minilm-fp16"
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "half-model", "--out", str(copy)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0 and "in float16" in out.stdout, out.stderr
    from safetensors import safe_open

    with safe_open(str(copy / "model.safetensors"), "pt") as f:
        assert {str(f.get_tensor(k).dtype) for k in f.keys()} <= {"torch.float16", "torch.int64"}  # noqa: SIM118
    (tmp_path / "meta.json").write_text(
        json.dumps(
            {"dataset": "tiny", "embedding_model": "all-MiniLM-L6-v2", "names": [f"name {i}" for i in range(40)]}
        )
    )
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "embed", str(tmp_path), "--device", "cpu", "--model", str(copy), "--batch", "8"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "40 names of tiny" in out.stdout and re.search(r"^cpu\s+float32\s+[\d,]+$", out.stdout, re.M), out.stdout
