"""Loaders: readers that turn sources into normalised triples, and the writers that store them.

- `triple_files`: TSV/CSV triples (+ FB15k-style names file); `rog`: RoG parquet/JSONL and the hub;
  `ntriples`: Freebase RDF dumps (.nt/.nt.gz) with prefix/mid filters; `sources.open_stream` picks one
  (a `source.SourceStream`), `sources.open_source` reads it into memory.
- `writer.write_graph`: the Bolt path (idempotent, resumable); `bulk.bulk_load`: neo4j-admin import of the
  files `import_files` streams from a source with bounded memory.
- `questions`: question sets -> (:Question)-[:ABOUT]->(:Entity).
- `default_subset/`: the hand-written Freebase facts and questions `kgdb load freebase-subset` uses
  without a SOURCE.
The writer path never imports torch: embedders are passed in.
"""
