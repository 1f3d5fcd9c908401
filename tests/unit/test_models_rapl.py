"""RAPL: the line graph of a multigraph against a hand construction and PyG, the factorised GCN
against explicit message passing, target paths, sampling that stops at STOP inside the graph,
and overfitting a tiny set. No database: hand-made tensors only."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from kgdb.models.base import PATH_FLOOR, Targets, passed_count
from kgdb.models.checkpoints import find_checkpoint, load_model, save_checkpoint
from kgdb.models.features import batch_tensors
from kgdb.models.line_graph import augment, gcn_aggregate, line_graph, reverse, successors
from kgdb.models.registry import get
from kgdb.models.retrievers.rapl import RAPL, RAPLConfig, target_paths
from kgdb.training.trainer import seed_everything
from support.tensors import rapl_question, rapl_tables

pytestmark = pytest.mark.usefixtures("one_thread")

# Multigraph on 5 nodes: two parallel 0->1 triples (relations 0 and 1), 1->2, 2->0, 3->2, 1->4.
HEAD = torch.tensor([0, 0, 1, 2, 3, 1])
TAIL = torch.tensor([1, 1, 2, 0, 2, 4])


def test_line_graph_of_a_multigraph_equals_the_hand_construction():
    # a -> b iff tail(a) == head(b); the two parallel triples 0 and 1 are separate nodes.
    hand = {(0, 2), (0, 5), (1, 2), (1, 5), (2, 3), (3, 0), (3, 1), (4, 3)}
    edges = line_graph(HEAD, TAIL)
    assert {tuple(e) for e in edges.T.tolist()} == hand
    assert edges.shape[1] == len(hand)  # no duplicates
    assert {tuple(e) for e in reverse(edges).T.tolist()} == {(b, a) for a, b in hand}


def test_line_graph_matches_pyg_without_parallel_edges():
    from torch_geometric.data import Data
    from torch_geometric.transforms import LineGraph

    head, tail = torch.tensor([0, 1, 2, 3, 1, 4]), torch.tensor([1, 2, 0, 2, 4, 0])
    ours = {tuple(e) for e in line_graph(head, tail).T.tolist()}
    # PyG sorts the edges (coalesce) before numbering them: map back to our triple order
    order = torch.argsort(head * 10 + tail)
    pyg = LineGraph(force_directed=True)(Data(edge_index=torch.stack([head, tail]), num_nodes=5))
    theirs = {(int(order[a]), int(order[b])) for a, b in pyg.edge_index.T.tolist()}
    assert ours == theirs


def test_augmented_line_graph_has_both_directions():
    src, dst = augment(HEAD, TAIL)
    m = len(HEAD)
    edges = {tuple(e) for e in line_graph(src, dst).T.tolist()}
    # inverse of 0->1 (node m+0, 1->0) continues with the triples leaving 0 (0, 1) and entering-inverse
    assert (m + 0, 0) in edges and (m + 0, 1) in edges and (m + 0, m + 3) in edges
    # successors CSR equals the explicit edge list
    rowptr, order = successors(src, dst, 5)
    csr = {(a, int(b)) for a in range(2 * m) for b in order[rowptr[dst[a]] : rowptr[dst[a] + 1]]}
    assert csr == edges


@pytest.mark.parametrize("rev", [False, True])
def test_factorised_gcn_equals_explicit_message_passing(rev):
    src, dst = augment(HEAD, TAIL)
    edges = line_graph(src, dst)
    if rev:
        edges = reverse(edges)
    m2 = src.shape[0]
    A = torch.zeros(m2, m2)
    A[edges[1], edges[0]] = 1.0  # A[i, j] = 1 for an edge j -> i
    deg_in, deg_out = A.sum(1), A.sum(0)
    norm = deg_in.clamp(min=1).rsqrt().unsqueeze(1) * A * deg_out.clamp(min=1).rsqrt().unsqueeze(0)
    h = torch.randn(m2, 7, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(gcn_aggregate(h, src, dst, 5, reverse=rev), norm @ h, atol=1e-6)


def test_target_paths_use_only_labelled_triples_in_either_direction():
    # topic 0, answer 2; labelled: the second parallel triple 0->1 and 1->2; and 2->0 (inverse use).
    labelled = np.array([False, True, True, True, False, False])
    paths = target_paths(HEAD.numpy(), TAIL.numpy(), np.array([0]), np.array([2]), labelled, max_len=4, cap=8)
    m = 6
    assert paths == [[m + 3]]  # the shortest only: one step against the arrow of 2->0
    labelled[3] = False
    paths = target_paths(HEAD.numpy(), TAIL.numpy(), np.array([0]), np.array([2]), labelled, max_len=4, cap=8)
    assert paths == [[1, 2]]  # the labelled parallel triple, not its unlabelled twin 0
    assert target_paths(HEAD.numpy(), TAIL.numpy(), np.array([0]), np.array([4]), labelled, 4, 8) == []


def test_sampled_paths_start_at_a_topic_follow_the_line_graph_and_stop():
    seed_everything(0)
    tables = rapl_tables()
    model = RAPL(RAPLConfig(hidden=16, samples=20, top_m=50, max_len=4), tables.dim).eval()
    x, head, tail = rapl_question(tables, 1)
    edges = {tuple(e) for e in line_graph(*augment(x.head, x.tail)).T.tolist()}
    scores, per_q = model.paths(x)
    assert len(per_q) == 1 and per_q[0]
    m = x.num_triples
    walks = set()
    for p in per_q[0]:
        assert 1 <= len(p.triples) <= 4 and 0 < p.probability <= 1
        aug = [t if d > 0 else t + m for t, d in zip(p.triples, p.directions)]
        first = aug[0]
        assert (head[first % m] if first < m else tail[first % m]) == 0  # leaves the topic
        assert all((a, b) in edges for a, b in zip(aug, aug[1:]))  # never leaves the line graph
        walks.add(tuple(aug))
    assert len(walks) == len(per_q[0])  # deduplicated
    on_path = {t for p in per_q[0] for t in p.triples}
    assert passed_count(scores) == len(on_path)
    assert set(torch.nonzero(scores > PATH_FLOOR).squeeze(1).tolist()) == on_path
    again, _ = model.paths(x)
    assert torch.equal(scores, again)  # seeded: a question's retrieval is reproducible


def test_walk_ends_at_stop_when_stop_dominates():
    tables = rapl_tables()
    model = RAPL(RAPLConfig(hidden=16, samples=10, max_len=4), tables.dim).eval()
    with torch.no_grad():  # STOP embedding = huge multiple of the query: STOP always wins
        model.prefix.weight.zero_()
        model.prefix.bias.zero_()
        model.stop[2].weight.zero_()
        model.stop[2].bias.fill_(0.0)
        model.question[2].weight.zero_()
        model.question[2].bias.fill_(1.0)
        model.stop[2].bias.fill_(1e4)
    x, _, _ = rapl_question(tables, 2)
    _, per_q = model.paths(x)
    assert per_q[0] and all(len(p.triples) == 1 for p in per_q[0])


def test_batched_questions_encode_alone_and_walk_inside_their_own_subgraph():
    tables = rapl_tables()
    model = RAPL(RAPLConfig(hidden=16, samples=15), tables.dim).eval()
    a, _, _ = rapl_question(tables, 3)
    b, head_b, tail_b = rapl_question(tables, 4, m=25)
    ab = batch_tensors([a, b])
    ma, m = a.num_triples, ab.num_triples
    with torch.no_grad():
        z_ab, z_a, z_b = model.encode(ab).z, model.encode(a).z, model.encode(b).z
    assert torch.allclose(z_ab[:ma], z_a[:ma], atol=1e-5) and torch.allclose(z_ab[m : m + ma], z_a[ma:], atol=1e-5)
    assert torch.allclose(z_ab[ma:m], z_b[: b.num_triples], atol=1e-5)
    _, per_q = model.paths(ab)
    assert len(per_q) == 2 and per_q[1]
    for p in per_q[1]:  # local indices of question b, starting at its topic (local node 0)
        assert all(0 <= t < b.num_triples for t in p.triples)
        first, d = p.triples[0], p.directions[0]
        assert (head_b[first] if d > 0 else tail_b[first]) == 0


def test_rapl_overfits_a_tiny_set_and_round_trips(tmp_path):
    seed_everything(0)
    tables = rapl_tables()
    data = []
    for s in range(4):
        x, head, tail = rapl_question(tables, 10 + s)
        # the label: one 2-step path 0 -> a -> b, answer b
        first = int(np.flatnonzero(head == 0)[0])
        nxt = np.flatnonzero((head == tail[first]) & (tail != 0))
        labels = np.zeros(len(head), np.float32)
        labels[first] = 1.0
        answer = tail[first]
        if len(nxt):
            labels[nxt[0]] = 1.0
            answer = tail[nxt[0]]
        ent = np.zeros(x.num_nodes, np.float32)
        ent[answer] = 1.0
        data.append((x, Targets(torch.from_numpy(labels), torch.from_numpy(ent)), labels.astype(bool)))
    model = RAPL(RAPLConfig(hidden=32, dropout=0.0, samples=30, top_m=10), tables.dim)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    first_loss = None
    for _ in range(150):
        model.train()
        total = 0.0
        for x, y, _ in data:
            loss = model.loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach())
        first_loss = first_loss if first_loss is not None else total
    assert total < 0.2 * first_loss
    model.eval()
    for x, _, labels in data:
        scores, per_q = model.paths(x)
        best = per_q[0][0]
        assert set(best.triples) == set(np.flatnonzero(labels).tolist())  # the labelled path is the top path
        assert best.probability > 0.5
    save_checkpoint(model, tmp_path / "r", {"embedding_model": "test", "embedding_dim": tables.dim})
    loaded = load_model(find_checkpoint(str(tmp_path / "r"), tmp_path))
    assert isinstance(loaded, get("rapl")) and loaded.cfg == model.cfg
    x = data[0][0]
    assert torch.equal(loaded.paths(x)[0], model.paths(x)[0])


def _greedy_fit(paths, budget):
    kept, triples = [], set()
    for p in paths:
        new = set(p.triples) - triples
        if len(triples) + len(new) <= budget:
            kept.append(p)
            triples |= new
    return kept


def test_the_triple_budget_keeps_whole_paths_most_probable_first():
    seed_everything(0)
    tables = rapl_tables()
    model = RAPL(RAPLConfig(hidden=16, samples=40, top_m=50, max_len=3), tables.dim).eval()
    x, _, _ = rapl_question(tables, 3)
    _, (free,) = model.paths(x)
    assert len({t for p in free for t in p.triples}) > 8  # the budget below bites
    model.cfg = RAPLConfig(hidden=16, samples=40, top_m=50, max_len=3, max_triples=8)
    scores, (kept,) = model.paths(x)
    expected = _greedy_fit(free, 8)
    assert [(p.triples, p.directions) for p in kept] == [(p.triples, p.directions) for p in expected]
    assert kept[0].triples == free[0].triples  # the most probable path always fits first
    on_path = {t for p in kept for t in p.triples}
    assert passed_count(scores) == len(on_path) <= 8
    assert set(torch.nonzero(scores > PATH_FLOOR).squeeze(1).tolist()) == on_path


def test_completion_adds_exactly_the_siblings_of_each_step_within_the_budget():
    seed_everything(0)
    tables = rapl_tables()
    model = RAPL(RAPLConfig(hidden=16, samples=10, top_m=3, max_len=2, complete=True), tables.dim).eval()
    x, head, tail = rapl_question(tables, 5)
    x = dataclasses.replace(x, relation=x.relation % 2)  # two relations: many parallel steps
    relation = x.relation.numpy()
    scores, (kept,) = model.paths(x)
    on_path = {t for p in kept for t in p.triples}
    # by hand: a step (t, +1) leaves head[t] by relation[t] forwards, (t, -1) leaves tail[t] backwards
    siblings = set()
    for p in kept:
        for t, d in zip(p.triples, p.directions):
            at = head if d > 0 else tail
            siblings |= {u for u in range(len(head)) if at[u] == at[t] and relation[u] == relation[t]}
    assert on_path <= siblings and siblings - on_path  # the tiny graph has parallel steps to add
    passed = set(torch.nonzero(scores > PATH_FLOOR).squeeze(1).tolist())
    assert passed == siblings  # every sibling, nothing else (never a triple outside the subgraph)
    assert scores[list(on_path)].min() > scores[list(siblings - on_path)].max()  # path triples rank first

    model.cfg = RAPLConfig(hidden=16, samples=10, top_m=3, max_len=2, complete=True, max_triples=len(on_path) + 1)
    scores, (kept_b,) = model.paths(x)
    passed_b = set(torch.nonzero(scores > PATH_FLOOR).squeeze(1).tolist())
    assert len(passed_b) <= len(on_path) + 1 and passed_b <= siblings
    assert {t for p in kept_b for t in p.triples} <= passed_b


def test_the_answers_of_the_most_probable_path_come_before_less_probable_paths_in_a_budget():
    # "which movies was X a writer on": the top path reaches one film; its last step's siblings are
    # the other films, and a budget must pass them before a less probable path's triples.
    seed_everything(0)
    tables = rapl_tables()
    cfg = dict(hidden=16, samples=10, top_m=3, max_len=2, complete=True)
    model = RAPL(RAPLConfig(**cfg), tables.dim).eval()
    x, head, tail = rapl_question(tables, 5)
    x = dataclasses.replace(x, relation=x.relation % 2)
    relation = x.relation.numpy()
    _, (free,) = model.paths(x)
    top = free[0]
    t, d = top.triples[-1], top.directions[-1]
    at = head if d > 0 else tail
    answers = set(top.triples) | {u for u in range(len(head)) if at[u] == at[t] and relation[u] == relation[t]}
    assert answers - set(top.triples)  # the top path has siblings to add
    assert any(set(p.triples) - answers for p in free[1:])  # a less probable path would have fit first
    model.cfg = RAPLConfig(**cfg, max_triples=len(answers))
    scores, (kept,) = model.paths(x)
    assert set(torch.nonzero(scores > PATH_FLOOR).squeeze(1).tolist()) == answers
    assert kept[0].triples == top.triples


def test_only_inference_settings_change_on_a_trained_model():
    from kgdb.errors import InputError
    from kgdb.models.registry import with_inference_settings

    model = RAPL(RAPLConfig(hidden=16), 16)
    with_inference_settings(model, {"max_triples": "50", "complete": "true"})
    assert model.cfg.max_triples == 50 and model.cfg.complete is True and model.cfg.hidden == 16
    with pytest.raises(InputError, match="hidden is fixed by training.*max_triples"):
        with_inference_settings(model, {"hidden": "64"})
    with pytest.raises(InputError, match="max_triples takes a int"):
        with_inference_settings(model, {"max_triples": "many"})
    # out of range or a typo: refused naming the setting and its range, the model left as it was
    for value, message in [
        ({"max_triples": "-5"}, "max_triples must be at least 0, got -5"),
        ({"temperature": "0"}, "temperature must be above 0, got 0.0"),
        ({"samples": "0"}, "samples must be at least 1, got 0"),
        ({"complete": "ture"}, "complete takes true or false, got 'ture'"),
    ]:
        with pytest.raises(InputError, match=message):
            with_inference_settings(model, value)
    assert model.cfg.max_triples == 50 and model.cfg.complete is True
    with_inference_settings(model, {"complete": "off"})
    assert model.cfg.complete is False


def test_a_checkpoint_config_out_of_range_is_refused_naming_the_setting():
    from kgdb.errors import InputError
    from kgdb.models.registry import build

    with pytest.raises(InputError, match="config: rapl setting dropout must be at least 0 and below 1, got 1.0"):
        build("rapl", {"dropout": 1.0}, 16)
    with pytest.raises(InputError, match="cosine-dde setting hidden must be at least 1, got 0"):
        build("cosine-dde", {"hidden": 0}, 16)
    assert build("cosine-dde", {"walk_rounds": 0}, 16).cfg.walk_rounds == 0  # topics only: an ablation, not an error
