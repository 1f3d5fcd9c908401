"""The one bad-input policy of every reader: stop at the first bad line, or count and go on."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kgdb.errors import InputError

EXAMPLES = 5


@dataclass
class BadLines:
    """Stops on a bad line with `file:line: why`, unless `skip` is set; then counts them."""

    skip: bool = False
    count: int = 0
    examples: list[str] = field(default_factory=list)

    def __call__(self, message: str, path: Path | str, line: int | None) -> None:
        if not self.skip:
            raise InputError(message + " (pass --skip-bad to skip such lines)", path=path, line=line)
        self.count += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(f"{path}:{line}: {message}" if line is not None else f"{path}: {message}")


def decode_line(raw: bytes, path: Path | str, line_no: int, bad: BadLines) -> str | None:
    """UTF-8 text of one raw line without its line ending, or None when it is skipped as bad."""
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        bad(f"invalid UTF-8 at byte {exc.start}", path, line_no)
        return None
