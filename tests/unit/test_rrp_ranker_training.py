"""The RRP path ranker's training on hand-made examples: it overfits a tiny set deterministically,
breaks ties of val Hit@1 by val loss, takes as positives the best answers' shortest paths (and, with a
margin, those that read the question), and refuses bad input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from kgdb.rrp.models.path_ranker import PathRanker
from kgdb.rrp.scoring import DENSE_FEATURES, RankerConfig
from kgdb.rrp.training.path_ranker import (
    RankerExample,
    RankerTrainConfig,
    evaluate_ranker,
    reliable_positives,
    train_ranker_model,
)
from kgdb.scoring.path_tokens import token_of

pytestmark = pytest.mark.usefixtures("one_thread")


QUESTIONS = [  # (question, candidate paths as (relation, direction) lists, index of the right one)
    ("what language do they speak in X", [[(0, 1)], [(1, 1)], [(2, 1), (3, 1)]], 0),
    ("what is the capital of X", [[(0, 1)], [(1, 1)], [(2, 1), (3, 1)]], 1),
    ("who holds office in X", [[(0, 1)], [(1, 1)], [(2, 1), (3, 1)]], 2),
    ("what language is spoken in X", [[(0, 1)], [(1, -1)], [(2, 1), (3, -1)]], 0),
    ("which city is the capital of X", [[(0, -1)], [(1, 1)], [(2, 1), (3, 1)]], 1),
]


def _examples(buckets: int, dense_width: int):
    from kgdb.scoring.path_tokens import text_features

    rng = np.random.default_rng(0)
    out = []
    for i, (text, paths, right) in enumerate(QUESTIONS):
        tokens = np.zeros((len(paths), 2), np.int64)
        for j, p in enumerate(paths):
            tokens[j, : len(p)] = [token_of(r, d) for r, d in p]
        pos = np.arange(len(paths)) == right
        out.append(
            RankerExample(
                f"q{i}",
                rng.normal(size=8).astype(np.float32),
                text_features(text, buckets),
                tokens,
                rng.normal(size=(len(paths), dense_width)).astype(np.float32),
                pos,
                pos.astype(np.float32),
                pos.astype(np.float32),
            )
        )
    return out


def test_ranker_overfits_a_tiny_set_and_is_deterministic():
    cfg = RankerConfig(hidden=16, word_dim=8, buckets=1 << 10, max_hops=3, dropout=0.0)
    data = _examples(cfg.buckets, cfg.dense)
    rel = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))
    train_cfg = RankerTrainConfig(lr=1e-2, batch_size=2, max_epochs=60, patience=60, seed=1)
    torch.manual_seed(0)
    model, result = train_ranker_model(PathRanker(cfg, rel), data, [data], train_cfg)
    assert result.best_val_hit1 == 1.0
    assert evaluate_ranker(model, data)[:3] == (1.0, 1.0, 1.0)
    torch.manual_seed(0)
    again, _ = train_ranker_model(PathRanker(cfg, rel), data, [data], train_cfg)
    for a, b in zip(model.state_dict().values(), again.state_dict().values()):
        assert torch.equal(a, b)


def test_ranker_breaks_ties_of_val_hit1_by_val_loss():
    cfg = RankerConfig(hidden=16, word_dim=8, buckets=1 << 10, max_hops=3, dropout=0.0)
    data = _examples(cfg.buckets, cfg.dense)
    # every val candidate answers right (Hit@1 and Macro-F1 tie at every epoch), but the val positives are
    # other candidates than the training ones, so the val loss grows as the model learns the training set
    val = [
        dataclasses.replace(ex, positive=np.roll(ex.positive, 1), hit=np.ones_like(ex.hit), f1=np.ones_like(ex.f1))
        for ex in data
    ]
    torch.manual_seed(0)
    _, result = train_ranker_model(
        PathRanker(cfg, torch.randn(4, 8)),
        data,
        [val],
        RankerTrainConfig(lr=1e-2, batch_size=2, max_epochs=8, patience=8, seed=1),
    )
    losses = [e.val_loss for e in result.epochs]
    assert len(losses) == 8 and {(e.val_hit1, e.val_f1) for e in result.epochs} == {(1.0, 1.0)}
    assert losses[-1] > losses[0] and result.best_epoch == 1 + int(np.argmin(losses))


def test_positives_are_the_best_answers_shortest_paths_and_with_a_margin_those_that_read_the_question():
    # "who is the wife of barack obama?": his marriage (spouse_s, marriage.spouse) and his children's other parent
    # (parents^-1, parents) both reach Michelle Obama in two hops; only the first says what is asked
    f1 = np.array([1.0, 1.0, 0.0, 1.0])
    hops = np.array([2, 2, 1, 3])
    closeness = np.array([0.28, 0.58, 0.9, 0.7])
    assert reliable_positives(f1, hops, closeness).tolist() == [
        True,
        True,
        False,
        False,
    ]  # no margin: best F1, fewest hops
    assert reliable_positives(f1, hops, closeness, 0.05).tolist() == [False, True, False, False]
    # paths that read the question alike (a relation and its inverse) stay positives together
    assert reliable_positives(f1, hops, np.array([0.55, 0.58, 0.9, 0.7]), 0.05).tolist() == [True, True, False, False]
    # the fewest hops come first: a one-hop path with the best answers is the positive, however it reads
    assert reliable_positives(np.array([1.0, 1.0]), np.array([1, 2]), np.array([0.1, 0.9]), 0.0).tolist() == [
        True,
        False,
    ]
    assert not reliable_positives(np.zeros(3), hops[:3], closeness[:3], 0.05).any() and reliable_positives(
        *[np.zeros(0)] * 3
    ).shape == (0,)


def test_ranker_refuses_bad_input():
    cfg = RankerConfig(hidden=8, word_dim=4, buckets=1 << 8, max_hops=2, dropout=0.0)
    model = PathRanker(cfg, torch.randn(3, 8))
    q, words, offsets = torch.randn(1, 8), torch.tensor([1, 2]), torch.tensor([0])
    owner = torch.zeros(1, dtype=torch.long)
    with pytest.raises(ValueError, match="outside the relation vocabulary"):
        model(q, words, offsets, torch.tensor([[token_of(3, 1), 0]]), torch.zeros(1, len(DENSE_FEATURES)), owner)
    with pytest.raises(ValueError, match="do not fit a ranker of 2 hops"):
        model(q, words, offsets, torch.tensor([[1, 1, 1]]), torch.zeros(1, len(DENSE_FEATURES)), owner)
    with pytest.raises(ValueError, match="no training question has a candidate path that reaches an answer"):
        ex = _examples(cfg.buckets, cfg.dense)[0]
        ex.positive[:] = False
        train_ranker_model(model, [ex], [[ex]], RankerTrainConfig(max_epochs=1))
