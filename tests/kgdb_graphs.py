"""Small hand-made graphs for the Cypher retrieval tests (loaded with the real writer and embedder)."""

from __future__ import annotations

import random

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
