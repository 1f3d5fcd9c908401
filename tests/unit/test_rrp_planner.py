"""The relation-path planner (a GRU decoder over (relation, direction) steps, Eq. 2's loss) overfits
a tiny set and decodes deterministically with a seed."""

from __future__ import annotations

import pytest
import torch

from kgdb.rrp.models.planner import PathDecoder, PlannerConfig
from kgdb.rrp.training.planner import PlannerTrainConfig, evaluate_planner, train_planner_model
from kgdb.scoring.path_tokens import step_of, text_features, token_of
from support.tensors import planner_examples

pytestmark = pytest.mark.usefixtures("one_thread")


def test_tokens_round_trip():
    assert [step_of(token_of(r, d)) for r in range(3) for d in (1, -1)] == [(r, d) for r in range(3) for d in (1, -1)]
    assert text_features("Who directed X", 1 << 10) == text_features("who directed x", 1 << 10)


def test_planner_overfits_a_tiny_set_and_is_deterministic():
    cfg = PlannerConfig(hidden=32, word_dim=16, buckets=1 << 10, max_hops=3, dropout=0.0)
    data = planner_examples(cfg.buckets)
    rel = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))
    train_cfg = PlannerTrainConfig(lr=1e-2, batch_size=4, max_epochs=80, patience=80, seed=1, beam=3)
    torch.manual_seed(0)
    model, result = train_planner_model(PathDecoder(cfg, rel), data, data, train_cfg)
    assert result.best_val_hit1 == 1.0
    assert evaluate_planner(model, data, beam=3) == (1.0, 1.0)
    top = model.beam_search(torch.from_numpy(data[3].q_emb), torch.tensor(data[3].words), beam=3)
    assert top[0][0] == (token_of(1, -1), token_of(0, 1))
    assert all(1 <= len(p) <= 3 for p, _ in top)
    torch.manual_seed(0)
    again, _ = train_planner_model(PathDecoder(cfg, rel), data, data, train_cfg)
    for a, b in zip(model.state_dict().values(), again.state_dict().values()):
        assert torch.equal(a, b)


def test_constrained_beam_search_only_takes_allowed_steps():
    cfg = PlannerConfig(hidden=16, word_dim=8, buckets=1 << 8, max_hops=3, dropout=0.0)
    torch.manual_seed(0)
    model = PathDecoder(cfg, torch.randn(4, 8)).eval()
    q, words = torch.randn(8), torch.tensor(text_features("who directed X", cfg.buckets))
    graph = {(): [token_of(2, 1)], (token_of(2, 1),): [token_of(0, -1)]}  # a two-step chain, then a dead end
    out = model.beam_search(q, words, beam=5, allowed=lambda prefixes: [graph.get(p, []) for p in prefixes])
    assert {p for p, _ in out} <= {(token_of(2, 1),), (token_of(2, 1), token_of(0, -1))} and out
    assert model.beam_search(q, words, beam=5, allowed=lambda prefixes: [[] for _ in prefixes]) == []
    free = model.beam_search(q, words, beam=5)
    assert len(free) == 5 and all(1 <= len(p) <= 3 for p, _ in free)
