"""Shortest-path labels and candidate paths against brute force on small multigraphs."""

import pytest

from kgdb.cypher.paths import UnknownRelationError, ground_relation_path, shortest_path_triples
from kgdb.cypher.retrieval import fetch_subgraph
from kgdb.data.labels import candidate_paths, label_subgraph
from support.graphs import LOU_SEAL, load, random_multigraph


def _simple_paths(triples, src, dst, max_len, directed=True):
    """Every simple path src -> dst (sequences of triple indices), by exhaustive DFS."""
    out = []

    def dfs(node, used, visited):
        if node == dst and used:
            out.append(tuple(used))
            return
        if len(used) == max_len:
            return
        for i, (h, _, t) in enumerate(triples):
            steps = [(h, t)] + ([] if directed else [(t, h)])
            for a, b in steps:
                if a == node and b not in visited:
                    dfs(b, used + [i], visited | {b})

    dfs(src, [], {src})
    return out


def _brute_labels(triples, topics, answers, undirected=True):
    on = set()
    for q in topics:
        for a in answers:
            if q == a:
                continue
            fwd = _simple_paths(triples, q, a, 8)
            bwd = _simple_paths(triples, a, q, 8)
            paths = fwd + bwd
            if paths:
                best = min(len(p) for p in paths)
                on |= {i for p in paths if len(p) == best for i in p}
            elif undirected:
                und = _simple_paths(triples, q, a, 8, directed=False)
                if und:
                    best = min(len(p) for p in und)
                    on |= {i for p in und if len(p) == best for i in p}
    return on


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_labels_match_brute_force_with_parallel_edges(graph, seed):
    triples = random_multigraph(seed)
    pairs = {(h, t) for h, _, t in triples}
    assert len(pairs) < len(triples), "the graph must have parallel relations"
    load(graph, triples)
    topics, answers = ["n0"], ["n3", "n5", "n6"]
    sg = fetch_subgraph(graph, topics, None, hops=4, cap=1000)
    assert sg.num_triples == len(triples)  # small connected graph: the subgraph is the whole graph
    index = {sg.triple(i): i for i in range(sg.num_triples)}
    order = [index[t] for t in triples]  # brute-force triple j is subgraph triple order[j]
    expected = {order[j] for j in _brute_labels(triples, topics, answers)}
    labels = label_subgraph(sg, answers)
    assert set(labels.nonzero()[0].tolist()) == expected
    # the Cypher version over the whole graph agrees triple for triple
    found = shortest_path_triples(graph, topics, answers)
    in_cypher = {index[(h, r, t)] for p in found for _, h, r, t in p.triples}
    assert in_cypher == expected


def test_parallel_relations_are_distinct_paths(graph):
    load(graph, [("A", "r.one", "B"), ("A", "r.two", "B"), ("B", "r.three", "C")])
    paths = shortest_path_triples(graph, ["A"], ["C"])
    assert len(paths) == 2
    assert {p.triples[0][2] for p in paths} == {"r.one", "r.two"}
    assert all(p.direction == "forward" and p.length == 2 for p in paths)
    sg = fetch_subgraph(graph, ["A"], None, hops=2)
    assert label_subgraph(sg, ["C"]).all()


def test_backward_and_undirected_fallback(graph):
    load(graph, [("Ans", "r.a", "X"), ("X", "r.b", "Topic"), ("Topic", "r.c", "Y"), ("Z", "r.d", "Y")])
    back = shortest_path_triples(graph, ["Topic"], ["Ans"])
    assert [p.direction for p in back] == ["backward"] and back[0].length == 2
    mixed = shortest_path_triples(graph, ["Topic"], ["Z"])
    assert [p.direction for p in mixed] == ["undirected"]
    assert shortest_path_triples(graph, ["Topic"], ["Z"], undirected=False) == []


@pytest.mark.parametrize("seed", [4, 5])
def test_candidate_paths_match_brute_force(graph, seed):
    triples = random_multigraph(seed, nodes=7, edges=14)
    load(graph, triples)
    sg = fetch_subgraph(graph, ["n0"], None, hops=4, cap=1000)
    index = {sg.triple(i): i for i in range(sg.num_triples)}
    order = [index[t] for t in triples]
    for answer in ["n2", "n4"]:
        fwd = _simple_paths(triples, "n0", answer, 8)
        bwd = _simple_paths(triples, answer, "n0", 8)
        if not fwd + bwd:
            continue
        best = min(len(p) for p in fwd + bwd)
        expected = {tuple(order[i] for i in p) for p in fwd + bwd if len(p) <= best + 2}
        got = candidate_paths(sg, [answer], slack=2, cap=10_000)
        assert {c.triples for c in got} == expected
        assert [len(c.triples) for c in got] == sorted(len(c.triples) for c in got)  # shortest first
        capped = candidate_paths(sg, [answer], slack=2, cap=1)
        assert len(capped) == 1 and len(capped[0].triples) == best


def test_ground_relation_path(kept_graph):
    graph = kept_graph(LOU_SEAL)
    paths = ground_relation_path(graph, "Lou Seal", ["sports.mascot.team", "sports.sports_team.championships"])
    assert [p[-1][3] for p in paths] == ["2010 World Series", "2012 World Series", "2014 World Series"]
    assert all(p[0][1:] == ("Lou Seal", "sports.mascot.team", "San Francisco Giants") for p in paths)
    # either direction: from a series back to the mascot
    back = ground_relation_path(graph, "2012 World Series", ["sports.sports_team.championships", "sports.mascot.team"])
    assert [p[-1][1] for p in back] == ["Lou Seal"]
    # A relation the graph lacks is a clear error naming it, not an empty answer.
    with pytest.raises(UnknownRelationError, match="no.such.relation"):
        ground_relation_path(graph, "Lou Seal", ["no.such.relation"])
    # A real relation that simply does not leave this entity grounds to nothing.
    assert ground_relation_path(graph, "Lou Seal", ["sports.sports_team.championships"]) == []
