"""The import files of the streamed --bulk path (kgdb.loaders.import_files), written without a
server: they hold exactly the graph the in-memory readers describe, lazy embeddings leave entity vectors
out, names count for ids no triple uses, and neo4j-admin import's output becomes one progress bar and
stage lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgdb.loaders.import_files import ESC, SEP, write_import_files
from kgdb.loaders.sources import open_source, open_stream
from kgdb.loaders.writer import LoadStats, entity_rows
from support import FIXTURES
from support.sources import NAMES, NT, TSV


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

    text = (FIXTURES / "neo4j_admin_import.out").read_text(encoding="utf-8")  # a real run's output
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
