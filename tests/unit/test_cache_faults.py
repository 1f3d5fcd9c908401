"""A cache folder that is full, read-only or holds damaged files (KGDB_CACHE_DIR) costs time, never
a command: one warning, no temporary files left behind, no traceback, and no SIGBUS from a
memory-mapped table. Real small filesystems (tmpfs) are mounted where the machine allows it."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kgdb.data import cache
from kgdb.data.cache import CachedQuestion, load_cache, save_cache


@pytest.fixture(autouse=True)
def warn_again(monkeypatch):
    monkeypatch.setattr(cache, "_warned", set())


def _items(n: int = 3, m: int = 20_000) -> list[CachedQuestion]:
    rng = np.random.default_rng(0)
    return [
        CachedQuestion(
            qid=f"q{i}",
            question="q?",
            head=rng.integers(0, 50, m),
            relation=rng.integers(0, 5, m),
            tail=rng.integers(0, 50, m),
            entity_idx=np.arange(50),
            is_cvt=np.zeros(50, bool),
            topic=np.array([0]),
            labels=np.zeros(m, bool),
            answers=np.array([1]),
            n_answers_in_graph=1,
            question_embedding=np.ones(8, np.float32),
            hop=1,
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("kind", ["full", "read-only"])
def test_a_split_cache_that_cannot_be_written_warns_once_and_leaves_nothing(small_fs, caplog, kind):
    folder = small_fs("256k", leave_free=16_384) if kind == "full" else small_fs("256k", read_only=True)
    target = folder / "subgraphs" / "webqsp-test-abc.npz" if kind == "read-only" else folder / "webqsp-test-abc.npz"
    with caplog.at_level(logging.WARNING, logger="kgdb.cache"):
        assert save_cache(target, _items(), {"key": "k"}) is False
        assert save_cache(target, _items(), {"key": "k"}) is False
    warnings = [r for r in caplog.records if r.name == "kgdb.cache"]
    assert len(warnings) == 1 and "going on without it" in warnings[0].getMessage()
    assert sorted(p.name for p in folder.rglob("*") if p.name != "filler") == []


def test_a_damaged_split_cache_is_a_miss_not_a_crash(tmp_path, caplog):
    path = tmp_path / "webqsp-test-abc.npz"
    assert save_cache(path, _items(1, 100), {"key": "k"})
    assert [q.qid for q in load_cache(path)] == ["q0"]
    path.write_bytes(path.read_bytes()[:300])
    with caplog.at_level(logging.WARNING, logger="kgdb.cache"):
        assert load_cache(path) is None
    path.with_suffix(".json").write_text("{", encoding="utf-8")
    assert load_cache(path) is None
    assert any("unreadable cache file" in r.getMessage() for r in caplog.records)


TABLE = """
import sys
from pathlib import Path
import numpy as np
from kgdb.cypher.tables import _memmap
path = Path(sys.argv[1])
table = _memmap(path, (2000, 64), np.float32)
table[:] = 1.0                      # every row touched, as a long run of asks would
assert float(table.sum()) == 2000 * 64
print("ok", type(table).__name__)
"""


def _open_table(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", TABLE, str(path)], capture_output=True, text=True, timeout=120)


def test_a_truncated_entity_table_is_replaced_before_it_is_mapped(tmp_path):
    path = tmp_path / "entity.npy"
    np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(2000, 64)).flush()
    with path.open("r+b") as fh:
        fh.truncate(4096)  # a copy cut short: its header still says 2000 rows
    out = _open_table(path)
    assert out.returncode == 0 and "ok memmap" in out.stdout, (out.returncode, out.stderr)
    assert path.stat().st_size > 2000 * 64 * 4


def test_an_entity_table_on_a_full_disk_is_never_a_bus_error(small_fs):
    folder = small_fs("1m", leave_free=64 * 1024)
    out = _open_table(folder / "entity.npy")
    assert out.returncode == 0, (out.returncode, out.stderr)  # -7: SIGBUS, the kernel found no block for a row
    assert "going on without it" in out.stderr and out.stderr.count("warning") == 1, out.stderr
    assert not [p for p in folder.iterdir() if ".tmp" in p.name]


def test_an_entity_table_in_a_read_only_folder_is_kept_in_memory(small_fs):
    folder = small_fs("1m", read_only=True)
    out = _open_table(folder / "tables" / "entity.npy")
    assert out.returncode == 0 and "ok" in out.stdout, (out.returncode, out.stderr)
    assert out.stderr.count("warning") == 1, out.stderr
