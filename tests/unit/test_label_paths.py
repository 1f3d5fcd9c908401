"""The pure half of `kgdb label`: candidate pools, their text, reply parsing, stored paths -> label mask."""

from __future__ import annotations

import numpy as np
import pytest

from kgdb.data.label_paths import (
    Selection,
    mask_from_paths,
    numbered_lines,
    parse_selection,
    rapl_pool,
    reg_pool,
    render_path,
)
from kgdb.subgraph import Subgraph

# Tupac -film.actor.film-> cvt -film.performance.film-> Gridlock'd   (rational, 2 hops)
# Tupac -music.featured_artist.recordings-> song -music.recording.releases-> Gridlock'd   (2 hops, not rational)
# Gridlock'd -film.film.starring-> Tupac   (1 hop, against: the answer points at the topic)
# Tupac -people.person.place_of_birth-> New York   (topic neighbourhood only)
# parallel edge: Tupac -film.actor.film_cameo-> cvt
NAMES = ["Tupac", "m.cvt1", "Gridlock'd", "Song", "New York"]
TRIPLES = [
    (0, "film.actor.film", 1),
    (1, "film.performance.film", 2),
    (0, "music.featured_artist.recordings", 3),
    (3, "music.recording.releases", 2),
    (2, "film.film.starring", 0),
    (0, "people.person.place_of_birth", 4),
    (0, "film.actor.film_cameo", 1),
]


def tiny() -> Subgraph:
    rels = sorted({r for _, r, _ in TRIPLES})
    return Subgraph(
        entity_ids=list(NAMES),
        entity_names=list(NAMES),
        entity_idx=np.arange(100, 100 + len(NAMES), dtype=np.int64),
        is_cvt=np.array([n.startswith("m.") for n in NAMES]),
        head=np.array([h for h, _, _ in TRIPLES], dtype=np.int64),
        relation=np.array([rels.index(r) for _, r, _ in TRIPLES], dtype=np.int64),
        tail=np.array([t for _, _, t in TRIPLES], dtype=np.int64),
        relation_names=[r for _, r, _ in TRIPLES],
        edge_ids=[str(i) for i in range(len(TRIPLES))],
        topic=np.array([0], dtype=np.int64),
    )


def test_rapl_pool_is_d_min_to_d_min_plus_2_both_directions_parallel_edges_kept():
    sg = tiny()
    pool = rapl_pool(sg, ["Gridlock'd"])
    paths = [c.paths[0] for c in pool.candidates]
    # d_min = 1 (the answer -> topic edge); lengths 1..3, shortest first; the parallel cameo edge is its own path
    assert paths[0] == (4,)
    assert set(paths[1:]) == {(0, 1), (6, 1), (2, 3)}
    assert [len(p) for p in paths] == sorted(len(p) for p in paths)
    lines = numbered_lines(sg, pool)
    assert lines[0] == "Path 1. Tupac ← film.film.starring ← Gridlock'd"
    assert "Path 2. Tupac → film.actor.film → m.cvt1 → film.performance.film → Gridlock'd" in lines
    assert pool.answer_names == ["Gridlock'd"]


def test_rapl_pool_cap_and_no_answer():
    sg = tiny()
    assert len(rapl_pool(sg, ["Gridlock'd"], max_candidates=2).candidates) == 2
    assert rapl_pool(sg, ["not in graph"]).candidates == []


def test_reg_pool_merges_relation_chains_and_adds_one_hop_neighbourhoods():
    sg = tiny()
    pool = reg_pool(sg, ["Gridlock'd"])
    kinds = [c.kind for c in pool.candidates]
    assert kinds[0] == "path" and pool.candidates[0].paths == [(4,)]  # the shortest path (d_min = 1)
    topic_groups = [c for c in pool.candidates if c.kind == "topic"]
    answer_groups = [c for c in pool.candidates if c.kind == "answer"]
    # topic neighbourhood: one candidate per (relation, direction) at Tupac: 5 groups; answer: 3
    assert len(topic_groups) == 5 and len(answer_groups) == 3
    assert all(len(p) == 1 for c in topic_groups + answer_groups for p in c.paths)
    assert len(reg_pool(sg, ["Gridlock'd"], neighbour_groups=1).candidates) == 1 + 1 + 1


def test_reg_relation_chain_merging_folds_answers_together():
    # Two answers reached by the same relation chain are one candidate with two member paths.
    sg = tiny()
    sg.head = np.append(sg.head, 0)
    sg.relation = np.append(sg.relation, sg.relation[5])
    sg.tail = np.append(sg.tail, 3)
    sg.relation_names = sg.relation_names + ["people.person.place_of_birth"]
    pool = reg_pool(sg, ["New York", "Song"], neighbour_groups=0)
    (merged,) = [c for c in pool.candidates if c.kind == "path" and len(c.paths) == 2]
    assert sorted(merged.paths) == [(5,), (7,)]
    text = numbered_lines(sg, pool)[pool.candidates.index(merged)]
    assert text.endswith("(+1 more paths with the same relations)")


def test_render_path_against_the_edge():
    sg = tiny()
    assert render_path(sg, 2, (4,)) == "Gridlock'd → film.film.starring → Tupac"
    assert render_path(sg, 0, (4,)) == "Tupac ← film.film.starring ← Gridlock'd"


@pytest.mark.parametrize(
    "reply, expected",
    [
        # well-formed
        ("Path 2 matches the question.\nans: Path 2\nans: Path 4", Selection("ok", [1, 3], [])),
        ("ANS: path 3\n - ans: Path 1", Selection("ok", [2, 0], [])),
        ("ans: Path 1, Path 2 and Path 1", Selection("ok", [0, 1], [])),
        ("ans: 2", Selection("ok", [1], [])),
        ("**ans:** Path #4", Selection("ok", [3], [])),
        ("No path is about acting.\nans: none", Selection("none", [], [])),
        # partial: out of range, unreadable and cut-off lines are ignored, valid ones kept
        ("ans: Path 2\nans: Path 9", Selection("ok", [1], ["Path 9 (only 4 candidates)"])),
        ("ans: Path 3\nans: the film one\nans: Pa", Selection("ok", [2], ["the film one", "Pa"])),
        # garbage
        ("I think the answer is Gridlock'd.", Selection("malformed", [], [])),
        ("Path 2 looks right", Selection("malformed", [], [])),
        ("ans: Gridlock'd", Selection("malformed", [], ["Gridlock'd"])),
        (
            "ans: Path 0\nans: Path 7",
            Selection("malformed", [], ["Path 0 (only 4 candidates)", "Path 7 (only 4 candidates)"]),
        ),
        ("", Selection("malformed", [], [])),
    ],
)
def test_parse_selection(reply, expected):
    assert parse_selection(reply, 4) == expected


def test_mask_from_paths_maps_stored_paths_and_skips_incomplete_ones():
    sg = tiny()
    r = {name: int(sg.relation[i]) for i, name in enumerate(sg.relation_names)}
    actor = [(100, r["film.actor.film"], 101), (101, r["film.performance.film"], 102)]
    broken = [
        (100, r["music.featured_artist.recordings"], 103),
        (103, r["film.film.starring"], 102),
    ]  # no such 2nd triple
    mask, complete = mask_from_paths(sg.entity_idx, sg.head, sg.relation, sg.tail, [actor, broken])
    assert complete == 1
    assert mask.tolist() == [True, True, False, False, False, False, False]
    empty, none = mask_from_paths(sg.entity_idx, sg.head, sg.relation, sg.tail, [])
    assert not empty.any() and none == 0
