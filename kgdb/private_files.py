"""Files and folders kgdb writes belong to the user alone: files 0600, folders 0700.

Cached tables hold the graph's names and vectors, evaluation runs hold questions and answers,
checkpoints hold trained weights; under the usual umask (022) every user of the machine could read
them. kgdb's own writers set the mode explicitly instead of kgdb setting a process umask, which
would change what the application embedding kgdb writes. `KGDB_FILE_MODE` (octal, e.g. `0640` to
share with the group) sets another file mode; folders get it with an execute bit for each read bit.
Folders that already exist keep their mode: only the ones kgdb creates are made private.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO, Any

from kgdb.errors import InputError

PRIVATE_FILE = 0o600
MODE_VARIABLE = "KGDB_FILE_MODE"
_OPEN_FLAGS = {"w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND}


def file_mode() -> int:
    """The mode of files kgdb writes: 0600, or `KGDB_FILE_MODE`."""
    raw = os.environ.get(MODE_VARIABLE, "").strip()
    if not raw:
        return PRIVATE_FILE
    try:
        mode = int(raw, 8)
    except ValueError:
        mode = -1
    if not 0 <= mode <= 0o777 or not mode & 0o600 == 0o600:
        raise InputError(
            f"must be an octal file mode that lets its owner read and write, such as 0600 or 0640; got {raw!r}",
            path=MODE_VARIABLE,
        )
    return mode


def dir_mode() -> int:
    """The mode of folders kgdb creates: the file mode with an execute bit wherever it may read."""
    mode = file_mode()
    return mode | ((mode & 0o444) >> 2)


def private_dir(path: Path | str) -> Path:
    """`path` and its missing parents created; those created get `dir_mode()`."""
    path = Path(path)
    missing = []
    at = path
    while not at.exists() and at != at.parent:
        missing.append(at)
        at = at.parent
    path.mkdir(parents=True, exist_ok=True)
    for folder in reversed(missing):
        # Another process may have made it meanwhile; a folder whose mode cannot be set (a file
        # system without modes, another user's) is written to as it is.
        with contextlib.suppress(OSError):
            os.chmod(folder, dir_mode())
    return path


def make_private(path: Path | str) -> None:
    """Give a file kgdb has just written (by a library that names it by path) `file_mode()`."""
    with contextlib.suppress(OSError):
        os.chmod(path, file_mode())


def open_private(path: Path | str, mode: str = "w", **kwargs: Any) -> IO[Any]:
    """`open(path, mode)` for writing (`w`, `a`, `wb`, `ab`), the file created with `file_mode()`, never
    readable by others in between; an existing file gets the mode too."""
    flags = _OPEN_FLAGS.get(mode.replace("b", ""))
    if flags is None:
        raise ValueError(f"open_private writes only (w, a, wb, ab), got mode {mode!r}")
    fd = os.open(path, flags, file_mode())
    try:
        with contextlib.suppress(OSError):
            os.fchmod(fd, file_mode())  # O_CREAT's mode passes through the umask and leaves an old file as it is
        return os.fdopen(fd, mode, **kwargs)
    except BaseException:
        os.close(fd)
        raise


def write_private_text(path: Path | str, text: str, encoding: str = "utf-8") -> None:
    """`Path.write_text` with the file made private (see `open_private`)."""
    with open_private(path, "w", encoding=encoding) as fh:
        fh.write(text)
