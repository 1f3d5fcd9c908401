"""The streamed --bulk path (kgdb.loaders.import_files) on a real Neo4j: a bulk-loaded graph equals the
Bolt path's, in TSV, N-Triples and RoG parquet, with repeated triples stored once, and a malformed line
stops the bulk load before the server is touched. Memory use is a benchmark figure (benchmarks/scale.py),
not a test."""

from __future__ import annotations

from functools import partial

import pytest

from kgdb.cypher import Graph
from kgdb.errors import InputError
from kgdb.loaders.sources import open_source, open_stream
from kgdb.loaders.writer import write_graph
from support import head_start
from support.graphs import snapshot, wipe
from support.sources import NAMES, NT, TSV
from support.spare_servers import load_server


def _streamed_bulk_load_equals_the_bolt_path(tmp_path_factory: pytest.TempPathFactory, kind: str) -> None:
    from kgdb.loaders.bulk import bulk_load

    server, settings = load_server(tmp_path_factory)
    tmp_path = tmp_path_factory.mktemp(f"bulk-{kind}")
    if kind == "tsv":
        (tmp_path / "t.tsv").write_text(TSV, encoding="utf-8")
        (tmp_path / "names.tsv").write_text(NAMES, encoding="utf-8")
        path, options = tmp_path / "t.tsv", {"names": tmp_path / "names.tsv"}
    else:
        (tmp_path / "t.nt").write_text(NT, encoding="utf-8")
        path, options = tmp_path / "t.nt", {}
    src = open_source(path, **options)
    with Graph.connect(settings) as graph:
        wipe(graph)
        write_graph(graph, src.triples, src.names, literals=src.literals)
        bolt = snapshot(graph)
    stats = bulk_load(settings, server, open_stream(path, **options), replace=True, log=lambda *_: None)
    assert stats.triples_in == len(set(src.triples)) < len(src.triples)
    with Graph.connect(settings) as g:
        assert snapshot(g) == bolt
        # An incremental Bolt load on top of the bulk-loaded graph adds only what is new, idx stays dense.
        more = [("m.0obama", "people.person.profession", "m.0lawyer"), *src.triples[:2]]
        assert write_graph(g, more).triples_created == 1
        after = snapshot(g)
        assert after["counts"]["triples"] == bolt["counts"]["triples"] + 1
        assert sorted(n["idx"] for n in after["nodes"]) == list(range(len(after["nodes"])))


# Each stops, imports into and restarts a spare server: begun in the background as the session starts.
BULK_LOADS = {kind: partial(_streamed_bulk_load_equals_the_bolt_path, kind=kind) for kind in ("tsv", "nt")}


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind", [pytest.param(kind, marks=pytest.mark.head_start.with_args(work)) for kind, work in BULK_LOADS.items()]
)
def test_streamed_bulk_load_equals_the_bolt_path_and_bolt_loads_add_to_it(tmp_path_factory, kind):
    head_start.result(BULK_LOADS[kind], tmp_path_factory)


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
