"""One normalisation policy in every reader (byte-order mark, surrounding whitespace, NFC) for triples
and question topics alike, and bad values refused naming file and line, or skipped with --skip-bad."""

from __future__ import annotations

import unicodedata

import pytest

from kgdb.errors import InputError
from kgdb.loaders.sources import open_source
from support.sources import NFC, NFD

# -- BOM, whitespace, NFD ---------------------------------------------------------------


@pytest.mark.parametrize(
    "name, content",
    [
        ("bom.tsv", "\ufeffhead\trelation\ttail\nBarack Obama\tpeople.person.spouse_s\tMichelle Obama\n"),
        (
            "spaces.tsv",
            "Barack Obama\tpeople.person.spouse_s\tMichelle Obama\n Barack Obama \tpeople.person.spouse_s\t Michelle Obama\r\n",
        ),
        ("bom.csv", '\ufeffhead,relation,tail\n"Barack Obama ",people.person.spouse_s,Michelle Obama\n'),
        ("nfd.tsv", f"{NFD}\tmusic.artist.genre\tPop\n{NFC}\tmusic.artist.genre\tPop\n"),
        (
            "nfd.jsonl",
            f'\ufeff{{"id": "q", "graph": [["{NFD}", "music.artist.genre", " Pop"], ["{NFC}", "music.artist.genre", "Pop"]]}}\n',
        ),
        (
            "nfd.nt",
            f'\ufeff<http://rdf.freebase.com/ns/m.0a> <http://rdf.freebase.com/ns/music.artist.genre> "{NFD}" .\n'
            f'<http://rdf.freebase.com/ns/m.0a> <http://rdf.freebase.com/ns/music.artist.genre> "{NFC}" .\n',
        ),
    ],
)
def test_every_reader_normalises_bom_whitespace_and_nfc(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    src = open_source(path)
    values = {v for t in src.triples for v in t}
    assert len(set(src.triples)) == 1, src.triples
    assert all(v == unicodedata.normalize("NFC", v.strip()) and "\ufeff" not in v for v in values)
    assert src.bad.normalised >= 1


def test_question_topics_are_normalised_like_triples(tmp_path):
    from kgdb.loaders.questions import read_question_file

    path = tmp_path / "q.jsonl"
    path.write_text(
        f'\ufeff{{"id": " q1 ", "question": "who?", "q_entity": ["{NFD} "], "a_entity": [" Pop"], "answer": ["Pop"]}}\n'
    )
    (row,) = read_question_file(path)
    assert row["id"] == "q1" and row["topics"] == [NFC] and row["answer_entities"] == ["Pop"]


# -- NUL, unterminated quote, empty file, reserved relation -----------------------------
@pytest.mark.parametrize(
    "name, content, line, message",
    [
        ("nul.tsv", b"a\tr.x\tb\nc\tr.\x00x\td\n", 2, "NUL"),
        ("quote.csv", b'a,r.x,b\n"c,r.x,d\n', 2, "bad CSV quoting"),
        ("reserved.tsv", b"a\tr.x\tb\nc\tSCORED\td\n", 2, "reserved"),
        ("reserved.jsonl", b'{"graph": [["a", "ABOUT", "b"]]}\n', 1, "reserved"),
        ("control.tsv", b"a\tr.\x1bx\tb\n", 1, "control character"),
    ],
)
def test_bad_values_name_file_and_line_and_honour_skip_bad(tmp_path, name, content, line, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError, match=message) as err:
        open_source(path)
    assert str(err.value).startswith(f"{path}:{line}:")
    assert open_source(path, skip_bad=True).bad.count == 1
