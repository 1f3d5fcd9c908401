"""The one record policy of every question reader (`eval`, `train` and `load questions`): a typed
model of one JSONL/parquet question row, and one-line reasons for what it refuses.

A lone string where a list is expected (`"answer": "Paris"`) is a one-element list, as people
write it; it is never iterated into characters. Imported only where question files are read:
pydantic costs a CLI start ~0.2 s.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

SHOWN = 60  # characters of a refused value quoted in its message


class QuestionRowError(ValueError):
    """Why one question record is refused, in one line (the caller adds file:line)."""


def _text(value: Any, what: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} contains an unpaired surrogate (a broken \\u escape)") from None
    return value


def _key(value: Any) -> str:
    # JSON numbers are fine as ids (`"id": 17`); booleans, floats and containers are mistakes.
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"must be a string or an integer, got {type(value).__name__}")
    out = _text(str(value), "it")
    if not out.strip() or "\x00" in out:
        raise ValueError("must be non-empty and without NUL characters")
    return out


def _question(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty string")
    return _text(value, "it")


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):  # one name, not a sequence of characters
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"must be a list of strings, got {type(value).__name__}")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise ValueError(f"must be a list of strings, got an element of type {type(v).__name__}")
        out.append(_text(str(v), "an element"))
    return out


def _hop(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be an integer, got {type(value).__name__}")
    return value


Key = Annotated[str, BeforeValidator(_key)]
Question = Annotated[str, BeforeValidator(_question)]
Names = Annotated[list[str], BeforeValidator(_names)]
Hop = Annotated[int | None, BeforeValidator(_hop)]


class QuestionRow(BaseModel):
    """One question: `id, question, q_entity, answer, a_entity` and an optional `hop`; other columns
    (RoG's `graph`, CWQ's `sparql`) are kept unread."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: Key
    question: Question
    q_entity: Names = []
    answer: Names = []
    a_entity: Names = []
    hop: Hop = None


def validate_row(record: Any) -> QuestionRow:
    """`record` (a decoded JSON value or a parquet row) as a `QuestionRow`, or QuestionRowError."""
    if not isinstance(record, dict):
        raise QuestionRowError(f"expected a JSON object per line, got {type(record).__name__}")
    try:
        return QuestionRow.model_validate(record)
    except ValidationError as exc:
        raise QuestionRowError(_first_error(exc)) from None


def parse_line(text: str) -> QuestionRow:
    """One JSONL line as a `QuestionRow`, or QuestionRowError saying why not."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise QuestionRowError(f"invalid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise QuestionRowError("invalid JSON (nested too deep)") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise QuestionRowError(f"invalid JSON ({str(exc)[:SHOWN]})") from None
    return validate_row(record)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    field = ".".join(str(p) for p in err["loc"]) or "record"
    if err["type"] == "missing":
        return f"record needs a `{field}`"
    msg = err["msg"].removeprefix("Value error, ")
    shown = repr(err.get("input"))
    shown = shown if len(shown) <= SHOWN else shown[:SHOWN] + "…"
    return f"`{field}` {msg} (got {shown})"
