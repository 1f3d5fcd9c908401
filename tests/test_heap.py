"""kgdb.heap: the objects alive after the first answer are frozen once per process (a fresh
interpreter, so that this test's own process is not the one frozen)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import gc
from kgdb.heap import freeze_loaded
before = gc.get_freeze_count()  # an interpreter's site hooks may have frozen some already
freeze_loaded()
first = gc.get_freeze_count()
kept = [[i] for i in range(1000)]  # containers allocated after the freeze stay collectable
freeze_loaded()
print(before, first, gc.get_freeze_count())
"""


def test_freeze_loaded_freezes_once_per_process():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    before, first, second = map(int, done.stdout.split())
    assert first > before + 1000 and second == first
