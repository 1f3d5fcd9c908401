"""kgdb: graph-database-backed retrieval for knowledge-graph question answering."""

__version__ = "0.1.0"
