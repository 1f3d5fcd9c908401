"""kgdb.heap: the objects alive after the first answer are frozen once per process, and given back to
the collector at exit (a fresh interpreter, so that this test's own process is not the one frozen)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import atexit
import gc
atexit.register(lambda: print(gc.get_freeze_count()))  # registered before kgdb's handler, so it runs after it
from kgdb.heap import freeze_loaded
before = gc.get_freeze_count()  # an interpreter's site hooks may have frozen some already
freeze_loaded()
first = gc.get_freeze_count()
kept = [[i] for i in range(1000)]  # containers allocated after the freeze stay collectable
freeze_loaded()
print(before, first, gc.get_freeze_count())
"""


def test_freeze_loaded_freezes_once_per_process_and_unfreezes_at_exit():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    before, first, second, at_exit = map(int, done.stdout.split())
    assert first > before + 1000 and second == first
    assert at_exit == 0  # back with the collector at shutdown: extension modules that count leaks at exit stay quiet
