"""Several topics grounded in one query and joined on the answer (kgdb/cypher/topic_intersection.py), and the
candidates next to topics, against an exhaustive enumeration on hand-made multigraphs, with awkward names, and
written back for Browser."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from kgdb.cypher import query
from kgdb.cypher.topic_intersection import TopicPaths, ground_jointly, topics_next_to, write_joint_paths
from kgdb.errors import InputError
from kgdb.loaders.writer import write_graph
from support.graphs import random_multigraph


def _brute(triples, plans):
    """answer -> topic -> {(relations, directions, nodes, (h, r, t) triples)}: every simple path of every
    plan, by walking the triple list itself (a relationship may be taken either way when its direction is 0)."""
    topics = {p.topic for p in plans}
    entities = {x for h, _, t in triples for x in (h, t)}
    reach: dict = defaultdict(lambda: defaultdict(set))
    for plan in plans:
        if plan.topic not in entities:
            continue
        for rels, dirs in plan.paths:

            def walk(node, i, nodes, used, rels=rels, dirs=dirs, topic=plan.topic):
                if i == len(rels):
                    if node not in topics:
                        reach[node][topic].add((rels, dirs, tuple(nodes), tuple(used)))
                    return
                for h, r, t in triples:
                    if r != rels[i]:
                        continue
                    for a, b, d in ((h, t, 1), (t, h, -1)):
                        if a == node and b not in nodes and dirs[i] in (0, d):
                            walk(b, i + 1, nodes + [b], used + [(h, r, t)])

            walk(plan.topic, 0, [plan.topic], [])
    return reach


def _random_plans(seed: int, topics: list[str], relations: int = 3) -> list[TopicPaths]:
    rng = random.Random(seed)
    plans = []
    for topic in topics:
        paths = set()
        while len(paths) < 4:
            hops = rng.choice((1, 2, 2, 3))
            paths.add(
                (
                    tuple(f"rel.r{rng.randrange(relations)}" for _ in range(hops)),
                    tuple(rng.choice((-1, 0, 1)) for _ in range(hops)),
                )
            )
        plans.append(TopicPaths(topic, tuple(sorted(paths))))
    return plans


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_joint_grounding_equals_brute_force_enumeration_on_a_multigraph(graph, seed):
    triples = random_multigraph(seed, nodes=9, edges=24)
    assert len({(h, t) for h, _, t in triples}) < len(triples), "the graph must have parallel relations"
    write_graph(graph, triples, embedder=None)
    plans = _random_plans(seed, ["n0", "n1", "n2"])
    expected = _brute(triples, plans)
    found = ground_jointly(graph, plans, cap=1000, per_end=1000, limit=1000)

    assert [c.answer for c in found] == sorted(expected, key=lambda a: (-len(expected[a]), a))
    assert any(c.reached > 1 for c in found), "the plans must make some topics meet"
    _assert_same_paths(found, expected)


def _assert_same_paths(found, expected):
    """Each candidate has the topics and, per topic, the paths (relations, directions, nodes, triples) expected."""
    for c in found:
        assert set(c.topics) == set(expected[c.answer])
        got = defaultdict(set)
        for p in c.paths:
            got[p.topic].add((p.relations, p.directions, p.nodes, tuple((h, r, t) for _, h, r, t in p.triples)))
        assert got == expected[c.answer]


def test_intersection_comes_before_the_union_and_caps_hold(graph):
    write_graph(
        graph,
        [
            ("France", "location.location.adjoins", "Germany"),
            ("France", "location.location.adjoins", "Spain"),
            ("France", "location.location.adjoins", "Switzerland"),
            ("Germany", "location.country.currency_used", "Euro"),
            ("Spain", "location.country.currency_used", "Euro"),
            ("Switzerland", "location.country.currency_used", "Swiss franc"),
        ],
        embedder=None,
    )
    plans = [
        TopicPaths("France", ((("location.location.adjoins",), (0,)),)),
        TopicPaths("Euro", ((("location.country.currency_used",), (-1,)),)),
    ]
    found = ground_jointly(graph, plans)
    assert [(c.answer, c.reached) for c in found] == [("Germany", 2), ("Spain", 2), ("Switzerland", 1)]
    assert {p.topic for p in found[0].paths} == {"France", "Euro"}
    assert [c.answer for c in ground_jointly(graph, plans, limit=1)] == ["Germany"]
    # the cap keeps each (topic, path)'s first ends by id: France keeps Germany only, Euro Germany and Spain
    assert [(c.answer, c.reached) for c in ground_jointly(graph, plans, cap=1)] == [("Germany", 2)]
    # a direction against the relationships finds nothing from France
    assert ground_jointly(graph, [TopicPaths("France", ((("location.location.adjoins",), (-1,)),))]) == []


def test_ten_topics_with_braces_and_quotes_meet_and_are_written_back(graph):
    topics = [f'Topic {{{i}}} "quoted" it\'s {i}' for i in range(10)]
    answer, decoy = 'Answer {x} "the" one\'s', "Decoy {y}"
    triples = [(t, "test.rel.reaches", answer) for t in topics] + [(topics[0], "test.rel.reaches", decoy)]
    triples += [(answer, "test.rel.via", f"cvt {{{i}}}") for i in range(2)]
    write_graph(graph, triples, embedder=None)
    plans = [TopicPaths(t, ((("test.rel.reaches",), (1,)),)) for t in topics] + [
        TopicPaths(topics[3], ((("test.rel.reaches",), (1,)),))
    ]
    found = ground_jointly(graph, plans)
    assert [(c.answer, c.reached) for c in found] == [(answer, 10), (decoy, 1)]
    assert set(found[0].topics) == set(topics)

    question = 'which {entity} do "all ten" of them reach? it\'s {the} one'
    run = write_joint_paths(graph, question, found, topics, qid='q {1} "x"')
    ret = graph.run_text(
        "MATCH (r:Retrieval {run: $run}) RETURN r.question AS q, COUNT { (r)-[:TOPIC]->() } AS topics", run=run
    )
    assert ret == [{"q": question, "topics": 10}]
    edges = graph.run_text(
        "MATCH ()-[s:SCORED {run: $run}]->() RETURN s.answer AS answer, s.rank AS rank, s.score AS score, "
        "s.topics_reached AS reached ORDER BY rank, answer",
        run=run,
    )
    assert len(edges) == 11
    assert edges[0] == {"answer": answer, "rank": 1, "score": 1.0, "reached": 10}
    assert edges[-1] == {"answer": decoy, "rank": 2, "score": 0.1, "reached": 1}
    # the Browser view draws each topic's path to the first candidate
    shown = graph.run_text(query("browser/joint_paths"), run=run, rank=1)
    assert len(shown) == 10 and {r["answer"] for r in shown} == {answer}
    # writing the same run again replaces it
    write_joint_paths(graph, question, found[:1], topics, run=run)
    assert graph.run_text("MATCH ()-[s:SCORED {run: $run}]->() RETURN count(s) AS n", run=run) == [{"n": 10}]


def _brute_next_to(triples, candidates, topics, cvt):
    """answer -> topic -> {(relations, directions, nodes, (h, r, t) triples)}: every relationship joining a topic
    to a candidate, and every pair of relationships joining them through a CVT node, read off the triple list."""
    found: dict = defaultdict(lambda: defaultdict(set))

    def steps(a, b):
        return [((h, r, t), 1 if h == a else -1) for h, r, t in triples if {h, t} == {a, b} and a != b]

    for a in candidates:
        for t in topics:
            if t == a:
                continue
            for tr, d in steps(t, a):
                found[a][t].add(((tr[1],), (d,), (t, a), (tr,)))
            for c in cvt:
                for tr1, d1 in steps(t, c):
                    for tr2, d2 in steps(c, a):
                        found[a][t].add(((tr1[1], tr2[1]), (d1, d2), (t, c, a), (tr1, tr2)))
    return found


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_topics_next_to_candidates_equal_brute_force_enumeration_on_a_multigraph(graph, seed):
    rng = random.Random(seed)
    triples = random_multigraph(seed, nodes=9, edges=24)
    cvt = [f"m.0cvt{i}" for i in range(3)]
    for c in cvt:  # compound-value nodes, each joined to three entities either way
        for n in rng.sample([f"n{i}" for i in range(9)], 3):
            r = f"rel.c{rng.randrange(2)}"
            triples.append((c, r, n) if rng.random() < 0.5 else (n, r, c))
    triples.append(("n0", "rel.c0", "m.0cvt0"))
    triples.append(("m.0cvt0", "rel.c1", "n5"))  # at least one candidate through a CVT node
    triples = sorted(set(triples))
    write_graph(graph, triples, embedder=None)
    # write-back copies are no relations of the graph: one between every pair must change nothing
    graph.run_text(
        "MATCH (a:Entity), (b:Entity) WHERE a.id < b.id CREATE (a)-[:SCORED {run: 'earlier-run', rel: 'rel.r0'}]->(b)"
    )
    candidates, topics = [f"n{i}" for i in range(9)], ["n0", "n1"]
    expected = _brute_next_to(triples, candidates, topics, cvt)
    found = topics_next_to(graph, candidates, topics, per_end=1000)

    assert [c.answer for c in found] == sorted(expected)
    assert any(len(p.nodes) == 3 for c in found for p in c.paths), "some candidate must be joined through a CVT node"
    _assert_same_paths(found, expected)
    # a cap per (candidate, topic) keeps the first paths in node order
    capped = topics_next_to(graph, candidates, topics, per_end=1)
    assert all(sum(p.topic == t for p in c.paths) == 1 for c in capped for t in c.topics)
    assert topics_next_to(graph, [], topics) == [] and topics_next_to(graph, candidates, []) == []
    with pytest.raises(InputError, match="positive"):
        topics_next_to(graph, candidates, topics, per_end=0)
