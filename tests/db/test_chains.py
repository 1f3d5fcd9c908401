"""BFS evidence chains (ReG Algorithm 1 + App. D.4 merges) on hand-made graphs."""

import numpy as np
import pytest

from kgdb.cypher.chains import evidence_chains
from kgdb.cypher.retrieval import fetch_subgraph
from kgdb.cypher.writeback import write_scores
from support.graphs import LOU_SEAL, load, random_multigraph


def _run(graph, topics, scores_by_triple, k=100, run=None, anchors=None):
    sg = fetch_subgraph(graph, topics, None, hops=4, qid="Q")
    if anchors is not None:  # write the run with fewer topic entities than were expanded
        sg.topic = sg.topic[[sg.entity_ids[i] in anchors for i in sg.topic]]
    scores = np.array([scores_by_triple.get(sg.triple(i), 0.0) for i in range(sg.num_triples)])
    keep = sum(1 for i in range(sg.num_triples) if sg.triple(i) in scores_by_triple)
    return write_scores(graph, sg, scores, "test", k=min(k, keep), run=run)


def test_multi_answer_merge_reproduces_the_reg_example(kept_graph):
    graph = kept_graph(LOU_SEAL)
    scores = {t: 0.9 - 0.1 * i for i, t in enumerate(LOU_SEAL[:4])}  # mascot + three championships
    chains = evidence_chains(graph, _run(graph, ["Lou Seal"], scores))
    assert [c.render() for c in chains.chains] == [
        "Lou Seal → [sports.mascot.team] → San Francisco Giants → [sports.sports_team.championships] → "
        "2010 World Series; 2012 World Series; 2014 World Series"
    ]
    assert chains.chains[0].score == 0.8  # the weakest edge (0.8) of the best member (2010)
    assert chains.unreachable == []
    assert chains.render().startswith("Chain 1. Lou Seal → ")


def test_first_route_wins_and_unreachable_and_length_limit(graph):
    load(graph, LOU_SEAL + [("Elsewhere", "r.other", "Nowhere")])
    scores = {t: 0.5 for t in LOU_SEAL}
    scores[("Elsewhere", "r.other", "Nowhere")] = 0.99
    run = _run(graph, ["Lou Seal", "Elsewhere"], scores, anchors=["Lou Seal"])
    two = evidence_chains(graph, run, max_hops=2)
    rendered = [c.render() for c in two.chains]
    # San Francisco is reached once (first route by rank); AT&T Park → San Francisco needs 3 hops
    assert sum("→ San Francisco" in r and r.endswith("San Francisco") for r in rendered) == 1
    # best rank first: the disconnected triple, then the 3-hop one
    assert [t.render() for t in two.unreachable] == [
        "Elsewhere → [r.other] → Nowhere",
        "AT&T Park → [location.location.containedby] → San Francisco",
    ]
    # unlimited length: AT&T Park → San Francisco would reach San Francisco a second time, so it stays out
    unlimited = evidence_chains(graph, run, max_hops=None)
    assert [c.render() for c in unlimited.chains] == rendered
    assert len(unlimited.unreachable) == 2
    one = evidence_chains(graph, run, max_hops=1)
    assert [c.render() for c in one.chains] == ["Lou Seal → [sports.mascot.team] → San Francisco Giants"]


def test_backward_chains_end_at_the_anchor(graph):
    load(graph, [("Ann", "people.person.spouse", "Bob"), ("Cid", "people.person.parent", "Ann")])
    run = _run(
        graph, ["Bob"], {("Ann", "people.person.spouse", "Bob"): 0.8, ("Cid", "people.person.parent", "Ann"): 0.7}
    )
    chains = evidence_chains(graph, run)
    assert [c.render() for c in chains.chains] == ["Cid → [people.person.parent] → Ann → [people.person.spouse] → Bob"]
    assert chains.chains[0].direction == "in" and chains.chains[0].targets == ["Cid"]


def test_multi_entity_merge_places_overlapping_chains_together(graph):
    triples = [
        ("Actor A", "film.actor.film", "Film 1"),
        ("Actor A", "film.actor.film", "Film 2"),
        ("Actor B", "film.actor.film", "Film 2"),
        ("Actor B", "film.actor.film", "Film 3"),
        ("Actor A", "people.person.place_of_birth", "Town"),
    ]
    load(graph, triples)
    scores = dict(zip(triples, [0.9, 0.8, 0.7, 0.6, 0.85]))
    chains = evidence_chains(graph, _run(graph, ["Actor A", "Actor B"], scores))
    rendered = [(c.render(), c.group) for c in chains.chains]
    assert rendered == [
        ("Actor A → [film.actor.film] → Film 2", 1),
        ("Actor B → [film.actor.film] → Film 2", 1),
        ("Actor A → [people.person.place_of_birth] → Town", None),
    ]


def test_two_runs_on_one_question_keep_their_own_chains(kept_graph):
    graph = kept_graph(LOU_SEAL)
    run_a = _run(graph, ["Lou Seal"], {LOU_SEAL[0]: 0.9, LOU_SEAL[1]: 0.8}, run="A")
    run_b = _run(graph, ["Lou Seal"], {LOU_SEAL[0]: 0.9, LOU_SEAL[4]: 0.8}, run="B")
    a = [c.render() for c in evidence_chains(graph, run_a).chains]
    b = [c.render() for c in evidence_chains(graph, run_b).chains]
    assert a == [
        "Lou Seal → [sports.mascot.team] → San Francisco Giants → [sports.sports_team.championships] → 2010 World Series"
    ]
    assert b == [
        "Lou Seal → [sports.mascot.team] → San Francisco Giants → [sports.sports_team.arena_stadium] → AT&T Park"
    ]


def test_cli_chains_runs_subgraph_paths(kept_graph, neo4j_settings):
    """`kgdb subgraph|paths|chains|runs` through the typer app (in-process: one import of the model)."""
    from typer.testing import CliRunner

    from kgdb.cli import app
    from kgdb.errors import KgdbError

    graph = kept_graph(LOU_SEAL)
    run = _run(graph, ["Lou Seal"], {t: 0.9 - 0.1 * i for i, t in enumerate(LOU_SEAL[:4])}, run="cli-run")
    conn = ["--uri", neo4j_settings.neo4j_uri, "--password", neo4j_settings.neo4j_password.get_secret_value()]
    runner = CliRunner()

    def kgdb(*args):
        result = runner.invoke(app, [*conn, *args], env={"COLUMNS": "200"})
        return result, result.output

    result, text = kgdb("chains", run)
    assert result.exit_code == 0 and "Chain 1. Lou Seal → [sports.mascot.team] → San Francisco Giants → " in text
    assert "2010 World Series; 2012 World Series; 2014 World Series" in text
    result, text = kgdb("runs", "list")
    assert result.exit_code == 0 and "cli-run" in text and "1 runs" in text
    result, text = kgdb("runs", "show", run)
    assert result.exit_code == 0 and "4 scored triples" in text
    result, text = kgdb("subgraph", "who won the world series?", "--topic", "lou seal", "--hops", "2")
    assert result.exit_code == 0 and "subgraph of Lou Seal: 6 triples" in text
    result, text = kgdb("paths", "--from", "Lou Seal", "--to", "2012 World Series")
    assert result.exit_code == 0 and "1 shortest paths" in text
    result, _ = kgdb("subgraph", "q", "--topic", "Nobody Here")
    assert isinstance(result.exception, KgdbError) and "Nobody Here" in str(result.exception)
    result, text = kgdb("runs", "prune", "--all", "--yes")
    assert result.exit_code == 0 and "deleted 1 runs and 4 scored triples" in text


def _algorithm_1(triples, anchors, max_len, direction):
    """ReG Algorithm 1 transcribed (queue = FIFO, triples in rank order), mirrored for 'in';
    plus kgdb's documented rule that a chain never revisits one of its own entities."""
    from collections import deque

    near, far = (0, 2) if direction == "out" else (2, 0)
    src = [t for t in triples if t[near] in anchors]
    tgt = [t for t in triples if t[near] not in anchors]
    queue = deque([t] for t in src)
    found, visited = [], set()
    while queue:
        path = queue.popleft()
        found.append(path)
        if max_len is not None and len(path) >= max_len:
            continue
        anchor = path[0][near]
        nodes = {anchor} | {t[far] for t in path}
        for t in tgt:
            if t[near] == path[-1][far] and (anchor, t[far]) not in visited and t[far] not in nodes:
                queue.append(path + [t])
                visited.add((anchor, t[far]))
    return [(p, direction) for p in found]


def _merged_reference(triples, anchors, max_len):
    raw = _algorithm_1(triples, anchors, max_len, "out") + _algorithm_1(triples, anchors, max_len, "in")
    prefixes = {(d, tuple(p[:i])) for p, d in raw for i in range(1, len(p))}
    groups = {}
    for p, d in raw:
        if (d, tuple(p)) in prefixes:
            continue
        far = 2 if d == "out" else 0
        key = (p[0][2 - far], d, tuple(t[1] for t in p))
        groups.setdefault(key, set()).add(p[-1][far])
    return groups


@pytest.mark.parametrize("seed,max_len", [(11, 2), (12, 3), (13, None)])
def test_chains_match_algorithm_1_on_random_graphs(graph, seed, max_len):
    triples = random_multigraph(seed, nodes=8, edges=18)
    load(graph, triples)
    rng = np.random.default_rng(seed)
    scores = dict(zip(triples, rng.permutation(len(triples)) / len(triples) + 0.01))
    chains = evidence_chains(graph, _run(graph, ["n0"], scores), max_hops=max_len)
    ranked = sorted(triples, key=lambda t: -scores[t])  # rank order = the run's rank 1..k
    expected = _merged_reference(ranked, {"n0"}, max_len)
    got = {(c.anchor, c.direction, c.relations): set(c.targets) for c in chains.chains}
    assert got == expected
    on_chains = {(t.h, t.rel, t.t) for c in chains.chains for t in c.triples}
    assert {(t.h, t.rel, t.t) for t in chains.unreachable} == set(triples) - on_chains
