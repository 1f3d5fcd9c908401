"""Loader readers on hand-written fixtures: every format, normalisation, filters and bad input.
No database here; tests/db/test_writer.py and tests/db/test_load_cli.py write to Neo4j."""

from __future__ import annotations

import collections
import gzip
import json
import shutil
from pathlib import Path

import pytest

from kgdb.errors import InputError, KgdbError
from kgdb.loaders.badlines import BadLines
from kgdb.loaders.ntriples import read_ntriples
from kgdb.loaders.questions import read_question_file
from kgdb.loaders.rog import fetch_rog, read_rog
from kgdb.loaders.sources import DEFAULT_QUESTIONS, DEFAULT_TRIPLES, open_source
from kgdb.loaders.triple_files import read_triple_file
from kgdb.loaders.writer import MID, RESERVED_TYPES, entity_rows
from support import FIXTURES


def test_fb15k_layout_normalises_mids_relations_and_names():
    src = read_triple_file(FIXTURES / "fb_small_triples.tsv", FIXTURES / "fb_small_names.tsv")
    assert ("m.02mjmr", "people.person.place_of_birth", "m.02hrh0_") in src.triples
    assert len(src.triples) == 6 and len(set(src.triples)) == 5  # one duplicate line
    assert src.names["m.0rh6k"] == "Washington, D.C."


def test_csv_with_header_and_quotes():
    src = read_triple_file(FIXTURES / "small.csv")
    assert ("Washington, D.C.", "location.location.containedby", "United States of America") in src.triples
    assert ('The "Big Apple"', "location.location.containedby", "United States of America") in src.triples
    assert len(src.triples) == 5


def test_rog_jsonl_and_parquet_give_the_union_of_graphs(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = read_rog([FIXTURES / "rog_small.jsonl"])
    assert len(src.triples) == 8 and len(set(src.triples)) == 7
    records = [json.loads(line) for line in (FIXTURES / "rog_small.jsonl").read_text().splitlines()]
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "test-00000.parquet")
    assert sorted(set(open_source(tmp_path / "test-00000.parquet").triples)) == sorted(set(src.triples))
    assert sorted(set(open_source(tmp_path).triples)) == sorted(set(src.triples))  # a folder of parquet files


def test_ntriples_prefix_strip_names_literals_and_gzip(tmp_path):
    src = read_ntriples(FIXTURES / "freebase_small.nt")
    assert ("m.02mjmr", "people.person.place_of_birth", "m.02hrh0_") in src.triples
    assert ("m.02mjmr", "people.person.date_of_birth", "1961-08-04") in src.triples
    assert ("m.02mjmr", "common.topic.alias", 'Barack "Barry" Obama') in src.triples  # unescaped, English only
    assert not any(t == "Obama" for _, _, t in src.triples)
    assert not any(r.startswith("http") or r == "type.object.name" for _, r, _ in src.triples)
    assert src.names == {
        "m.02mjmr": "Barack Obama",
        "m.02hrh0_": "Honolulu",
        "m.03gh4": "Hawaii",
        "m.025s5v9": "Michelle Obama",
    }
    assert {"1961-08-04", "28311.0", 'Barack "Barry" Obama'} == src.literals
    labels = {r.id: r.labels for r in entity_rows(src.triples, src.names, src.literals)}
    assert labels["m.0j4k1c9"] == ["Entity", "CVT"] and labels['Barack "Barry" Obama'] == ["Entity", "Literal"]

    gz = tmp_path / "dump.nt.gz"
    with (FIXTURES / "freebase_small.nt").open("rb") as fin, gzip.open(gz, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    assert read_ntriples(gz).triples == src.triples


def test_ntriples_filters(tmp_path):
    src = read_ntriples(FIXTURES / "freebase_small.nt", relation_prefixes=["people.person."])
    assert {r for _, r, _ in src.triples} == {
        "people.person.place_of_birth",
        "people.person.date_of_birth",
        "people.person.spouse_s",
    }
    assert "m.03gh4" not in src.names  # names only for entities the kept triples use
    mids = tmp_path / "mids.txt"
    mids.write_text("# Honolulu\n/m/02hrh0_\n")
    src = open_source(FIXTURES / "freebase_small.nt", mids_file=mids)
    assert sorted(src.triples) == [
        ("m.02hrh0_", "location.location.containedby", "m.03gh4"),
        ("m.02mjmr", "people.person.place_of_birth", "m.02hrh0_"),
    ]


def test_filters_apply_to_triple_files_too():
    src = open_source(FIXTURES / "small.csv", relation_prefixes=["location.country."])
    assert len(src.triples) == 2 and src.filtered == 3


@pytest.mark.parametrize(
    "name, content, line, message",
    [
        ("cols.tsv", b"a\tr\tb\nb\tr\n", 2, "expected 3"),
        ("empty.tsv", b"a\tr\tb\nb\t\tc\n", 2, "column 2 is empty"),
        ("utf8.tsv", b"a\tr\tb\nb\tr\t\xff\xfe\n", 2, "invalid UTF-8"),
        ("rog.jsonl", b'{"id": 1, "graph": [["a", "r", "b"]]}\n{"id": 2, "graph": [["a", "r"]]}\n', 2, "graph entry"),
        ("bad.nt", b"<http://rdf.freebase.com/ns/m.0a> <http://rdf.freebase.com/ns/r.x> .\n", 1, "N-Triples"),
    ],
)
def test_bad_input_names_file_and_line_or_is_counted(tmp_path, name, content, line, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError, match=message) as err:
        open_source(path)
    assert f"{path}:{line}:" in str(err.value) and "--skip-bad" in str(err.value)
    src = open_source(path, skip_bad=True)
    assert src.bad.count == 1 and f"{path}:{line}:" in src.bad.examples[0]


def test_fixture_bad_files_and_missing_file(tmp_path):
    with pytest.raises(InputError, match=r"bad_columns.tsv:2: expected 3"):
        open_source(FIXTURES / "bad_columns.tsv")
    assert len(open_source(FIXTURES / "bad_empty.tsv", skip_bad=True).triples) == 2
    with pytest.raises(InputError, match="file not found"):
        open_source(tmp_path / "nope.tsv")
    with pytest.raises(InputError, match="unknown format"):
        (tmp_path / "x.xml").write_text("<a/>")
        open_source(tmp_path / "x.xml")


def test_injection_shaped_names_are_read_verbatim():
    src = read_triple_file(FIXTURES / "injection.tsv")
    assert src.triples[1] == ("}) DETACH DELETE n //", "people.person.nationality", "MATCH (n) DETACH DELETE n")
    assert src.triples[2] == ("$param {x: 1}", "weird`type}) DELETE r //", "\\\\backslash\\\\")


def test_hub_download_fails_with_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no network here; the same message covers DNS/proxy failures
    with pytest.raises(KgdbError, match="cannot download rmanluo/RoG-webqsp.*pass them as SOURCE"):
        fetch_rog("webqsp", tmp_path)
    with pytest.raises(InputError, match="unknown dataset"):
        fetch_rog("freebase", tmp_path)


def test_questions_jsonl_and_rog_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = read_question_file(FIXTURES / "questions_small.jsonl")
    assert [r["id"] for r in rows] == ["q-1", "q-2"]
    assert rows[1] == {
        "id": "q-2",
        "text": "where was usain bolt born?",
        "answers": ["Sherwood Content"],
        "answer_entities": ["Sherwood Content"],
        "topics": ["Usain Bolt"],
        "hop": 1,
    }
    records = [json.loads(line) for line in (FIXTURES / "rog_small.jsonl").read_text().splitlines()]
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "q.parquet")
    assert [r["topics"] for r in read_question_file(tmp_path / "q.parquet")] == [["Jamaica"], ["Usain Bolt"]]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:1: record needs"):
        read_question_file(bad)
    assert read_question_file(bad, BadLines(skip=True)) == []


def test_default_subset_is_well_formed_and_questions_are_answerable():
    src = open_source(None)
    assert 500 <= len(src.triples) == len(set(src.triples)) and src.bad.count == 0
    relations = {r for _, r, _ in src.triples}
    assert "location.country.capital" in relations and not relations & RESERVED_TYPES
    assert all(r.count(".") >= 2 for r in relations)  # raw Freebase names
    rows = entity_rows(src.triples, src.names)
    cvt = [r.id for r in rows if "CVT" in r.labels]
    assert len(cvt) >= 30 and all(MID.match(c) for c in cvt)
    adj = collections.defaultdict(set)
    for h, _, t in src.triples:
        adj[h].add(t)
        adj[t].add(h)
    questions = read_question_file(DEFAULT_QUESTIONS)
    assert sum("capital of" in q["text"] for q in questions) >= 4 and any(q["hop"] >= 2 for q in questions)
    for q in questions:
        seen = frontier = set(q["topics"])
        assert frontier <= adj.keys(), q["id"]
        for _ in range(q["hop"]):
            frontier = {n for f in frontier for n in adj[f]} - seen
            seen = seen | frontier
        assert set(q["answers"]) <= seen, q["id"]
    assert DEFAULT_TRIPLES.read_text(encoding="utf-8").count("\n") == len(src.triples)


def test_loader_modules_do_not_import_torch():
    import subprocess
    import sys

    code = (
        "import sys, kgdb.loaders.writer, kgdb.loaders.sources, kgdb.loaders.bulk, kgdb.loaders.questions; "
        "sys.exit('torch' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_every_relationship_type_kgdb_writes_is_reserved():
    """A source relation named like kgdb's bookkeeping would be counted, fetched or deleted as such."""
    import re

    import kgdb

    written = set()
    for path in Path(kgdb.__file__).parent.rglob("*.cypher"):
        for clause in re.findall(r"(?:CREATE|MERGE)[^\n]*", path.read_text(encoding="utf-8")):
            written |= set(re.findall(r"\[\w*:([A-Z_]+)", clause))
    assert {"SCORED", "LABELLED", "STARTS_AT"} <= written  # the scan finds run and label types
    assert written <= RESERVED_TYPES, f"not reserved: {sorted(written - RESERVED_TYPES)}"


def test_a_trailing_byte_order_mark_makes_no_separate_entity(tmp_path):
    path = tmp_path / "bom.tsv"
    path.write_text(
        "Obama\ufeff\tpeople.person.nationality\tUSA\nObama\tpeople.person.place_of_birth\tHonolulu\ufeff\n",
        encoding="utf-8",
    )
    src = open_source(path)
    assert {h for h, _, _ in src.triples} == {"Obama"}
    assert ("Obama", "people.person.place_of_birth", "Honolulu") in src.triples
    assert src.bad.normalised == 2


@pytest.mark.parametrize("value, code", [("a\x1b[2Jb", "U+001B"), ("bell\x07", "U+0007"), ("x\x9by", "U+009B")])
def test_control_characters_in_an_entity_id_are_refused_with_file_and_line(tmp_path, value, code):
    path = tmp_path / "ctl.tsv"
    path.write_text(f"a\tr.x\tb\n{value}\tr.x\tc\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        open_source(path)
    assert str(err.value).startswith(f"{path}:2: head contains the control character {code}")
    assert open_source(path, skip_bad=True).bad.count == 1


def test_a_nul_or_escape_in_an_ntriples_name_is_refused_with_file_and_line(tmp_path):
    path = tmp_path / "names.nt"
    path.write_text(
        "<http://rdf.freebase.com/ns/m.01> <http://rdf.freebase.com/ns/people.person.nationality> "
        "<http://rdf.freebase.com/ns/m.02> .\n"
        '<http://rdf.freebase.com/ns/m.01> <http://rdf.freebase.com/ns/type.object.name> "Ob\\u0000ama"@en .\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError) as err:
        read_ntriples(path)
    assert str(err.value).startswith(f"{path}:2: name contains the control character U+0000")
    src = read_ntriples(path, bad=BadLines(skip=True))
    assert src.names == {} and src.bad.count == 1


def test_names_for_ids_absent_from_the_loaded_triples_are_counted(tmp_path):
    triples, names = tmp_path / "t.tsv", tmp_path / "n.tsv"
    triples.write_text("/m/01\t/people/person/nationality\t/m/02\n", encoding="utf-8")
    names.write_text("/m/01\tObama\n/m/02\tUSA\n/m/99\tNobody\n/m/98\tNo one\n", encoding="utf-8")
    src = open_source(triples, names=names)
    assert src.names == {"m.01": "Obama", "m.02": "USA"} and src.names_unused == 2
    nt = tmp_path / "n.nt"
    ns = "http://rdf.freebase.com/ns/"
    nt.write_text(
        f"<{ns}m.01> <{ns}people.person.nationality> <{ns}m.02> .\n"
        f'<{ns}m.01> <{ns}type.object.name> "Obama"@en .\n<{ns}m.77> <{ns}type.object.name> "Other"@en .\n',
        encoding="utf-8",
    )
    assert read_ntriples(nt).names_unused == 1
