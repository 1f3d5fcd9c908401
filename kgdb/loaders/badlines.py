"""The one input policy of every reader: how values are normalised, which values are refused,
and what happens to a bad line (stop at the first, or count and go on)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from kgdb.errors import InputError

EXAMPLES = 5
BOM = "\ufeff"
# Entity ids and relation names are keys of range indexes (unique constraints), whose entries
# Neo4j caps at ~8 KB; a longer value fails deep inside a write transaction and leaves entities
# without their relationships. Half the cap leaves room for Neo4j's own key overhead.
MAX_KEY_BYTES = 4_000
RELATIONS_CACHED = 100_000
_WHITESPACE_CONTROLS = frozenset("\t\n\r")


def normalise_text(value: str) -> str:
    """The normalisation policy: no BOM (leading or trailing), no surrounding whitespace, Unicode NFC.

    Without it `\\ufeffBarack Obama`, `Barack Obama\\ufeff`, ` Barack Obama ` and the NFD spelling of
    a name would be separate entities beside `Barack Obama`.
    """
    if value.isascii():  # no BOM, already NFC: the common case, kept cheap for 50M-line sources
        return value.strip()
    out = value.strip().strip(BOM).strip()
    return out if out.isascii() else unicodedata.normalize("NFC", out)


@dataclass
class BadLines:
    """Stops on a bad line with `file:line: why`, unless `skip` is set; then counts them.

    Also counts the values `clean` changed, so the load summary can say how many it normalised.
    """

    skip: bool = False
    count: int = 0
    examples: list[str] = field(default_factory=list)
    normalised: int = 0
    # Relation names already accepted: a source repeats a few thousand of them millions of times,
    # and the per-character check is most of the reading time. Capped, so it stays small.
    _relations_ok: set[str] = field(default_factory=set, repr=False)

    def __call__(self, message: str, path: Path | str, line: int | None) -> None:
        if not self.skip:
            raise InputError(message + " (pass --skip-bad to skip such lines)", path=path, line=line)
        self.count += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(f"{path}:{line}: {message}" if line is not None else f"{path}: {message}")

    def clean(self, value: str) -> str:
        out = normalise_text(value)
        self.normalised += out != value
        return out

    def key_ok(self, value: str, what: str, path: Path | str, line: int | None) -> bool:
        """Whether `value` can be an entity id or relation name; reports it as bad otherwise."""
        if not value:
            self(f"{what} is empty", path, line)
            return False
        if "\x00" in value:
            self(f"{what} contains a NUL character", path, line)
            return False
        if not self.text_ok(value, what, path, line):
            return False
        size = len(value) if value.isascii() else len(value.encode("utf-8"))
        if size > MAX_KEY_BYTES:
            self(f"{what} is {size:,} bytes long; Neo4j cannot index values over {MAX_KEY_BYTES:,} bytes", path, line)
            return False
        return True

    def text_ok(self, value: str, what: str, path: Path | str, line: int | None) -> bool:
        """No control characters but line breaks and tabs (ESC, BEL, NUL ... would reach terminals and
        Browser raw; multi-line literal values are real data) and no unpaired surrogates (JSON and
        N-Triples escapes can spell them; no database can store them)."""
        if not value.isprintable():
            bad = next((c for c in value if c not in _WHITESPACE_CONTROLS and unicodedata.category(c) == "Cc"), None)
            if bad is not None:
                self(f"{what} contains the control character U+{ord(bad):04X}", path, line)
                return False
        if value.isascii():
            return True
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            self(f"{what} contains an unpaired surrogate (a broken \\u escape)", path, line)
            return False
        return True

    def relation_ok(self, value: str, path: Path | str, line: int | None) -> bool:
        from kgdb.loaders.writer import RESERVED_TYPES

        if value in self._relations_ok:
            return True
        if not self.key_ok(value, "relation name", path, line):
            return False
        if any(c in _WHITESPACE_CONTROLS for c in value):
            self("relation name contains a control character", path, line)
            return False
        if value in RESERVED_TYPES:
            self(f"relation name {value} is reserved for kgdb's own relationships; rename it", path, line)
            return False
        if len(self._relations_ok) < RELATIONS_CACHED:
            self._relations_ok.add(value)
        return True

    def triple_ok(self, h: str, r: str, t: str, path: Path | str, line: int | None) -> bool:
        return (
            self.key_ok(h, "head", path, line)
            and self.relation_ok(r, path, line)
            and self.key_ok(t, "tail", path, line)
        )


def decode_line(raw: bytes, path: Path | str, line_no: int, bad: BadLines) -> str | None:
    """UTF-8 text of one raw line without its line ending, or None when it is skipped as bad.

    A byte-order mark at the start of the file is dropped (Windows editors write one).
    """
    try:
        text = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        bad(f"invalid UTF-8 at byte {exc.start}", path, line_no)
        return None
    if line_no == 1 and text.startswith(BOM):
        bad.normalised += 1
        text = text[1:]
    return text
