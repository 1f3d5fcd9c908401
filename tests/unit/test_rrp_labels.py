"""RRP planner labels (Eq. 2's Γ*): the shortest relation paths topic -> answer computed with numpy
on triple arrays equal a brute-force enumeration of walks on hand-made multigraphs with parallel
edges and both directions."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kgdb.data.relation_paths import TripleArrays, cached_question_arrays, shortest_relation_paths
from support.graphs import random_multigraph


def brute_force(triples, topics, answers, max_hops, exact=None):
    """Every walk of 1..max_hops relationships (either direction) from a topic; the relation paths
    of the shortest length whose walk ends at an answer that is not a topic."""
    steps = [(h, (r, 1), t) for h, r, t in triples] + [(t, (r, -1), h) for h, r, t in triples]
    targets = set(answers) - set(topics)
    for length in range(1, max_hops + 1):
        if exact and length != exact:
            continue
        found = set()
        for topic in topics:
            walks = [(topic, ())]
            for _ in range(length):
                walks = [(b, path + (s,)) for node, path in walks for a, s, b in steps if a == node]
            found |= {path for end, path in walks if end in targets}
        if found:
            return sorted(found)
    return []


HAND = [  # parallel edges (a-b twice), both directions around c, a cycle a -> b -> c -> a
    ("a", "r.x", "b"),
    ("a", "r.y", "b"),
    ("c", "r.x", "b"),
    ("b", "r.z", "c"),
    ("c", "r.y", "a"),
    ("d", "r.z", "c"),
    ("c", "r.x", "e"),
]


def test_hand_made_multigraph_keeps_parallel_relations_and_directions():
    g = TripleArrays.from_triples(HAND)
    assert shortest_relation_paths(g, ["a"], ["b"]) == [(("r.x", 1),), (("r.y", 1),)]
    # c is reached from a in one step against r.y
    assert shortest_relation_paths(g, ["a"], ["c"]) == [(("r.y", -1),)]
    # e: a -r.y^-1-> c -r.x-> e, and through b: two hops are not the shortest when one hop... none here
    assert shortest_relation_paths(g, ["a"], ["e"]) == brute_force(HAND, ["a"], ["e"], 3)
    assert shortest_relation_paths(g, ["a"], ["d"]) == [(("r.y", -1), ("r.z", -1))]
    assert shortest_relation_paths(g, ["a"], ["a"]) == []  # a topic is never its own answer
    assert shortest_relation_paths(g, ["a"], ["nowhere"]) == [] and shortest_relation_paths(g, ["zz"], ["b"]) == []
    # an exact hop count (MetaQA) skips shorter paths
    assert shortest_relation_paths(g, ["a"], ["b"], exact_hops=2) == brute_force(HAND, ["a"], ["b"], 2, exact=2)
    assert shortest_relation_paths(g, ["a"], ["b"], exact_hops=2)


@pytest.mark.parametrize("seed", range(25))
def test_labels_equal_brute_force_on_random_multigraphs(seed):
    triples = random_multigraph(seed, nodes=7, edges=14, relations=3)
    rng = random.Random(seed)
    nodes = sorted({x for h, _, t in triples for x in (h, t)})
    topics = rng.sample(nodes, rng.choice([1, 2]))
    answers = rng.sample(nodes, rng.choice([1, 2, 3]))
    g = TripleArrays.from_triples(triples)
    for exact in (None, 1, 2, 3):
        assert shortest_relation_paths(g, topics, answers, max_hops=3, exact_hops=exact) == brute_force(
            triples, topics, answers, 3, exact
        )


def test_cached_subgraph_arrays_use_the_relation_vocabulary():
    head, rel, tail = np.array([0, 0, 2]), np.array([1, 0, 1]), np.array([1, 1, 1])
    g = cached_question_arrays(head, rel, tail, 3, ["r.a", "r.b"])
    assert shortest_relation_paths(g, ["0"], ["2"]) == [(("r.a", 1), ("r.b", -1)), (("r.b", 1), ("r.b", -1))]


def test_best_f1_keeps_the_paths_that_match_the_answer_set():
    # f1 was directed by d1 and written by w1; f2 was directed by d2, and d2 also wrote f1.
    triples = [
        ("f1", "m.directed_by", "d1"),
        ("f1", "m.written_by", "w1"),
        ("f1", "m.written_by", "d2"),
        ("f2", "m.directed_by", "d2"),
    ]
    g = TripleArrays.from_triples(triples)
    # "films directed by d2": answers {f2}; f1 is reached only by the accidental written_by path
    assert shortest_relation_paths(g, ["d2"], ["f2", "f1"]) == [(("m.directed_by", -1),), (("m.written_by", -1),)]
    assert shortest_relation_paths(g, ["d2"], ["f2"], best_f1=True) == [(("m.directed_by", -1),)]
    # "who wrote f1": {w1, d2}; directed_by reaches d1 (no answer), written_by reaches both
    assert shortest_relation_paths(g, ["f1"], ["w1", "d2"], best_f1=True) == [(("m.written_by", 1),)]
