"""RRP's structural reasoner (Eqs. 3-8) on hand-made tensors: the bidirectional loss equals a hand
computation on a 4-node graph, the propagation is a distribution per graph, paths are traced back,
and the reasoner overfits a tiny set; the numpy training subgraphs keep only complete walks."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from kgdb.data.path_subgraphs import EdgesByStep, ground_walks, path_subgraph
from kgdb.data.relation_paths import TripleArrays
from kgdb.rrp.models.structural import StructuralConfig, StructuralReasoner, bidirectional_loss, trace_paths
from kgdb.rrp.training.structural import StructuralTrainConfig, collate, hit1, to_data, train_structural_model
from support.tensors import chain_example

pytestmark = pytest.mark.usefixtures("one_thread")


def _kl(p, q):
    return sum(a * math.log(a / b) for a, b in zip(p, q) if a > 0)


def _js(p, q):
    m = [(a + b) / 2 for a, b in zip(p, q)]
    return 0.5 * _kl(p, m) + 0.5 * _kl(q, m)


def test_bidirectional_loss_equals_a_hand_computation_on_four_nodes():
    # n = 3 steps on nodes 0..3; topic 0, answers {2, 3}
    f = [[1, 0, 0, 0], [0.1, 0.6, 0.2, 0.1], [0.05, 0.15, 0.5, 0.3], [0.02, 0.08, 0.4, 0.5]]
    b = [[0, 0, 0.5, 0.5], [0.1, 0.5, 0.2, 0.2], [0.6, 0.2, 0.1, 0.1], [0.7, 0.1, 0.1, 0.1]]
    logs = lambda rows: [torch.tensor(r, dtype=torch.float64).log() for r in rows]  # noqa: E731
    answers = torch.tensor([False, False, True, True])
    topics = torch.tensor([True, False, False, False])
    batch = torch.zeros(4, dtype=torch.long)
    got = bidirectional_loss(logs(f), logs(b), answers, topics, batch, 1)
    want = _kl([0, 0, 0.5, 0.5], f[3]) + _kl([1, 0, 0, 0], b[3]) + _js(f[1], b[2]) + _js(f[2], b[1])
    assert got.shape == (1,)
    assert float(got[0]) == pytest.approx(want, rel=1e-6)
    # two copies in one batch give the same loss per graph
    two = bidirectional_loss(
        [torch.cat([x, x]) for x in logs(f)],
        [torch.cat([x, x]) for x in logs(b)],
        answers.repeat(2),
        topics.repeat(2),
        torch.tensor([0] * 4 + [1] * 4),
        2,
    )
    assert two.tolist() == pytest.approx([want, want], rel=1e-6)


def test_model_loss_is_eq8_of_its_own_forward_and_backward_distributions():
    torch.manual_seed(0)
    model = StructuralReasoner(
        StructuralConfig(hidden=16, word_dim=4, buckets=16, steps=2, dropout=0.0), torch.randn(3, 8)
    ).eval()
    batch = collate([to_data(chain_example())])
    fwd = model(batch)
    assert len(fwd.log_probs) == 3
    for lp in fwd.log_probs[1:]:
        assert float(lp.exp().sum()) == pytest.approx(1.0, abs=1e-5)
    # the backward pass by hand: reversed edges, instructions in reverse order, start on the answer
    from kgdb.rrp.models.structural import message_edges

    edge_index, rel, kind = message_edges(batch.edge_index[0], batch.edge_rel, batch.edge_index[1], batch.num_nodes)
    vq, omega = model.instructions(batch.q_emb, batch.words, batch.word_offsets)
    bwd = model.propagate(batch.answer, edge_index.flip(0), rel, kind, batch.batch, 1, omega.flip(0), vq)
    f = [lp.exp().tolist() for lp in fwd.log_probs]
    b = [lp.exp().tolist() for lp in bwd.log_probs]
    want = _kl([0, 0, 1, 0], f[2]) + _kl([1, 0, 0, 0], b[2]) + _js(f[1], b[1])
    assert float(model.loss(batch)) == pytest.approx(want, rel=1e-4)


def test_reasoner_overfits_a_tiny_set_and_traces_the_path_back():
    train = [chain_example(2), chain_example(3)]
    model = StructuralReasoner(
        StructuralConfig(hidden=16, word_dim=4, buckets=16, steps=2, dropout=0.0), torch.randn(3, 8)
    )
    assert hit1(model, train) <= 1.0
    model, result = train_structural_model(
        model, train, train, StructuralTrainConfig(lr=0.02, batch_size=2, max_epochs=150, patience=150)
    )
    assert result.best_val_hit1 == 1.0
    ex = train[1]
    prop = model(collate([to_data(ex)]))
    p = prop.log_probs[-1].exp()
    assert int(torch.argmax(p)) == 3 and float(p[3]) > 0.5
    ((nodes, rels, dirs),) = trace_paths(
        prop, torch.from_numpy(ex.head), torch.from_numpy(ex.relation), torch.from_numpy(ex.tail), [3]
    )
    assert (nodes, rels, dirs) == ([0, 1, 3], [0, 2], [1, 1])


def test_training_resumes_from_the_saved_state(tmp_path):
    train = [chain_example(2), chain_example(3)]
    cfg = StructuralTrainConfig(lr=0.02, batch_size=2, max_epochs=4, patience=10)
    torch.manual_seed(0)
    model = StructuralReasoner(
        StructuralConfig(hidden=16, word_dim=4, buckets=16, steps=2, dropout=0.0), torch.randn(3, 8)
    )
    short = StructuralTrainConfig(lr=0.02, batch_size=2, max_epochs=2, patience=10)
    _, first = train_structural_model(model, train, train, short, state_dir=tmp_path)
    with pytest.raises(ValueError, match="other settings"):
        train_structural_model(
            model,
            train,
            train,
            StructuralTrainConfig(lr=0.01, batch_size=2, max_epochs=4, patience=10),
            state_dir=tmp_path,
            resume=True,
        )
    _, resumed = train_structural_model(model, train, train, cfg, state_dir=tmp_path, resume=True)
    assert resumed.resumed_from_epoch == 3 and [e.epoch for e in resumed.epochs] == [1, 2, 3, 4]


def test_training_subgraph_keeps_only_complete_walks_with_parallel_edges():
    triples = [("a", "r", "b"), ("a", "s", "b"), ("b", "t", "c"), ("a", "r", "d"), ("e", "t", "b")]
    arrays = TripleArrays.from_triples(triples)
    index = EdgesByStep(arrays)
    r, t = arrays.relations.index("r"), arrays.relations.index("t")
    start = np.array([arrays.index["a"]])
    # r forward then t forward: a-r->b-t->c; a-r->d dies, so that edge is pruned
    edges = ground_walks(index, start, (2 * r, 2 * t), cap=10)
    assert sorted(triples[e] for e in edges) == [("a", "r", "b"), ("b", "t", "c")]
    # t backward from c reaches b and e's edge is not taken (it points into b, the walk is at c)
    sub = path_subgraph(arrays, index, ["a"], ["c"], [(2 * r, 2 * t), (2 * arrays.relations.index("s"),)])
    got = sorted(
        (arrays.ids[sub.nodes[h]], arrays.relations[x], arrays.ids[sub.nodes[tl]])
        for h, x, tl in zip(sub.head, sub.relation, sub.tail)
    )
    assert got == [("a", "r", "b"), ("a", "s", "b"), ("b", "t", "c")]
    assert [arrays.ids[n] for n in sub.nodes[sub.answer]] == ["c"] and [
        arrays.ids[n] for n in sub.nodes[sub.topic]
    ] == ["a"]
    assert path_subgraph(arrays, index, ["a"], ["e"], [(2 * r,)]) is None
