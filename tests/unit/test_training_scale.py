"""Training that scales with subgraph size: the fused per-triple MLP and the batched, factorised
SubgraphRAG forward equal the dense textbook model (values and gradients), per-node features (DDE)
are computed once per cached subgraph, and batched training resumes exactly. Hand-made tensors and
a temporary cache folder; no database."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kgdb.data.cache import CachedQuestion, add_features, load_cache, save_cache
from kgdb.errors import InputError
from kgdb.models.base import Targets, TensorTables
from kgdb.models.dde import distinct_rows
from kgdb.models.features import batch_tensors, build_tensors, featurise
from kgdb.models.gathered_mlp import gathered_mlp
from kgdb.models.retrievers.cosine import CosineRetriever
from kgdb.models.retrievers.subgraphrag import SubgraphRAG, SubgraphRAGConfig
from kgdb.training.trainer import (
    STATE_FILE,
    ResumeMismatchError,
    TrainConfig,
    ensure_node_features,
    prepare_cpu,
    seed_everything,
    train,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def _tables(n_entities=40, n_rel=9, d=16, seed=0) -> TensorTables:
    rng = np.random.default_rng(seed)
    ent = rng.normal(size=(n_entities, d)).astype(np.float32)
    ent /= np.linalg.norm(ent, axis=1, keepdims=True)
    ent[[3, 7]] = 0.0  # CVT rows
    rel = rng.normal(size=(n_rel, d)).astype(np.float32)
    rel /= np.linalg.norm(rel, axis=1, keepdims=True)
    return TensorTables.from_numpy(ent, rel, "test")


def _item(tables: TensorTables, i: int, n: int = 14, m: int = 45) -> CachedQuestion:
    rng = np.random.default_rng(100 + i)
    entity_idx = rng.choice(tables.entity.shape[0], size=n, replace=False)
    entity_idx[:2] = [3, 7]  # two CVT nodes per question
    q = rng.normal(size=tables.dim).astype(np.float32)
    labels = np.zeros(m, dtype=bool)
    labels[[i % m, (i + 4) % m]] = True
    head, tail = rng.integers(0, n, m), rng.integers(0, n, m)
    return CachedQuestion(
        qid=f"q{i}",
        question=f"question {i}",
        head=head,
        relation=rng.integers(0, tables.relation.shape[0], m),
        tail=tail,
        entity_idx=entity_idx,
        is_cvt=np.isin(entity_idx, [3, 7]),
        topic=np.array([2]),
        labels=labels,
        answers=np.array([tail[i % m]]),
        n_answers_in_graph=1,
        question_embedding=q / np.linalg.norm(q),
        hop=1,
    )


def test_gathered_mlp_equals_autograd_composition():
    torch.manual_seed(0)
    H, m = 24, 37
    tables = [torch.randn(r, H, requires_grad=True) for r in (5, 9)]
    indices = [torch.randint(0, t.shape[0], (m, k)) for t, k in zip(tables, (3, 2))]  # rows may repeat within a triple
    w, b = torch.randn(H, requires_grad=True), torch.randn(1, requires_grad=True)
    g = torch.randn(m)
    dense = torch.relu(sum(t[i].sum(dim=1) for t, i in zip(tables, indices))) @ w + b
    fused = gathered_mlp(list(zip(tables, indices)), w, b, chunk=8)  # ragged last chunk
    assert torch.allclose(dense, fused, atol=1e-5)
    want = torch.autograd.grad(dense, [w, b, *tables], g)
    got = torch.autograd.grad(fused, [w, b, *tables], g)
    for a, c in zip(want, got):
        assert a.shape == c.shape and torch.allclose(a, c, atol=1e-5)


def test_distinct_rows_equals_exact_unique():
    s = torch.tensor(np.random.default_rng(1).integers(0, 3, size=(500, 6)) / 4.0, dtype=torch.float32)
    distinct, which = distinct_rows(s)
    assert torch.equal(distinct.index_select(0, which), s)
    assert distinct.shape[0] == torch.unique(s, dim=0).shape[0]


def test_factorised_training_forward_equals_dense_on_a_batch():
    """The training forward on a batch of 3 questions (cached DDE, CVT nodes, shared entities)
    equals the dense [T, 4d + 2w] MLP to 1e-5, and so do the gradients of every parameter."""
    torch.manual_seed(0)
    tables = _tables()
    model = SubgraphRAG(SubgraphRAGConfig(hidden=64), tables.dim).train()
    model.chunk = 16  # several chunks, a ragged last one
    items = [_item(tables, i) for i in range(3)]
    assert ensure_node_features(model, items, tables) == (3, 0)
    x = batch_tensors([featurise(it, tables) for it in items])
    assert model.node_feature_key() in x.features and x.num_questions == 3
    dense = model.forward_naive(x)
    fused = model(x)
    assert torch.allclose(dense, fused, atol=1e-5)
    y = [Targets(torch.from_numpy(it.labels.astype(np.float32)), torch.zeros(len(it.entity_idx))) for it in items]
    params = list(model.parameters())
    want = torch.autograd.grad(model.batch_loss(dense, y, x), params)
    got = torch.autograd.grad(model.batch_loss(model(x), y, x), params)
    for a, b in zip(want, got):
        assert torch.allclose(a, b, atol=1e-5)
    assert float(got[0].abs().sum()) > 0  # the CVT vector is trained through the fused path
    # The batch loss is the mean of the per-question losses.
    per_question = [model.loss(model.forward_naive(featurise(it, tables)), t) for it, t in zip(items, y)]
    assert torch.allclose(model.batch_loss(dense, y, x), torch.stack(per_question).mean(), atol=1e-6)


def test_node_features_are_computed_once_per_cached_subgraph(tmp_path):
    tables = _tables()
    model = SubgraphRAG(SubgraphRAGConfig(hidden=16), tables.dim)
    path = tmp_path / "split.npz"
    save_cache(path, [_item(tables, i) for i in range(4)], {"key": "k", "counts": {}})
    items = load_cache(path)
    assert all(not it.features for it in items)
    assert ensure_node_features(model, items, tables) == (4, 0)  # computed: cache misses
    add_features(path, items)
    again = load_cache(path)
    assert ensure_node_features(model, again, tables) == (0, 4)  # all read back: cache hits
    key = model.node_feature_key()
    for a, b in zip(items, again):
        assert np.array_equal(a.features[key], b.features[key]) and np.array_equal(a.head, b.head)
        # the stored DDE is the DDE of that subgraph
        assert np.allclose(
            b.features[key],
            model.node_features(
                build_tensors(
                    tables,
                    head=b.head,
                    relation=b.relation,
                    tail=b.tail,
                    entity_idx=b.entity_idx,
                    topic=b.topic,
                    is_cvt=b.is_cvt,
                    question_embedding=b.question_embedding,
                )
            ).numpy(),
        )
    assert [it.qid for it in again] == [f"q{i}" for i in range(4)]


def test_batched_training_resumes_to_the_same_state(tmp_path):
    """Batches of 3: a run killed inside epoch 3's validation and resumed continues from the saved
    epoch 2 (epoch counter, optimiser moments and step, order RNG restored) and ends with the same
    weights and log as an uninterrupted run."""
    tables = _tables()
    items = [_item(tables, i) for i in range(7)]
    cfg = TrainConfig(max_epochs=5, patience=10, seed=3, select_k=5, batch_size=3, lr=1e-2)

    def fresh():
        seed_everything(3)
        return SubgraphRAG(SubgraphRAGConfig(hidden=32), tables.dim)

    whole, whole_log = train(fresh(), items, items, tables, cfg, state_dir=tmp_path / "whole")

    class Killed(Exception):
        pass

    def kill(log):
        if log.epoch == 3:
            raise Killed

    with pytest.raises(Killed):
        train(fresh(), items, items, tables, cfg, on_epoch=kill, state_dir=tmp_path / "killed")
    saved = torch.load(tmp_path / "killed" / STATE_FILE, weights_only=False)
    assert saved["epoch"] == 2
    steps = [s["step"] for s in saved["optimizer"]["state"].values()]
    assert steps and all(float(s) == 2 * 3 for s in steps)  # 7 questions in batches of 3: 3 steps an epoch
    # Ending the run at its last saved epoch (a shorter --max-epochs) runs no step and returns the
    # saved run's best model; the trajectory settings must match.
    import dataclasses
    import shutil

    shutil.copytree(tmp_path / "killed", tmp_path / "ended")
    no_steps = []
    ended, ended_log = train(
        fresh(),
        items,
        items,
        tables,
        dataclasses.replace(cfg, max_epochs=2),
        state_dir=tmp_path / "ended",
        resume=True,
        on_step=lambda loss, questions: no_steps.append(questions),
    )
    assert no_steps == [] and len(ended_log.epochs) == 2 and ended_log.best_epoch in (1, 2)
    assert all(torch.equal(a, b) for a, b in zip(ended.state_dict().values(), saved["best_state"].values()))
    with pytest.raises(ResumeMismatchError, match="another training configuration"):
        train(
            fresh(),
            items,
            items,
            tables,
            dataclasses.replace(cfg, batch_size=2),
            state_dir=tmp_path / "ended",
            resume=True,
        )
    steps_seen = []
    resumed, resumed_log = train(
        fresh(),
        items,
        items,
        tables,
        cfg,
        state_dir=tmp_path / "killed",
        resume=True,
        on_step=lambda loss, questions: steps_seen.append(questions),
    )
    assert resumed_log.resumed_from_epoch == 2
    assert steps_seen == [3, 3, 1] * 3  # epochs 3, 4, 5 only
    assert [e.loss for e in resumed_log.epochs] == [e.loss for e in whole_log.epochs]
    assert all(torch.equal(a, b) for a, b in zip(whole.state_dict().values(), resumed.state_dict().values()))


def test_a_retriever_without_batched_training_refuses_a_batch_size():
    tables = _tables()
    items = [_item(tables, i) for i in range(2)]
    with pytest.raises(ValueError, match="one question per step"):
        train(CosineRetriever(), items, items, tables, TrainConfig(max_epochs=1, batch_size=2))


def test_prepare_cpu_sets_threads_and_flushes_subnormals():
    def flushed() -> bool:  # 1e-39 is below float32's smallest normal number, 1.18e-38
        return float(torch.tensor([1e-39]) * 1.0) == 0.0

    before = flushed()  # an earlier training run in this process may have set it
    try:
        torch.set_flush_denormal(False)
        assert not flushed()
        prepare_cpu("cpu", 1)
        assert torch.get_num_threads() == 1
        assert flushed()  # training reads subnormals as zero (fast), not as themselves (slow)
    finally:
        torch.set_flush_denormal(before)


def test_read_weights_sets_subnormal_weights_to_zero_and_keeps_the_rest(tmp_path):
    from safetensors.torch import save_file

    from kgdb.models.checkpoints import read_weights

    tiny = torch.finfo(torch.float32).tiny  # float32's smallest normal number
    save_file(
        {
            "w": torch.tensor([1e-39, -5e-40, tiny, -tiny, 1.5, 0.0]),
            "d": torch.tensor([1e-310, 2.0], dtype=torch.float64),
            "ids": torch.tensor([1, 0, 3]),
        },
        str(tmp_path / "model.safetensors"),
    )
    state = read_weights(tmp_path / "model.safetensors")
    assert state["w"].tolist() == [0.0, 0.0, tiny, -tiny, 1.5, 0.0]  # normal numbers, however small, stay
    assert state["d"].tolist() == [0.0, 2.0]  # float64 by its own limit
    assert state["ids"].tolist() == [1, 0, 3]


def test_a_device_torch_cannot_use_here_is_refused_naming_the_setting():
    from kgdb.embeddings import Embedder
    from kgdb.models.base import resolve_device

    assert resolve_device("cpu") == "cpu" and resolve_device("auto") in ("cpu", "cuda")
    with pytest.raises(InputError, match=r"^KGDB_DEVICE: 'gpu' is not a torch device; use auto, cpu, cuda or cuda:N$"):
        resolve_device("gpu")
    missing = f"cuda:{torch.cuda.device_count()}"  # one past the last GPU (cuda:0 on a machine without any)
    with pytest.raises(
        InputError, match=rf"^KGDB_DEVICE: {missing}: torch .* sees {torch.cuda.device_count()} CUDA device\(s\)"
    ):
        resolve_device(missing)
    with pytest.raises(InputError, match="KGDB_DEVICE"):  # every training run resolves it first, before any work
        prepare_cpu("gpu", 1)
    with pytest.raises(InputError, match="KGDB_DEVICE"):  # not "cannot load embedding model"
        _ = Embedder(device="gpu").model
