"""Whatever bytes, encodings and line endings the triple readers are fed, there is no traceback; either
the source loads cleanly into a real Neo4j (and a reload leaves identical counts) or it is refused with
one `file:line` (or, for a source with nothing in it, `file:`) error."""

from __future__ import annotations

import json
import re
import unicodedata

from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from kgdb.cypher.schema import counts
from kgdb.errors import InputError
from kgdb.loaders.sources import open_source
from kgdb.loaders.writer import write_graph
from support.graphs import wipe

NFD = unicodedata.normalize("NFD", "Beyoncé")
GOOD = st.sampled_from(
    [
        "Barack Obama",
        " Barack Obama ",
        "\ufeffBarack Obama",
        NFD,
        unicodedata.normalize("NFC", NFD),
        "m.0abc",
        "/m/0abc",
        "people.person.spouse_s",
        "/people/person/nationality",
        "Gotham [/b] City",
        "say 'hi'",
        "1992-10-03",
        "`tick`",
        "Zoë",
    ]
)
BAD = st.sampled_from(["", " ", "\r", "SCORED", "x" * 5000, "nul\x00here", 'q"uote', "a,b", "\\ud800"])
VALUES = st.one_of(GOOD, GOOD, GOOD, BAD, st.text(max_size=12))
ENDINGS = st.sampled_from(["\n", "\r\n", "\n", "\r"])
ENCODINGS = st.sampled_from(["utf-8", "utf-8", "utf-8", "utf-8-sig", "utf-16", "latin-1", "cp1252"])
NS = "http://rdf.freebase.com/ns/"


def _line(kind: str, fields: list[str]) -> str:
    if kind == "tsv":
        return "\t".join(fields)
    if kind == "csv":
        return ",".join(f'"{f}"' if i % 2 else f for i, f in enumerate(fields))
    if kind == "jsonl":
        return json.dumps(
            {"id": "q", "graph": [fields[:3]] if len(fields) >= 3 else [fields]}, ensure_ascii=len(fields) % 2 == 0
        )
    s, p, o = (fields + ["", "", ""])[:3]
    return f'<{NS}{s}> <{NS}{p}> "{o}"@en .' if len(fields) % 2 else f"<{NS}{s}> <{NS}{p}> <{NS}{o}> ."


@st.composite
def sources(draw):
    kind = draw(st.sampled_from(["tsv", "csv", "jsonl", "nt"]))
    mode = draw(st.integers(0, 3))
    if mode == 3:
        return kind, draw(st.binary(max_size=300))
    good = st.lists(GOOD, min_size=3, max_size=3)
    if mode == 0:  # well-formed lines in an encoding the readers accept: must load, then reload identically
        lines = draw(st.lists(good, min_size=1, max_size=8))
        ending, encoding = draw(st.sampled_from(["\n", "\r\n"])), draw(st.sampled_from(["utf-8", "utf-8-sig"]))
    else:
        lines = draw(
            st.lists(
                st.one_of(good, good, st.lists(VALUES, min_size=3, max_size=3), st.lists(VALUES, max_size=4)),
                max_size=8,
            )
        )
        ending, encoding = draw(ENDINGS), draw(ENCODINGS)
    text = ending.join(_line(kind, fields) for fields in lines) + draw(st.sampled_from(["", "\n", "\r\n"]))
    return kind, text.encode(encoding, errors="replace")


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(case=sources(), skip_bad=st.booleans())
# a well-formed statement whose literal is empty: filtered out and counted, as a dump's other empty values are
@example(case=("nt", f'<{NS}Barack Obama> <{NS}Barack Obama> ""@en .'.encode()), skip_bad=False)
def test_readers_never_crash_and_reloads_are_identical(graph, tmp_path, case, skip_bad):
    kind, data = case
    path = tmp_path / f"random.{kind}"
    path.write_bytes(data)
    try:
        src = open_source(path, skip_bad=skip_bad)
    except InputError as exc:
        message = str(exc)
        assert re.match(rf"{re.escape(str(path))}:(\d+:)? ", message), message
        assert "\n" not in message
        event("refused with file:line")
        return
    if not src.triples:  # every line skipped as bad or filtered out: counted, nothing to write
        assert (skip_bad and src.bad.count) or src.filtered
        event("every line skipped")
        return
    event("loaded and reloaded")
    wipe(graph)
    first = write_graph(graph, src.triples, src.names, literals=src.literals)
    after_first = counts(graph)
    again = write_graph(graph, src.triples, src.names, literals=src.literals)
    assert counts(graph) == after_first and again.triples_created == 0
    assert after_first["triples"] == first.triples_in == len(set(src.triples))


# -- question files and kgdb.toml: the same property for the readers of `eval`, `train`, `load questions`
# and every command's settings (benchmarks/fuzz_readers.py runs tens of thousands of these cases).
