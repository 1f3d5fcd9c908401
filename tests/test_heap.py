"""kgdb.heap: the objects alive after the first answer are frozen once per process (a fresh
interpreter, so that this test's own process is not the one frozen)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import gc
from kgdb.heap import freeze_loaded
assert gc.get_freeze_count() == 0
freeze_loaded()
first = gc.get_freeze_count()
kept = [[i] for i in range(1000)]  # containers allocated after the freeze stay collectable
freeze_loaded()
print(first, gc.get_freeze_count())
"""


def test_freeze_loaded_freezes_once_per_process():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True).stdout.split()
    first, second = map(int, out)
    assert first > 1000 and second == first
