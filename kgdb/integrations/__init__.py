"""Adapters that let other frameworks use kgdb retrieval (each imports its framework lazily).

- `kgdb.integrations.neo4j_graphrag.KgdbRetriever`: a `neo4j-graphrag` retriever
  (`pip install 'kgdb[graphrag]'`).
"""
