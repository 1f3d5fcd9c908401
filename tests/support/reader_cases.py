"""Generated question files and kgdb.toml files, and the property every reader must keep on them:
either the file reads into well-typed values, or it is refused with one `InputError` line that
starts with `file:line:` (a question record) or `file:` and names the key (a config file).

Shared by tests/unit/test_reader_properties.py (a few examples per run) and benchmarks/fuzz_readers.py
(tens of thousands)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from pathlib import Path

from hypothesis import strategies as st

from kgdb.config import SecretStr, Settings
from kgdb.data.questions import read_questions
from kgdb.errors import InputError
from kgdb.loaders.badlines import BadLines
from kgdb.loaders.questions import read_question_file

# -- question files ---------------------------------------------------------------------------
NAMES = st.sampled_from(["Paris", " Paris ", "\ufeffParis", "m.0abc", "Zoë", "a [b] c", "x\x1b[2Jy", 'q"uote', "", " "])
SCALARS = st.one_of(
    NAMES,
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True, allow_subnormal=False),
    st.booleans(),
    st.none(),
    st.text(max_size=8),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=8,
)
LIST_FIELD = st.one_of(st.lists(NAMES, max_size=3), NAMES, JSON_VALUES)
ENCODINGS = st.sampled_from(["utf-8", "utf-8", "utf-8", "utf-8-sig", "utf-16", "latin-1"])


@st.composite
def question_records(draw) -> str:
    """One JSONL line: mostly a record with some fields wrong, sometimes not a record at all."""
    mode = draw(st.integers(0, 9))
    if mode == 0:
        return draw(
            st.sampled_from(
                [
                    "{",
                    "[1, 2]",
                    "null",
                    '"text"',
                    "[" * 3000 + "]" * 3000,
                    '{"id": 1' + "2" * 5000 + "}",
                    '{"id": "\\ud800", "question": "x"}',
                ]
            )
        )
    if mode == 1:
        return json.dumps(draw(JSON_VALUES))
    record = {
        "id": draw(st.one_of(st.text(min_size=1, max_size=6), st.integers(), JSON_VALUES)),
        "question": draw(st.one_of(st.sampled_from(["where is paris?", "who {x} is?"]), JSON_VALUES)),
    }
    for key in ("q_entity", "answer", "a_entity"):
        if draw(st.booleans()):
            record[key] = draw(LIST_FIELD)
    if draw(st.integers(0, 3)) == 0:
        record["hop"] = draw(st.one_of(st.integers(0, 4), JSON_VALUES))
    if mode == 2:
        record.pop(draw(st.sampled_from(["id", "question"])))
    return json.dumps(record, ensure_ascii=draw(st.booleans()))


@st.composite
def metaqa_lines(draw) -> str:
    topic = draw(st.sampled_from(["Tom Hanks", "", "a]b", "Zoë"]))
    question = draw(st.sampled_from(["what did [{t}] star in", "who is {t}", "[{t}] and [{t}]"])).format(t=topic)
    answers = "|".join(draw(st.lists(st.sampled_from(["Big", "Splash", "", "x\ty"]), max_size=3)))
    return draw(st.sampled_from(["{q}\t{a}", "{q}", "{q}\t{a}\t{a}", "{q}\t{a}\r"])).format(q=question, a=answers)


@st.composite
def question_files(draw) -> tuple[str, bytes]:
    """(file suffix, bytes): JSONL or MetaQA text, sometimes arbitrary bytes."""
    kind = draw(st.sampled_from([".jsonl", ".jsonl", ".txt"]))
    if draw(st.integers(0, 7)) == 0:
        return kind, draw(st.binary(max_size=200))
    lines = draw(st.lists(question_records() if kind == ".jsonl" else metaqa_lines(), min_size=1, max_size=5))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    return kind, (ending.join(lines) + ending).encode(draw(ENCODINGS), errors="replace")


def _refusal(exc: InputError, path: Path, *, line_required: bool) -> str:
    message = str(exc)
    assert "\n" not in message and "Traceback" not in message, message
    pattern = rf"{re.escape(str(path))}:\d+: " if line_required else rf"{re.escape(str(path))}:(\d+:)? "
    assert re.match(pattern, message), message
    return "refused with file:line"


def check_question_file(path: Path) -> str:
    """Read `path` with every question reader; the outcome ("loaded", "refused with file:line")."""
    outcomes = set()
    try:
        qs = read_questions(path)
    except InputError as exc:
        outcomes.add(_refusal(exc, path, line_required=path.stat().st_size > 0))
    else:
        for q in qs.questions:
            assert isinstance(q.id, str) and q.id.strip() and isinstance(q.text, str) and q.text.strip()
            for names in (q.topics, q.answers):
                assert isinstance(names, list) and all(isinstance(n, str) for n in names)
            # a string split into characters would leave one-character names of a longer name
            assert not (len(q.topics) > 2 and all(len(t) == 1 for t in q.topics)), q.topics
        outcomes.add("loaded")
    for skip in (False, True):
        bad = BadLines(skip=skip)
        try:
            rows = read_question_file(path, bad)
        except InputError as exc:
            outcomes.add(_refusal(exc, path, line_required=True))
            continue
        for row in rows:
            assert isinstance(row["id"], str) and row["id"] and isinstance(row["text"], str)
            assert all(isinstance(n, str) and n for n in row["topics"] + row["answers"])
            assert row["hop"] is None or (isinstance(row["hop"], int) and not isinstance(row["hop"], bool))
        for example in bad.examples:
            assert re.match(rf"{re.escape(str(path))}:\d+: ", example), example
    return "refused with file:line" if "refused with file:line" in outcomes else "loaded"


# -- kgdb.toml ----------------------------------------------------------------------------------
FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
KEYS = st.one_of(st.sampled_from(sorted(FIELDS)), st.sampled_from(["port", "neo4j_url", "fetch_max_hubs", "x-y"]))
TOML_VALUES = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.floats(allow_nan=False, allow_subnormal=False).map(lambda f: repr(f) if math.isfinite(f) else "inf"),
    st.sampled_from(
        [
            "true",
            "false",
            "nan",
            "-inf",
            "1979-05-27",
            "07:32:00",
            "[]",
            "[1, 'a']",
            "{a = 1}",
            "''",
            "'bolt://localhost:7687'",
            "'/tmp/kgdb-cache'",
            "'cuda'",
            '"\\u0000"',
            "'''multi\nline'''",
        ]
    ),
    st.text(max_size=10).map(json.dumps),
)


@st.composite
def config_files(draw) -> bytes:
    if draw(st.integers(0, 7)) == 0:
        return draw(st.binary(max_size=120))
    lines = [f"{draw(KEYS)} = {draw(TOML_VALUES)}" for _ in range(draw(st.integers(0, 4)))]
    if draw(st.integers(0, 5)) == 0:
        lines.append(draw(st.sampled_from(["[neo4j]", "x = " + "[" * 2000 + "]" * 2000, "= 1", "a = 1\na = 2"])))
    return ("\n".join(lines) + "\n").encode(draw(ENCODINGS), errors="replace")


def check_config_file(path: Path) -> str:
    """`Settings()` with KGDB_CONFIG naming `path` (no other KGDB_* variable may be set)."""
    before = os.environ.get("KGDB_CONFIG")
    os.environ["KGDB_CONFIG"] = str(path)
    try:
        settings = Settings()
    except InputError as exc:
        _refusal(exc, path, line_required=False)
        if " must be " in str(exc):  # a value of the wrong type: the key is named
            assert re.search(r"key \w+ must be ", str(exc)), str(exc)
        return "refused naming the file"
    finally:
        if before is None:
            os.environ.pop("KGDB_CONFIG", None)
        else:
            os.environ["KGDB_CONFIG"] = before
    for name in FIELDS:
        value = getattr(settings, name)
        if isinstance(value, bool):
            raise AssertionError(f"{name} read as a boolean: {value!r}")
        if isinstance(value, float):
            assert math.isfinite(value), (name, value)
        assert value is None or isinstance(value, (str, int, float, Path, SecretStr)), (name, value)
    for name in ("neo4j_bolt_port", "neo4j_http_port"):
        assert 1 <= getattr(settings, name) <= 65535, (name, getattr(settings, name))
    return "loaded"
