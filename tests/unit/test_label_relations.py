"""RAPL's relation targeting R_* (§3.4, Eq. 8-9): candidate relations and reply parsing on a hand-made
subgraph, the tensor cache carrying R_*, and the question-triple loss against a hand computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from kgdb.data.cache import CachedQuestion, load_cache, save_cache
from kgdb.data.label_relations import (
    FORWARD,
    INVERSE,
    parse_relations,
    relation_lines,
    relation_pool,
    relation_target_mask,
)
from kgdb.models.base import Targets
from kgdb.models.features import build_tensors
from kgdb.models.retrievers.rapl import RAPL, RAPLConfig, target_paths
from kgdb.subgraph import Subgraph
from kgdb.training.trainer import seed_everything, targets_of
from support.tensors import rapl_tables

pytestmark = pytest.mark.usefixtures("one_thread")

# Topic Jamaica (node 0). Incident: -> capital, -> official_language twice, <- containedby (Kingston),
# <- capital (a made-up inverse use); Kingston -> postal_codes is not incident to the topic.
NAMES = ["Jamaica", "Kingston", "Jamaican English", "English", "m.0abc1"]
TRIPLES = [
    (0, "location.country.capital", 1),
    (0, "location.country.official_language", 2),
    (0, "location.country.official_language", 3),
    (1, "location.location.containedby", 0),
    (1, "location.citytown.postal_codes", 4),
    (1, "location.country.capital", 0),
]


def _subgraph() -> Subgraph:
    rel_idx = {r: i for i, r in enumerate(dict.fromkeys(r for _, r, _ in TRIPLES))}
    return Subgraph(
        entity_ids=[n.replace(" ", "_") for n in NAMES],
        entity_names=NAMES,
        entity_idx=np.arange(5),
        is_cvt=np.zeros(5, bool),
        head=np.array([h for h, _, _ in TRIPLES]),
        relation=np.array([rel_idx[r] for _, r, _ in TRIPLES]),
        tail=np.array([t for _, _, t in TRIPLES]),
        relation_names=[r for _, r, _ in TRIPLES],
        edge_ids=[str(i) for i in range(6)],
        topic=np.array([0]),
    )


def test_candidates_are_the_topics_relations_in_both_directions_most_populated_first():
    pool = relation_pool(_subgraph())
    assert relation_lines(pool) == [
        "→ location.country.official_language",  # two triples
        "→ location.country.capital",  # then by name, forward before inverse
        "← location.country.capital",
        "← location.location.containedby",
    ]
    assert pool.raw == 4 and pool.topic_names == ["Jamaica"]
    assert [c.triples for c in pool.candidates] == [2, 1, 1, 1]
    assert len(relation_pool(_subgraph(), max_candidates=2).candidates) == 2


def test_parse_well_formed_reply():
    cands = relation_pool(_subgraph()).candidates
    sel = parse_relations(
        "The capital relation answers it.\nans: → location.country.capital\nans: ← location.location.containedby", cands
    )
    assert (sel.status, sel.indices, sel.ignored) == ("ok", [1, 3], [])
    # ASCII arrows, several on one line, markdown bullets and backticks
    sel = parse_relations("- ans: -> `location.country.official_language`; <- location.country.capital", cands)
    assert (sel.status, sel.indices) == ("ok", [0, 2])
    # A name without an arrow selects each direction it is a candidate in.
    assert parse_relations("ans: location.country.capital", cands).indices == [1, 2]
    assert parse_relations("ans: none", cands).status == "none"


def test_parse_partial_reply_keeps_valid_names_and_counts_unknown_ones():
    cands = relation_pool(_subgraph()).candidates
    reply = "ans: → location.country.capital\nans: → people.person.nationality\nans: ← location.country.official_language\nans: → location.coun"
    sel = parse_relations(reply, cands)
    assert sel.status == "ok" and sel.indices == [1]
    # unknown relation, a listed name in an unlisted direction, a cut-off name: ignored and counted
    assert sel.ignored == ["people.person.nationality", "location.country.official_language", "location.coun"]


def test_parse_garbage_is_malformed():
    cands = relation_pool(_subgraph()).candidates
    for reply in ("The capital is Kingston.", "", "ans: → made.up.relation", "capital: location.country.capital"):
        assert parse_relations(reply, cands).status == "malformed", reply


def test_target_mask_marks_the_topic_triples_of_r_star_by_direction():
    sg = _subgraph()
    capital, official, containedby, postal = (int(sg.relation[i]) for i in (0, 1, 3, 4))
    mask = relation_target_mask(
        sg.head, sg.relation, sg.tail, sg.topic, [(capital, FORWARD), (containedby, INVERSE), (postal, FORWARD)]
    )
    # triple 0 read forward leaves Jamaica by capital; triple 3 read backwards leaves it by containedby;
    # triple 5 is a capital triple entering Jamaica (inverse reading), not selected in that direction;
    # postal_codes leaves Kingston, not a topic.
    assert mask.tolist() == [1, 0, 0, 2, 0, 0]
    both = relation_target_mask(
        sg.head, sg.relation, sg.tail, sg.topic, [(capital, FORWARD), (capital, INVERSE), (official, FORWARD)]
    )
    assert both.tolist() == [1, 1, 1, 0, 0, 2]


def _cached(qid: str, m: int, rt) -> CachedQuestion:
    return CachedQuestion(
        qid,
        "q?",
        np.zeros(m, np.int64),
        np.zeros(m, np.int64),
        np.ones(m, np.int64),
        np.arange(2),
        np.zeros(2, bool),
        np.array([0]),
        np.ones(m, bool),
        np.array([1]),
        1,
        np.ones(4, np.float32),
        1,
        relation_targets=rt,
    )


def test_cache_carries_relation_targets_and_reads_caches_without_them(tmp_path):
    items = [_cached("a", 3, np.array([1, 0, 2], np.uint8)), _cached("b", 2, None)]
    save_cache(tmp_path / "rt.npz", items, {})
    a, b = load_cache(tmp_path / "rt.npz")
    assert a.relation_targets.tolist() == [1, 0, 2] and b.relation_targets is None
    # A cache written before relation targeting (no such array) loads with None everywhere.
    save_cache(tmp_path / "old.npz", [_cached("a", 3, None)], {})
    assert "relation_targets" not in np.load(tmp_path / "old.npz").files
    (old,) = load_cache(tmp_path / "old.npz")
    assert old.relation_targets is None and targets_of(old, "cpu").relation_targets is None
    t = targets_of(a, "cpu").relation_targets
    assert t.tolist() == [[True, False], [False, False], [False, True]]


# Topic 0. t0: 0 -r0-> 1, t1: 0 -r1-> 2, t2: 0 -r1-> 3 (parallel relation), t3: 4 -r2-> 0 (enters the
# topic), t4: 1 -r3-> 2, t5: 3 -r0-> 0 (enters the topic). Answer 2, labelled path t0, t4.
L_HEAD, L_REL, L_TAIL = np.array([0, 0, 0, 4, 1, 3]), np.array([0, 1, 1, 2, 3, 0]), np.array([1, 2, 3, 0, 2, 0])
M = 6


def _loss_setup(r_star):
    seed_everything(0)
    tables = rapl_tables()
    rng = np.random.default_rng(5)
    q = rng.normal(size=tables.dim).astype(np.float32)
    x = build_tensors(
        tables,
        head=L_HEAD,
        relation=L_REL,
        tail=L_TAIL,
        entity_idx=np.array([5, 6, 7, 8, 9]),
        topic=np.array([0]),
        is_cvt=np.zeros(5, bool),
        question_embedding=q / np.linalg.norm(q),
    )
    labels = np.array([1, 0, 0, 0, 1, 0], np.float32)
    answers = np.array([0, 0, 1, 0, 0], np.float32)
    rt = None
    if r_star is not None:
        mask = relation_target_mask(L_HEAD, L_REL, L_TAIL, np.array([0]), r_star)
        rt = torch.from_numpy(np.stack([(mask & 1) > 0, (mask & 2) > 0], axis=1))
    model = RAPL(RAPLConfig(hidden=16, dropout=0.0), tables.dim).train()
    return model, x, Targets(torch.from_numpy(labels), torch.from_numpy(answers), rt)


def _log_sigmoid(v: float) -> float:
    return -math.log1p(math.exp(-v))


def test_question_triple_loss_with_r_star_is_eq_8_and_eq_9_by_hand():
    # R_* = {r1 forward, r2 inverse, r3 forward}: r1 leaves the topic twice (t1, t2), r2 enters it (t3,
    # so its inverse reading 6+3 leaves it), r3 never touches the topic.
    model, x, targets = _loss_setup([(1, FORWARD), (2, INVERSE), (3, FORWARD)])
    paths = target_paths(L_HEAD, L_TAIL, np.array([0]), np.array([2]), targets.triples.numpy() > 0, 4, 32)
    assert paths == [[0, 4]]  # v_q(0) = t0
    enc = model(x)
    lq, pos, neg = model.question_triple_loss(enc, paths, targets)
    # V_cand = augmented triples leaving the topic: t0, t1, t2 forward; t3, t5 read backwards (6+3, 6+5).
    assert set(torch.nonzero(pos).squeeze(1).tolist()) == {0, 1, 2, M + 3}  # {v_q(0)} ∪ {topic triples with r ∈ R_*}
    assert set(torch.nonzero(neg).squeeze(1).tolist()) == {M + 5}  # V_cand \ V_pos
    z, zq = enc.z.detach().numpy().astype(np.float64), enc.zq.detach().numpy()[0].astype(np.float64)
    score = {v: float(z[v] @ zq) for v in (0, 1, 2, M + 3, M + 5)}
    hand = -sum(_log_sigmoid(score[v]) for v in (0, 1, 2, M + 3)) / 4 - _log_sigmoid(-score[M + 5]) / 1
    assert float(lq.detach()) == pytest.approx(hand, rel=1e-5)
    # The full loss is L_q + L_path on the one target path.
    assert float(model.loss(enc, targets).detach()) == pytest.approx(
        float((lq + model._path_loss(enc, paths[0])).detach()), rel=1e-5
    )


def test_without_r_star_the_positive_is_the_paths_first_triple_only():
    model, x, targets = _loss_setup(None)
    enc = model(x)
    lq, pos, neg = model.question_triple_loss(enc, [[0, 4]], targets)
    assert set(torch.nonzero(pos).squeeze(1).tolist()) == {0}
    assert set(torch.nonzero(neg).squeeze(1).tolist()) == {1, 2, M + 3, M + 5}
    _, x2, with_empty = _loss_setup([(3, FORWARD)])  # R_* touching no topic triple: the same sets
    assert torch.equal(model.question_triple_loss(model(x2), [[0, 4]], with_empty)[1], pos)
