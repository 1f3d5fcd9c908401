"""Fetch limits shared by the database layer and the CLI (a module of constants: the CLI shows
them in --help without importing numpy or the Neo4j driver)."""

MAX_HOPS = 4
# Most triples expanded from one node; beyond it the triples whose relation is most similar to the
# question are kept (see subgraph.cypher). 500 keeps WebQSP answer coverage at its 2-hop
# reachability (94.7%) and a 2-hop extraction around the largest FB15k-237 hub (degree 8,641,
# 24k triples instead of 233k) well under a second on 2 busy cores.
DEFAULT_CAP = 500
