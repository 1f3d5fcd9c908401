"""A bad question file is refused with one `file:line` error, never a traceback; the readers of
`eval`/`train` (`read_questions`) and of `load questions` (`read_question_file`) share one record
policy: a lone string is a one-element list, never a string split into characters."""

from __future__ import annotations

import json
import re

import pytest

from kgdb.data.questions import read_questions
from kgdb.errors import InputError
from kgdb.loaders.badlines import BadLines
from kgdb.loaders.questions import read_question_file


def _jsonl(tmp_path, *rows, name="questions.jsonl") -> object:
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def _refused(call, path, line: int | None, *needles: str) -> str:
    with pytest.raises(InputError) as err:
        call(path)
    message = str(err.value)
    where = f"{path}:{line}: " if line is not None else f"{path}: "
    assert message.startswith(where) and "\n" not in message, message
    for needle in needles:
        assert needle in message, message
    return message


GOOD = {"id": "q1", "question": "where is paris?", "q_entity": ["Paris"], "answer": ["France"]}


def test_a_lone_string_topic_or_answer_is_one_name_not_its_characters(tmp_path):
    path = _jsonl(tmp_path, {"id": "q1", "question": "where is paris?", "q_entity": "Paris", "answer": "France"})
    (q,) = read_questions(path).questions
    assert q.topics == ["Paris"] and q.answers == ["France"]
    (row,) = read_question_file(path)
    assert row["topics"] == ["Paris"] and row["answers"] == ["France"]


@pytest.mark.parametrize("reader", [read_questions, read_question_file], ids=["eval", "load"])
@pytest.mark.parametrize(
    "bad, needle",
    [
        ({**GOOD, "answer": {"a": 1}}, "`answer`"),
        ({**GOOD, "q_entity": [["Paris"]]}, "`q_entity`"),
        ({**GOOD, "hop": "two"}, "`hop`"),
        ({**GOOD, "hop": True}, "`hop`"),
        ({**GOOD, "question": ""}, "`question`"),
        ({**GOOD, "id": None}, "`id`"),
        ({**GOOD, "id": ["a"]}, "`id`"),
        ([1, 2, 3], "JSON object"),
        ("{not json", "JSON"),
        ("[" * 100_000 + "]" * 100_000, "JSON"),
        ('{"id": 1' + "1" * 5000 + ', "question": "x"}', "JSON"),
    ],
    ids=[
        "answer-object",
        "nested-topic",
        "hop-text",
        "hop-bool",
        "empty-question",
        "null-id",
        "list-id",
        "array",
        "broken",
        "deep",
        "huge-int",
    ],
)
def test_a_bad_record_is_one_line_naming_file_line_and_field(tmp_path, reader, bad, needle):
    path = _jsonl(tmp_path, GOOD, bad)
    _refused(reader, path, 2, needle)


@pytest.mark.parametrize("reader", [read_questions, read_question_file], ids=["eval", "load"])
def test_non_utf8_jsonl_is_refused_with_its_line(tmp_path, reader):
    path = tmp_path / "questions.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b"\n" + b'{"id": "q\xff", "question": "x"}\n')
    _refused(reader, path, 2, "UTF-8")


@pytest.mark.parametrize("reader", [read_questions, read_question_file], ids=["eval", "load"])
def test_metaqa_text_files_are_checked_line_by_line(tmp_path, reader):
    folder = tmp_path / "1-hop"
    folder.mkdir()
    path = folder / "qa.txt"
    path.write_bytes("what movies did [Tom Hanks] star in\tBig|Splash\n".encode() + b"who directed [Big\xe9]\tPenny\n")
    _refused(reader, path, 2, "UTF-8")
    path.write_text("what movies did [Tom Hanks] star in\tBig|Splash\nno topic here\tX\n", encoding="utf-8")
    _refused(reader, path, 2, "[topic]")
    path.write_text("what movies did [Tom Hanks] star in\tBig|Splash\n", encoding="utf-8")
    assert [q.topics for q in read_questions(path).questions] == [["Tom Hanks"]]


def test_load_questions_skips_bad_records_when_asked_and_counts_them(tmp_path):
    path = _jsonl(tmp_path, GOOD, {**GOOD, "id": "q2", "answer": {"a": 1}}, "[" * 5000)
    bad = BadLines(skip=True)
    rows = read_question_file(path, bad)
    assert [r["id"] for r in rows] == ["q1"] and bad.count == 2
    assert all(re.match(rf"{re.escape(str(path))}:[23]: ", e) for e in bad.examples), bad.examples
