"""The README's "Python API" example: README.md carries it as one ```python block between
`<!-- api-example:start -->` and `<!-- api-example:end -->`; `EXAMPLE` is the same code, so the
tests exercise it even before (or if) the README block is missing."""

from __future__ import annotations

import re

from support import ROOT

README = ROOT / "README.md"
START, END = "<!-- api-example:start -->", "<!-- api-example:end -->"

EXAMPLE = """
import os

import neo4j

import kgdb

uri = os.environ.get("KGDB_NEO4J_URI", "bolt://localhost:7687")
user = os.environ.get("KGDB_NEO4J_USER", "neo4j")
password = os.environ["KGDB_NEO4J_PASSWORD"]
question = "What is the capital of France?"

# Connect by URI (checked at once; anything not given comes from kgdb's settings) ...
with kgdb.connect(uri, user=user, password=password) as kg:
    # Score the question's subgraph with the cosine retriever (no checkpoint needed), keep the top 10.
    r = kg.retrieve(question, retriever="cosine", k=10, write=False)
    for t in r.triples[:3]:
        print(t.rank, f"({t.head}, {t.relation}, {t.tail})", round(t.score, 3))

    # Write it back later: a (:Retrieval {run}) node and [:SCORED {run, rank, score}] edges.
    run = kg.write_back(r)
    stored = kg.read_run(run)
    print(run, stored["retriever"], [(x["rank"], x["t_name"]) for x in stored["triples"][:3]])

    # Evidence chains of the run (paths from the question's topic entities over its scored edges).
    chains = kg.chains(run)
    print(chains.render())

# ... or through a neo4j.Driver your application already has (kgdb leaves it open).
driver = neo4j.GraphDatabase.driver(uri, auth=(user, password))
with kgdb.connect(driver=driver) as kg:
    # Answer without an LLM: the extractive reasoner picks the answer from the retrieved triples.
    answer = kg.ask(question, retriever="cosine", reasoner="extractive", k=20)
    print([a.answer for a in answer.answers], answer.run)
driver.close()
"""


def readme_example() -> str | None:
    """The ```python block between the README's api-example markers (None when not there)."""
    text = README.read_text(encoding="utf-8") if README.is_file() else ""
    if START not in text or END not in text:
        return None
    section = text.split(START, 1)[1].split(END, 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert len(blocks) == 1, f"expected one ```python block between the {START} markers, found {len(blocks)}"
    return blocks[0]
