"""Load what answering needs before the service listens: the first request is then as fast as the next.

The serving pipeline is built (plan, retriever, ranker or checkpoint), and one question about the
graph's best-connected entity is answered without writing, which loads the text encoder, the
entity table and the lazily loaded parts of the models, and warms Neo4j's query plans.
"""

from __future__ import annotations

import time

from kgdb.api import Kgdb
from kgdb.errors import DatabaseError, KgdbError


def warm_up(kg: Kgdb, *, write: bool) -> str:
    """Build the pipeline `ask` serves with and answer one question; returns a line saying what was done."""
    start = time.perf_counter()
    rows = kg.graph.run("top_degree_entities", limit=1)
    if not rows:
        return "the graph is empty: nothing to warm up (load a graph with `kgdb load`)"
    name = rows[0]["name"] or rows[0]["id"]
    kg.ask_pipeline(write=write)
    try:
        kg.ask(f"What is {name}?", write=False)
    except DatabaseError:
        raise
    except KgdbError as exc:  # the question may not suit this graph; the models loaded all the same
        return f"warmed up in {time.perf_counter() - start:.1f} s (the warm-up question got no answer: {exc})"
    return f"warmed up in {time.perf_counter() - start:.1f} s (models loaded, one question answered)"
