"""Every model with a numpy twin scores like its torch module: each registered retriever that
`kgdb.scoring.twins` declares a twin for, built with random weights and served through
`numpy_scorer` exactly as a cold `kgdb ask` serves it (a checkpoint written and read back when the
twin reads weights), and the RRP path ranker against `NumpyPathRanker`. The retrievers are taken
from the registry, so a twin declared for a newly registered retriever is compared here as well."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kgdb.models import registry
from kgdb.models.base import TensorTables
from kgdb.models.checkpoints import save_checkpoint
from kgdb.models.features import build_tensors
from kgdb.rrp.models.path_ranker import PathRanker
from kgdb.rrp.scoring import NumpyPathRanker, RankerConfig
from kgdb.scoring.twins import RETRIEVER_TWINS, numpy_scorer
from support.tensors import numpy_subgraph

pytestmark = pytest.mark.usefixtures("one_thread")

TWINNED = [name for name in registry.names() if name in RETRIEVER_TWINS]
TOLERANCE = 1e-5  # float32 sums in another order: a few ulps of scores of order 1


def test_every_twin_is_declared_for_a_registered_retriever():
    assert set(RETRIEVER_TWINS) <= set(registry.names())
    assert {"cosine", "cosine-dde"} <= set(TWINNED)  # the two a cold `kgdb ask` relies on


@pytest.mark.parametrize("name", TWINNED)
@pytest.mark.parametrize(("seed", "n", "m"), [(0, 30, 90), (1, 60, 400), (2, 3, 1)])
def test_the_twin_scores_like_the_torch_module(name, seed, n, m, tmp_path):
    d = 16
    entity, relation, sg, q = numpy_subgraph(seed, n, m, d)
    torch.manual_seed(seed)
    model = registry.build(name, {}, embedding_dim=d).eval()
    tables = TensorTables.from_numpy(entity, relation)
    model.prepare(tables)
    x = build_tensors(
        tables,
        head=sg.head,
        relation=sg.relation,
        tail=sg.tail,
        entity_idx=sg.entity_idx,
        topic=sg.topic,
        is_cvt=sg.is_cvt,
        question_embedding=q,
    )
    want = model.score(x).numpy()
    checkpoint = save_checkpoint(model, tmp_path / name, {}) if RETRIEVER_TWINS[name].trained else None
    twin = numpy_scorer(name, checkpoint)
    assert twin is not None, f"{name}'s twin does not serve it {'with' if checkpoint else 'without'} a checkpoint"
    got = twin(entity, relation, sg, q)
    assert got.dtype == np.float32 and got.shape == want.shape == (m,)
    np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE)
    # the other case keeps the torch module (a trained twin without weights, an untrained one handed some)
    assert numpy_scorer(name, None if checkpoint else tmp_path) is None


@pytest.mark.parametrize("seed", [0, 1])
def test_the_portable_path_ranker_twin_scores_like_the_torch_module(seed):
    d, relations = 16, 9
    cfg = RankerConfig.for_any_graph(hidden=12, word_dim=8, buckets=97)
    rng = np.random.default_rng(seed)
    table = rng.normal(size=(relations, d)).astype(np.float32)
    torch.manual_seed(seed)
    module = PathRanker(cfg, torch.from_numpy(table)).eval()
    with torch.no_grad():  # the init leaves some weights zero; every weight must count here
        for p in module.parameters():
            p.normal_(0.0, 0.5)
    weights = {k: v.numpy() for k, v in module.state_dict().items()}
    twin = NumpyPathRanker(cfg, weights, table)
    for n, words in ((1, [3]), (40, [5, 17, 96]), (200, [])):
        tokens = rng.integers(1, 1 + 2 * relations, size=(n, cfg.max_hops))
        tokens[np.arange(cfg.max_hops)[None] >= rng.integers(1, cfg.max_hops + 1, n)[:, None]] = 0  # 1-3 hops, padded
        dense = rng.normal(size=(n, cfg.dense)).astype(np.float32)
        q = rng.normal(size=d).astype(np.float32)
        got = twin.scores(q, words, tokens, dense)
        with torch.no_grad():
            want = module(
                torch.from_numpy(q)[None],
                torch.tensor(words, dtype=torch.long),
                torch.tensor([0]),
                torch.from_numpy(tokens),
                torch.from_numpy(dense),
                torch.zeros(n, dtype=torch.long),
            ).numpy()
        assert got.dtype == np.float32 and got.shape == (n,)
        np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE)
