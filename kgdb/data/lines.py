"""Lines of a source file read with bounded memory: a line over the limit is refused while it is read,
not after a whole multi-gigabyte line was held in memory (iterating over a file object reads each line
whole, however long)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator, Protocol

from kgdb.errors import InputError
from kgdb.limits import MAX_LINE_BYTES

# Told (message, path, line number) about a line over the limit: raises, or returns to skip the line.
TooLongFn = Callable[[str, Path | str, int], None]


class Readable(Protocol):
    """A binary file: plain, gzip or any other with a bounded `readline`."""

    def readline(self, size: int | None = -1, /) -> bytes: ...


def _refuse(message: str, path: Path | str, line: int) -> None:
    raise InputError(message, path=path, line=line)


def too_long_message(limit: int) -> str:
    return f"line is longer than {limit:,} bytes, the most kgdb reads in one line; is this the right file?"


def bounded_lines(
    fh: Readable, path: Path | str, limit: int = MAX_LINE_BYTES, too_long: TooLongFn = _refuse
) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw line with its line end) of each line of at most `limit` bytes.

    A longer line goes to `too_long` as soon as its first `limit + 1` bytes are read; when `too_long`
    returns, the rest of the line is read and dropped in chunks of `limit` bytes, and reading goes on.
    """
    line_no = 0
    readline, size = fh.readline, limit + 1  # looked up once: this loop runs once per line of 50M-line sources
    while raw := readline(size):
        line_no += 1
        if len(raw) <= limit:
            yield line_no, raw
            continue
        too_long(too_long_message(limit), path, line_no)
        while not raw.endswith(b"\n"):
            raw = fh.readline(limit)
            if not raw:
                return
