"""Real small filesystems (tmpfs mounts), for the cache-fault tests of tests/unit and the full-disk tests
of tests/db."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import pytest


def mount(parent: Path, size: str = "1m", *, read_only: bool = False, leave_free: int | None = None) -> Path:
    """A fresh tmpfs of `size` under `parent`, filled with one file leaving `leave_free` bytes where
    asked; skips the test where this machine cannot mount one."""
    path = parent / f"fs-{uuid.uuid4().hex[:6]}"
    path.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True, text=True
    )
    if out.returncode:
        pytest.skip(f"cannot mount a tmpfs here ({out.stderr.strip()})")
    if leave_free is not None:
        free = shutil.disk_usage(path).free
        (path / "filler").write_bytes(b"\0" * max(0, free - leave_free))
    if read_only:
        subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)
    return path


def unmount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)
