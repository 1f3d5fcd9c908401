"""The streamed --bulk path (kgdb.loaders.import_files): the import files hold exactly the graph
the in-memory readers describe, and a bulk-loaded graph equals the Bolt path's, in TSV, N-Triples
and RoG parquet, with repeated triples stored once. Memory use is a benchmark figure
(benchmarks/scale.py), not a test."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_load_cli import local_server  # noqa: F401 (fixture)
from test_writer import snapshot

from kgdb.cypher import Graph
from kgdb.errors import InputError
from kgdb.loaders.import_files import ESC, SEP, write_import_files
from kgdb.loaders.sources import open_source, open_stream
from kgdb.loaders.writer import LoadStats, entity_rows, write_graph

TSV = (
    "head\trelation\ttail\n"
    "/m/0obama\t/people/person/place_of_birth\t/m/0honolulu\n"
    "/m/0obama\t/people/person/spouse_s\t/m/0marriage\n"
    "/m/0marriage\t/people/marriage/spouse\t/m/0michelle\n"
    "/m/0marriage\t/people/marriage/from\t1992-10-03\n"
    "/m/0obama\t/people/person/place_of_birth\t/m/0honolulu\n"  # repeated: stored once
    "Quote 'single', \"double\"\tcommon.topic.alias\tBack`tick;semi,comma\\slash\n"
    "m.0honolulu\tlocation.location.containedby\tm.0hawaii\n"
    "/m/0obama\t/people/person/spouse_s\t/m/0marriage\n"  # repeated again
    "2001\tcommon.topic.notable_for\tm.0obama\n"  # a year as a head is not a literal
)
NAMES = '/m/0obama\tObama (old)\n/m/0obama\tBarack Obama\n/m/0honolulu\tHonolulu\n/m/0michelle\tMichelle Obama\nm.0hawaii\tHawaii, "the" state\n'
NT = (
    "\n".join(
        [
            '<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/type.object.name> "Barack Obama"@en .',
            '<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/type.object.name> "Obama again"@en .',
            '<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/people.person.date_of_birth> "1961-08-04"^^<http://www.w3.org/2001/XMLSchema#date> .',
            "<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/people.person.spouse_s> <http://rdf.freebase.com/ns/m.0marriage> .",
            "<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/people.person.spouse_s> <http://rdf.freebase.com/ns/m.0marriage> .",
            "<http://rdf.freebase.com/ns/m.0marriage> <http://rdf.freebase.com/ns/people.marriage.spouse> <http://rdf.freebase.com/ns/m.0michelle> .",
            '<http://rdf.freebase.com/ns/m.0michelle> <http://rdf.freebase.com/ns/type.object.name> "Michelle Obama"@en .',
            '<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/common.topic.description> "line one\\nline two, \\"quoted\\"\\ttab\\rcr"@en .',
            '<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/common.topic.description> "line one\\nline two, \\"quoted\\"\\ttab\\rcr"@en .',
            '<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/common.topic.alias> "Barry"@en .',
            '<http://rdf.freebase.com/ns/m.0obama> <http://rdf.freebase.com/ns/common.topic.alias> "Obama"@de .',
        ]
    )
    + "\n"
)


def _rog_parquet(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    graphs = [[["m.0a", "r.x", "m.0b"], ["m.0b", "r.y", "Bee"]], [["m.0a", "r.x", "m.0b"], ["Bee", "r.z", "2020"]]]
    pq.write_table(
        pa.table(
            {
                "id": ["q1", "q2"],
                "question": ["a?", "b?"],
                "answer": [["Bee"], ["2020"]],
                "q_entity": [["m.0a"], ["Bee"]],
                "a_entity": [["Bee"], ["2020"]],
                "graph": graphs,
            }
        ),
        path,
    )


@pytest.fixture(params=["tsv", "nt", "parquet"])
def source(request, tmp_path) -> tuple[Path, dict]:
    if request.param == "tsv":
        (tmp_path / "t.tsv").write_text(TSV, encoding="utf-8")
        (tmp_path / "names.tsv").write_text(NAMES, encoding="utf-8")
        return tmp_path / "t.tsv", {"names": tmp_path / "names.tsv"}
    if request.param == "nt":
        (tmp_path / "t.nt").write_text(NT, encoding="utf-8")
        return tmp_path / "t.nt", {}
    _rog_parquet(tmp_path / "t.parquet")
    return tmp_path / "t.parquet", {}


def read_import_file(path: Path) -> list[list[str]]:
    """Records of a neo4j-admin file as written: SEP-delimited, fields quoted with ESC (doubled inside)."""
    with path.open(encoding="utf-8", newline="") as fh:  # keep \r inside values as it is
        text = fh.read()
    records, fields, i = [], [], 0
    field = ""
    while i < len(text):
        c = text[i]
        if c == ESC and not field:
            end = i + 1
            while True:
                j = text.index(ESC, end)
                if text[j + 1 : j + 2] == ESC:
                    end = j + 2
                    continue
                break
            field, i = text[i + 1 : j].replace(ESC + ESC, ESC), j + 1
            continue
        if c == SEP:
            fields.append(field)
            field = ""
        elif c == "\n":
            records.append(fields + [field])
            fields, field = [], ""
        else:
            field += c
        i += 1
    return records


def test_streamed_import_files_hold_the_graph_the_readers_describe(source, tmp_path):
    path, options = source
    src = open_source(path, **options)  # the in-memory reading the Bolt path loads
    unique = sorted(set(src.triples))
    assert len(unique) < len(src.triples)  # the fixture repeats triples
    stats = LoadStats()
    files = write_import_files(tmp_path / "import", open_stream(path, **options), None, stats)

    entities = read_import_file(files.entities)
    assert entities[0] == ["id:ID(Entity)", "name", "idx:long", "embedding:float[]", ":LABEL"]
    want = [
        [r.id, r.name, str(idx), "", ";".join(r.labels)]
        for idx, r in enumerate(entity_rows(unique, src.names, src.literals))
    ]
    assert entities[1:] == want
    header, data = (read_import_file(p) for p in files.triples)
    assert header == [[":START_ID(Entity)", ":TYPE", ":END_ID(Entity)"]]
    assert sorted(tuple(r) for r in data) == [(h, r, t) for h, r, t in unique]  # one row per distinct triple
    relations = read_import_file(files.relations)
    assert [r[0] for r in relations[1:]] == sorted({r for _, r, _ in unique})
    assert (stats.triples_in, stats.entities) == (len(unique), len(want))
    # neo4j-admin parses multi-line fields (serially) only when a value holds a line break
    breaks = any("\n" in v or "\r" in v for t in unique for v in t) or any(
        "\n" in n or "\r" in n for n in src.names.values()
    )
    assert files.multiline == breaks and ("--multiline-fields=true" in files.import_args()) == breaks
    kept = {"entities.csv", "relations.csv", *(p.name for p in files.triples)}
    assert {p.name for p in files.folder.iterdir()} == kept  # the sort's key files are removed


@pytest.mark.slow  # stops and restarts the shared test server, twice
@pytest.mark.parametrize("kind", ["tsv", "nt"])
def test_streamed_bulk_load_equals_the_bolt_path_and_bolt_loads_add_to_it(graph, local_server, tmp_path, kind):
    from kgdb.loaders.bulk import bulk_load

    if kind == "tsv":
        (tmp_path / "t.tsv").write_text(TSV, encoding="utf-8")
        (tmp_path / "names.tsv").write_text(NAMES, encoding="utf-8")
        path, options = tmp_path / "t.tsv", {"names": tmp_path / "names.tsv"}
    else:
        (tmp_path / "t.nt").write_text(NT, encoding="utf-8")
        path, options = tmp_path / "t.nt", {}
    src = open_source(path, **options)
    write_graph(graph, src.triples, src.names, literals=src.literals)
    bolt = snapshot(graph)
    graph.close()
    stats = bulk_load(graph.settings, local_server, open_stream(path, **options), replace=True, log=lambda *_: None)
    assert stats.triples_in == len(set(src.triples)) < len(src.triples)
    with Graph.connect(graph.settings) as g:
        assert snapshot(g) == bolt
        # An incremental Bolt load on top of the bulk-loaded graph adds only what is new, idx stays dense.
        more = [("m.0obama", "people.person.profession", "m.0lawyer"), *src.triples[:2]]
        assert write_graph(g, more).triples_created == 1
        after = snapshot(g)
        assert after["counts"]["triples"] == bolt["counts"]["triples"] + 1
        assert sorted(n["idx"] for n in after["nodes"]) == list(range(len(after["nodes"])))


def test_a_malformed_line_stops_the_bulk_load_before_the_server_is_touched(graph, local_server, tmp_path):
    from kgdb.loaders.bulk import bulk_load

    path = tmp_path / "bad.tsv"
    path.write_text("a\tr.x\tb\nc\tr.x\td\nonly two\tcolumns\n", encoding="utf-8")
    write_graph(graph, [("x", "r.x", "y")])
    pid = local_server.pid()
    with pytest.raises(InputError) as err:
        bulk_load(graph.settings, local_server, open_stream(path), replace=True, log=lambda *_: None)
    assert str(err.value).startswith(f"{path}:3: expected 3 (head, relation, tail) columns")
    assert local_server.pid() == pid


@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_lazy_bulk_files_carry_relation_vectors_and_no_entity_vectors(tmp_path, mode):
    from kgdb.embeddings import get_embedder

    (tmp_path / "t.tsv").write_text(TSV, encoding="utf-8")
    (tmp_path / "names.tsv").write_text(NAMES, encoding="utf-8")
    stats = LoadStats()
    files = write_import_files(
        tmp_path / "import",
        open_stream(tmp_path / "t.tsv", names=tmp_path / "names.tsv"),
        get_embedder(),
        stats,
        embeddings=mode,
    )
    entities = read_import_file(files.entities)[1:]
    with_vector = {row[0] for row in entities if row[3]}
    named = {row[0] for row in entities if "CVT" not in row[4]}
    assert with_vector == (named if mode == "eager" else set()) and named
    assert stats.entity_embeddings == len(with_vector)
    assert (stats.embeddings, stats.entity_embeddings_left) == ((mode, 0) if mode == "eager" else (mode, len(named)))
    relations = read_import_file(files.relations)[1:]
    assert all(len(row[3].split(";")) == 384 for row in relations) and stats.relation_embeddings == len(relations)


def test_neo4j_admin_import_output_becomes_one_progress_bar_and_stage_lines():
    from kgdb.loaders.bulk import ImportOutput

    text = (Path(__file__).parent / "fixtures" / "neo4j_admin_import.out").read_text(
        encoding="utf-8"
    )  # a real run's output
    bar, lines = [], []
    out = ImportOutput(lambda phase, done, total: bar.append((phase, done, total)), lines.append)
    for start in range(0, len(text), 97):  # arbitrary chunks, as the pipe delivers them
        out(text[start : start + 97])
    assert bar[-1] == ("import", 400, 400) and [d for _, d, _ in bar] == sorted(d for _, d, _ in bar)
    assert any("(2/4) Relationship import" in line for line in lines) and any("IMPORT DONE" in line for line in lines)
    assert not any("Estimated" in line or "..." in line for line in lines)


def test_bulk_files_count_names_for_ids_no_triple_uses(tmp_path):
    triples, names = tmp_path / "t.tsv", tmp_path / "n.tsv"
    triples.write_text("/m/01\t/people/person/nationality\t/m/03\n", encoding="utf-8")
    names.write_text(
        "/m/00\tBefore\n/m/01\tObama\n/m/02\tBetween\n/m/02\tBetween again\n/m/03\tUSA\n/m/99\tAfter\n",
        encoding="utf-8",
    )
    stream = open_stream(triples, names=names)
    write_import_files(tmp_path / "files", stream, None, LoadStats())
    assert stream.names_unused == 3  # m.00, m.02 (two lines, one id) and m.99
    assert open_source(triples, names=names).names_unused == 3  # the Bolt path counts the same
