"""The RRP planner's graph checks and the grounding, batched (one query per hop for a whole beam), on
a real Neo4j: they equal brute-force enumerations of the hand-made multigraph, make one query per
decoding step, and ignore the write-back's :SCORED copies of triples; a hub's step too big to read whole
is read as its sample by idx, in grounding, the path ranker's enumeration and the planner's decoding."""

from __future__ import annotations

import pytest
import torch

from kgdb.cypher.path_candidates import relation_paths_around
from kgdb.cypher.paths import (
    UnknownRelationError,
    beam_step,
    graph_triples,
    ground_relation_path,
    ground_relation_paths,
    why_empty,
)
from kgdb.errors import InputError
from kgdb.rrp.models.planner import PathDecoder, PlannerConfig
from kgdb.rrp.planners import TrainedPathPlanner
from support.graphs import load
from support.movies import TRIPLES

pytestmark = pytest.mark.usefixtures("one_thread")


def _step(ids, relation, direction):
    """Brute force: distinct entities one (relation, direction) step from `ids`."""
    out = set()
    for h, r, t in TRIPLES:
        if r == relation and h in ids and direction >= 0:
            out.add(t)
        if r == relation and t in ids and direction <= 0:
            out.add(h)
    return out


def _around(ids):
    return {(r, 1) for h, r, _ in TRIPLES if h in ids} | {(r, -1) for _, r, t in TRIPLES if t in ids}


def _scored_copy(graph) -> None:
    """A write-back copy of a triple (a run's score): not a relation of the graph."""
    graph.run_text(
        "MATCH (h:Entity {id: 'Film A'}), (t:Entity {id: 'Marie Curie'}) CREATE (h)-[:SCORED {run: 'r1', score: 1.0}]->(t)"
    )


@pytest.fixture
def movies(kept_graph):
    return kept_graph(TRIPLES, then=_scored_copy)


def test_beam_step_equals_brute_force_and_skips_scored(movies):
    prefixes = [
        (["Film A", "Film C"], None, 0),
        (["Film C"], "movie.directed_by", 1),
        (["Alan Turing"], "movie.directed_by", -1),
        (["Alan Turing"], "movie.written_by", 0),
        (["Marie Curie", "Niels Bohr"], "movie.starred_actors", -1),
        (["Film A"], "movie.no_such", 1),
    ]
    got = beam_step(movies, prefixes)
    for (ids, rel, d), (ends, steps) in zip(prefixes, got):
        want = set(ids) if rel is None else _step(set(ids), rel, d)
        assert set(ends) == want and len(ends) == len(want)
        assert set(steps) == _around(want)
        assert all(r != "SCORED" for r, _ in steps)
    assert got[-1] == ([], [])
    capped = beam_step(movies, [(["Marie Curie", "Niels Bohr"], "movie.starred_actors", -1)], cap=2)[0][0]
    assert capped == sorted(_step({"Marie Curie", "Niels Bohr"}, "movie.starred_actors", -1))[:2]


def test_batched_grounding_equals_one_path_at_a_time(movies):
    jobs = [
        ("Film C", ["movie.directed_by"], [1]),
        ("Film C", ["movie.directed_by", "movie.directed_by"], [1, -1]),
        ("Film C", ["movie.written_by", "movie.directed_by"], [1, -1]),  # parallel to directed_by at Alan Turing
        ("Film C", ["movie.starred_actors", "movie.starred_actors"], [0, -1]),
        ("Lise Meitner", ["movie.starred_actors", "movie.directed_by"], [-1, 1]),
        ("Ada Lovelace", ["movie.directed_by", "movie.starred_actors", "movie.starred_actors"], None),
        ("Ada Lovelace", ["movie.directed_by"], [1]),  # Ada is never the head: nothing
    ]
    for walks in (False, True):
        batched = ground_relation_paths(movies, jobs, cap=50, walks=walks)
        for (topic, rels, dirs), paths in zip(jobs, batched):
            assert paths == ground_relation_path(movies, topic, rels, cap=50, directions=dirs, walks=walks)
        assert batched[-1] == [] and all(batched[:-1])
    # jobs that share their partial paths are expanded together: the four from Film C are one group at
    # the first hop; at the second the three that go on have paths of their own (other triples)
    sent, run = [], movies.run
    movies.run = lambda name, **params: sent.append(params.get("groups")) or run(name, **params)
    try:
        ground_relation_paths(movies, jobs[:4], cap=50)
    finally:
        movies.run = run
    assert [len(g["jobs"]) for g in sent[0]] == [4]
    assert sorted(g["relations"] for g in sent[0]) == [
        ["movie.directed_by", "movie.written_by", "movie.starred_actors"]
    ]
    assert sorted(len(g["jobs"]) for g in sent[1]) == [1, 1, 1]
    assert isinstance(why_empty(movies, "Film A", ["movie.no_such"]), UnknownRelationError)
    assert why_empty(movies, "Ada Lovelace", ["movie.directed_by"]) is None


def test_graph_triples_leave_out_scored_copies(movies):
    assert sorted(graph_triples(movies)) == sorted(TRIPLES)


def test_constrained_planner_makes_one_query_per_decoding_step(movies):
    relations = sorted({r for _, r, _ in TRIPLES})
    cfg = PlannerConfig(hidden=16, word_dim=8, buckets=1 << 8, max_hops=3, dropout=0.0)
    torch.manual_seed(0)
    planner = TrainedPathPlanner(PathDecoder(cfg, torch.randn(len(relations), 8)), relations, embedder=None, beam=3)
    movies.memory_log = []  # every read query is logged by name
    plans = planner.plan_encoded(movies, "who directed the films starring", torch.randn(8).numpy(), ["Lise Meitner"])
    log, movies.memory_log = movies.memory_log, None
    assert plans and [name for name, _ in log] == ["beam_step"] * len(log) and len(log) <= cfg.max_hops
    for plan in plans:  # every planned path exists in the graph from the topic
        ends = {"Lise Meitner"}
        for r, d in zip(plan.relations, plan.directions):
            ends = _step(ends, r, d)
        assert ends


def _brute_walks(topic, steps, walks):
    """Every instantiation of (relation, direction) steps from `topic`, as triple tuples (h, r, t)."""
    out = [([topic], [])]
    for rel, d in steps:
        nxt = []
        for nodes, trs in out:
            for h, r, t in TRIPLES:
                for a, b in ([(h, t)] if d > 0 else []) + ([(t, h)] if d < 0 else []):
                    if r != rel or a != nodes[-1]:
                        continue
                    if walks and trs and trs[-1] == (h, r, t):
                        continue
                    if not walks and b in nodes:
                        continue
                    nxt.append((nodes + [b], trs + [(h, r, t)]))
        out = nxt
    return sorted(trs for _, trs in out)


@pytest.mark.parametrize("walks", [False, True])
def test_grounding_equals_brute_force_with_parallel_edges_and_both_directions(movies, walks):
    cases = [
        ("Alan Turing", [("movie.directed_by", -1), ("movie.written_by", 1)]),  # Film C: both relations to Alan Turing
        ("Film C", [("movie.directed_by", 1), ("movie.written_by", -1), ("movie.starred_actors", 1)]),
        ("Marie Curie", [("movie.starred_actors", -1), ("movie.starred_actors", 1), ("movie.starred_actors", -1)]),
    ]
    for topic, steps in cases:
        got = ground_relation_path(
            movies, topic, [r for r, _ in steps], cap=1000, directions=[d for _, d in steps], walks=walks, per_end=1000
        )
        assert sorted([tuple((h, r, t) for _, h, r, t in p) for p in got]) == [
            tuple(p) for p in _brute_walks(topic, steps, walks)
        ]


def test_frontier_bound_holds_on_a_hub(graph):
    hub = [("Hub", "link.to", f"leaf {i:02d}") for i in range(40)] + [
        (f"leaf {i:02d}", "link.back", "Hub") for i in range(40)
    ]
    load(graph, hub)
    got = ground_relation_path(
        graph, "Hub", ["link.to", "link.back", "link.to"], cap=7, directions=[1, 1, 1], walks=True, per_end=2
    )
    ends = sorted({p[-1][3] for p in got})
    assert ends == [f"leaf {i:02d}" for i in range(7)]  # the first `cap` entities in id order
    assert all(sum(p[-1][3] == e for p in got) <= 2 for e in ends) and len(got) <= 7 * 2
    first = ground_relation_path(graph, "Hub", ["link.to"], cap=7, directions=[1], per_end=2)
    assert sorted(p[0][3] for p in first) == [f"leaf {i:02d}" for i in range(7)]


def test_a_step_too_big_to_read_whole_is_a_sample_of_its_ends_by_idx(graph):
    # Hub has 61 `big.in` relationships (from 60 leaves and Capital) and one `small.out`; with a step scan of
    # 50 only the big step is sampled: with cap 3 its stride is 61 // 12 = 5, so only the ends whose idx is a
    # multiple of 5 are read, of which the first 3 in id order go on; the small step is read whole.
    hub = [(f"leaf {i:02d}", "big.in", "Hub") for i in range(60)] + [
        ("Hub", "small.out", "Capital"),
        ("Capital", "big.in", "Hub"),
    ]
    load(graph, hub)
    idx = {r["id"]: r["idx"] for r in graph.run_text("MATCH (e:Entity) RETURN e.id AS id, e.idx AS idx")}
    sampled = sorted(e for e in idx if e != "Hub" and idx[e] % 5 == 0)
    assert len(sampled) >= 3, idx  # the fixture gives the big step enough sampled ends
    want = sampled[:3]

    got = ground_relation_path(graph, "Hub", ["big.in"], cap=3, directions=[-1], step_scan=50)
    assert sorted(p[0][1] for p in got) == want
    whole = ground_relation_path(graph, "Hub", ["big.in"], cap=3, directions=[-1], step_scan=None)
    assert sorted(p[0][1] for p in whole) == ["Capital", "leaf 00", "leaf 01"]  # unbounded: the first 3 in id order
    small = ground_relation_path(graph, "Hub", ["small.out"], cap=3, directions=[1], step_scan=50)
    assert [p[0][3] for p in small] == ["Capital"]  # a small step of the same hub is read whole

    steps = {c.steps: c for c in relation_paths_around(graph, ["Hub"], max_hops=1, cvt_hops=1, cap=3, step_scan=50)}
    big = steps[(("big.in", -1),)]
    assert sorted(big.ends) == want and big.reached == 61  # reached: the step's relationship count
    assert steps[(("small.out", 1),)].ends == {"Capital"}
    unbounded = {
        c.steps: c for c in relation_paths_around(graph, ["Hub"], max_hops=1, cvt_hops=1, cap=3, step_scan=None)
    }
    assert (
        sorted(unbounded[(("big.in", -1),)].ends) == ["Capital", "leaf 00", "leaf 01"]
        and unbounded[(("big.in", -1),)].reached == 61
    )
    # the trained planner's decoding reads the same sample
    (ends, _), (small_ends, _) = beam_step(
        graph, [(["Hub"], "big.in", -1), (["Hub"], "small.out", 1)], cap=3, step_scan=50
    )
    assert ends == want and small_ends == ["Capital"]
    assert beam_step(graph, [(["Hub"], "big.in", -1)], cap=3, step_scan=None)[0][0] == ["Capital", "leaf 00", "leaf 01"]
    with pytest.raises(InputError, match="KGDB_RRP_STEP_SCAN"):
        ground_relation_path(graph, "Hub", ["big.in"], step_scan=-1)
