"""Small hand-made graphs for the Cypher retrieval tests (loaded with the real writer and embedder), and
what a test reads back from or does to a whole database."""

from __future__ import annotations

import random

from kgdb.cypher.schema import counts
from kgdb.embeddings import get_embedder
from kgdb.loaders.writer import write_graph

LOU_SEAL = [
    ("Lou Seal", "sports.mascot.team", "San Francisco Giants"),
    ("San Francisco Giants", "sports.sports_team.championships", "2010 World Series"),
    ("San Francisco Giants", "sports.sports_team.championships", "2012 World Series"),
    ("San Francisco Giants", "sports.sports_team.championships", "2014 World Series"),
    ("San Francisco Giants", "sports.sports_team.arena_stadium", "AT&T Park"),
    ("San Francisco Giants", "sports.sports_team.location", "San Francisco"),
    ("AT&T Park", "location.location.containedby", "San Francisco"),
]


def load(graph, triples):
    return write_graph(graph, triples, embedder=get_embedder())


def random_multigraph(seed: int, nodes: int = 8, edges: int = 16, relations: int = 3) -> list[tuple[str, str, str]]:
    """Random directed multigraph with parallel edges (same pair, different relation)."""
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(nodes)]
    triples = set()
    for i in range(1, nodes):  # a random spanning tree (random directions) keeps it connected
        a, b = names[rng.randrange(i)], names[i]
        triples.add(
            (a, f"rel.r{rng.randrange(relations)}", b)
            if rng.random() < 0.5
            else (b, f"rel.r{rng.randrange(relations)}", a)
        )
    while len(triples) < edges:
        h, t = rng.sample(names, 2)
        triples.add((h, f"rel.r{rng.randrange(relations)}", t))
        if rng.random() < 0.3:  # force a parallel relation
            triples.add((h, f"rel.r{rng.randrange(relations)}", t))
    return sorted(triples)


def snapshot(graph) -> dict:
    """Everything a load decides: nodes, labels, names, idx, triples, embeddings present."""
    nodes = graph.run_text(
        "MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.idx AS idx, labels(e) AS labels, "
        "e.embedding IS NOT NULL AS emb ORDER BY id"
    )
    rels = graph.run_text("MATCH (h:Entity)-[r]->(t:Entity) RETURN h.id AS h, type(r) AS r, t.id AS t ORDER BY h, r, t")
    relations = graph.run_text(
        "MATCH (r:Relation) RETURN r.name AS name, r.idx AS idx, r.embedding IS NOT NULL AS emb ORDER BY name"
    )
    for n in nodes:
        n["labels"] = sorted(n["labels"])
    return {"counts": counts(graph), "nodes": nodes, "rels": rels, "relations": relations}


def wipe(graph) -> None:
    graph.run_auto("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS")
