"""Issue 12's property: whatever bytes, encodings and line endings the readers are fed, there is
no traceback; either the source loads cleanly (and a reload leaves identical counts) or it is
refused with one `file:line` (or, for a source with nothing in it, `file:`) error."""

from __future__ import annotations

import json
import re
import unicodedata

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import wipe
from kgdb.cypher.schema import counts
from kgdb.errors import InputError
from kgdb.loaders.sources import open_source
from kgdb.loaders.writer import write_graph

NFD = unicodedata.normalize("NFD", "Beyoncé")
VALUES = st.one_of(
    st.sampled_from([
        "Barack Obama", " Barack Obama ", "\ufeffBarack Obama", NFD, unicodedata.normalize("NFC", NFD),
        "m.0abc", "/m/0abc", "people.person.spouse_s", "/people/person/nationality", "Gotham [/b] City",
        'say "hi"', "a,b", "SCORED", "x" * 5000, "nul\x00here", "1992-10-03", "", " ", "\r", "`tick`",
        "\\ud800", "\\u00e9",
    ]),
    st.text(max_size=12),
)
ENDINGS = st.sampled_from(["\n", "\r\n", "\r"])
ENCODINGS = st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "latin-1", "cp1252"])
NS = "http://rdf.freebase.com/ns/"


def _line(kind: str, fields: list[str]) -> str:
    if kind == "tsv":
        return "\t".join(fields)
    if kind == "csv":
        return ",".join(f'"{f}"' if i % 2 else f for i, f in enumerate(fields))
    if kind == "jsonl":
        return json.dumps({"id": "q", "graph": [fields[:3]] if len(fields) >= 3 else [fields]}, ensure_ascii=len(fields) % 2 == 0)
    s, p, o = (fields + ["", "", ""])[:3]
    return f'<{NS}{s}> <{NS}{p}> "{o}"@en .' if len(fields) % 2 else f"<{NS}{s}> <{NS}{p}> <{NS}{o}> ."


@st.composite
def sources(draw):
    kind = draw(st.sampled_from(["tsv", "csv", "jsonl", "nt"]))
    if draw(st.integers(0, 5)) == 0:
        return kind, draw(st.binary(max_size=300))
    lines = draw(st.lists(st.lists(VALUES, min_size=0, max_size=4), max_size=8))
    text = draw(ENDINGS).join(_line(kind, fields) for fields in lines) + draw(st.sampled_from(["", "\n", "\r\n"]))
    return kind, text.encode(draw(ENCODINGS), errors="replace")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=sources())
def test_readers_never_crash_and_reloads_are_identical(graph, tmp_path, case):
    kind, data = case
    path = tmp_path / f"random.{kind}"
    path.write_bytes(data)
    try:
        src = open_source(path)
    except InputError as exc:
        message = str(exc)
        assert re.match(rf"{re.escape(str(path))}:(\d+:)? ", message), message
        assert "\n" not in message
        return
    assert src.triples
    wipe(graph)
    first = write_graph(graph, src.triples, src.names, literals=src.literals)
    after_first = counts(graph)
    again = write_graph(graph, src.triples, src.names, literals=src.literals)
    assert counts(graph) == after_first and again.triples_created == 0
    assert after_first["triples"] == first.triples_in == len(set(src.triples))
