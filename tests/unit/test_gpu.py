"""CUDA: the trainable models compute on the GPU what they compute on the CPU, and train there.

CI has no GPU, so these are skipped there. They need no database, so a GPU machine without Java or
the Neo4j driver runs them alone: `python -m pytest -q --noconftest tests/unit/test_gpu.py` (docs/performance.md, "On a GPU").
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

# at module level, so that CI (no GPU: every test skipped) still fails if a helper these tests share is renamed
from support.tensors import (
    cached_items,
    chain_example,
    planner_examples,
    random_subgraph,
    random_tables,
    rapl_question,
    rapl_tables,
)

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device (CI has none)")

GPU = "cuda"


def _close(gpu: torch.Tensor, cpu: torch.Tensor) -> None:
    assert gpu.device.type == "cuda"
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-4, atol=1e-5)


def test_subgraphrag_scores_on_the_gpu_as_on_the_cpu_and_trains_there():
    from kgdb.models.base import TensorTables
    from kgdb.models.retrievers.subgraphrag import SubgraphRAG, SubgraphRAGConfig
    from kgdb.training.trainer import TrainConfig, seed_everything, train

    cpu = random_tables()
    gpu = TensorTables.from_numpy(cpu.entity.numpy(), cpu.relation.numpy(), "test", GPU)
    seed_everything(0)
    model = SubgraphRAG(SubgraphRAGConfig(hidden=32), cpu.dim).eval()
    on_gpu = copy.deepcopy(model).to(GPU)
    model.prepare(cpu)
    on_gpu.prepare(gpu)
    with torch.no_grad():
        for seed in range(3):
            _close(on_gpu.score(random_subgraph(gpu, seed=seed)), model.score(random_subgraph(cpu, seed=seed)))
    seed_everything(7)
    fresh = SubgraphRAG(SubgraphRAGConfig(hidden=32), gpu.dim).to(GPU)
    fresh, log = train(
        fresh, cached_items(cpu), cached_items(cpu), gpu, TrainConfig(max_epochs=3, patience=3, seed=7, select_k=5)
    )
    assert len(log.epochs) == 3 and all(np.isfinite(e.loss) for e in log.epochs)
    assert 0.0 <= log.best_val_triple_recall <= 1.0 and next(fresh.parameters()).device.type == "cuda"


def test_rapl_learns_its_labelled_path_on_the_gpu():
    from kgdb.models.base import Targets, TensorTables
    from kgdb.models.retrievers.rapl import RAPL, RAPLConfig
    from kgdb.training.trainer import seed_everything

    seed_everything(0)
    cpu = rapl_tables()
    gpu = TensorTables.from_numpy(cpu.entity.numpy(), cpu.relation.numpy(), "test", GPU)
    x, head, tail = rapl_question(gpu, 10)
    first = int(np.flatnonzero(head == 0)[0])  # one labelled step from the topic (node 0)
    labels = np.zeros(len(head), np.float32)
    labels[first] = 1.0
    ent = np.zeros(x.num_nodes, np.float32)
    ent[tail[first]] = 1.0
    y = Targets(torch.from_numpy(labels).to(GPU), torch.from_numpy(ent).to(GPU))
    model = RAPL(RAPLConfig(hidden=32, dropout=0.0, samples=30, top_m=10), gpu.dim).to(GPU)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(60):
        model.train()
        loss = model.loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.2 * losses[0]
    scores, per_q = model.eval().paths(x)
    assert scores.device.type == "cuda" and first in per_q[0][0].triples  # the labelled step is on the top path


def test_planner_overfits_on_the_gpu():
    from kgdb.rrp.models.planner import PathDecoder, PlannerConfig
    from kgdb.rrp.training.planner import PlannerTrainConfig, evaluate_planner, train_planner_model
    from kgdb.scoring.path_tokens import token_of

    cfg = PlannerConfig(hidden=32, word_dim=16, buckets=1 << 10, max_hops=3, dropout=0.0)
    data = planner_examples(cfg.buckets)
    torch.manual_seed(0)
    model = PathDecoder(cfg, torch.randn(4, 8, generator=torch.Generator().manual_seed(0))).to(GPU)
    model, result = train_planner_model(
        model, data, data, PlannerTrainConfig(lr=1e-2, batch_size=4, max_epochs=80, patience=80, seed=1, beam=3)
    )
    assert result.best_val_hit1 == 1.0 and evaluate_planner(model, data, beam=3) == (1.0, 1.0)
    top = model.beam_search(torch.from_numpy(data[3].q_emb).to(GPU), torch.tensor(data[3].words, device=GPU), beam=3)
    assert top[0][0] == (token_of(1, -1), token_of(0, 1))


def test_path_ranker_scores_on_the_gpu_as_on_the_cpu_and_overfits_there():
    from kgdb.rrp.models.path_ranker import PathRanker
    from kgdb.rrp.scoring import RankerConfig
    from kgdb.rrp.training.path_ranker import (
        RankerExample,
        RankerTrainConfig,
        evaluate_ranker,
        rank_scores,
        train_ranker_model,
    )
    from kgdb.scoring.path_tokens import text_features, token_of

    cfg = RankerConfig.for_any_graph(hidden=16, word_dim=8, buckets=1 << 10, max_hops=3, dropout=0.0)
    rng = np.random.default_rng(0)
    data = []
    for i, right in enumerate([0, 1, 2, 1, 0, 2]):  # three candidate paths per question, one right
        tokens = np.array(
            [[token_of(r, d), token_of(r + 1, 1) if r % 2 else 0] for r, d in ((i % 3, 1), (3, -1), (i % 2, -1))]
        )
        pos = np.arange(3) == right
        data.append(
            RankerExample(
                f"q{i}",
                rng.normal(size=8).astype(np.float32),
                text_features(f"question {i} about {right}", cfg.buckets),
                tokens,
                rng.normal(size=(3, cfg.dense)).astype(np.float32),
                pos,
                pos.astype(np.float32),
                pos.astype(np.float32),
            )
        )
    relations = torch.randn(5, 8, generator=torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    model = PathRanker(cfg, relations).eval()
    on_gpu = copy.deepcopy(model).to(GPU)
    for ex in data:
        torch.testing.assert_close(
            torch.from_numpy(rank_scores(on_gpu, ex)), torch.from_numpy(rank_scores(model, ex)), rtol=1e-4, atol=1e-5
        )
    torch.manual_seed(0)
    trained, result = train_ranker_model(
        PathRanker(cfg, relations).to(GPU),
        data,
        [data],
        RankerTrainConfig(lr=1e-2, batch_size=2, max_epochs=80, patience=80, seed=1),
    )
    assert result.best_val_hit1 == 1.0 and evaluate_ranker(trained, data)[:3] == (1.0, 1.0, 1.0)
    assert trained.relation_emb.device.type == "cuda"


def test_structural_reasoner_propagates_on_the_gpu_as_on_the_cpu_and_overfits_there():
    from kgdb.rrp.models.structural import StructuralConfig, StructuralReasoner
    from kgdb.rrp.training.structural import StructuralTrainConfig, collate, to_data, train_structural_model

    train = [chain_example(2), chain_example(3)]
    torch.manual_seed(0)
    model = StructuralReasoner(
        StructuralConfig(hidden=16, word_dim=4, buckets=16, steps=2, dropout=0.0), torch.randn(3, 8)
    ).eval()
    on_gpu = copy.deepcopy(model).to(GPU)
    with torch.no_grad():
        _close(
            on_gpu.loss(collate([to_data(ex) for ex in train], GPU)), model.loss(collate([to_data(ex) for ex in train]))
        )
        for want, got in zip(
            model(collate([to_data(train[0])])).log_probs, on_gpu(collate([to_data(train[0])], GPU)).log_probs
        ):
            _close(got, want)
    trained, result = train_structural_model(
        on_gpu, train, train, StructuralTrainConfig(lr=0.02, batch_size=2, max_epochs=150, patience=150)
    )
    assert result.best_val_hit1 == 1.0
    with torch.no_grad():
        p = trained(collate([to_data(train[1])], GPU)).log_probs[-1].exp()
    assert int(torch.argmax(p)) == 3 and float(p[3]) > 0.5
