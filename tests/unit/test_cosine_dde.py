"""cosine-dde, the shipped default retriever: its numpy twin (what a cold `kgdb ask` runs) computes
exactly the torch module's scores, the walk feature is the best relation-score sum from a topic,
and the shipped checkpoint is small and graph-independent."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from kgdb.models.base import TensorTables
from kgdb.models.default import shipped_checkpoint
from kgdb.models.features import build_tensors
from kgdb.models.retrievers.cosine_dde import CosineDDE, path_relevance
from kgdb.scoring.retrievers import UNREACHED, cosine_dde_scores, path_relevance_numpy
from kgdb.scoring.twins import numpy_scorer
from support.tensors import numpy_subgraph

pytestmark = pytest.mark.usefixtures("one_thread")


def test_numpy_twin_equals_the_torch_module():
    entity, relation, sg, q = numpy_subgraph()
    torch.manual_seed(0)
    model = CosineDDE(embedding_dim=entity.shape[1]).eval()
    tables = TensorTables.from_numpy(entity, relation)
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
    with torch.no_grad():
        want = model(x).numpy()
    weights = {k: v.numpy() for k, v in model.state_dict().items()}
    got = cosine_dde_scores(weights, model.config(), entity, relation, sg, q)
    assert got.dtype == np.float32 and got.shape == want.shape
    assert float(np.abs(got - want).max()) < 1e-5


def test_walk_feature_is_the_best_relation_score_sum_from_a_topic():
    # 0 (topic) -a-> 1 -b-> 2 <-c- 3, and 4 -d-> 0: weights a=1, b=0.5, c=-1, d=2
    head, tail = np.array([0, 1, 3, 4]), np.array([1, 2, 2, 0])
    w = np.array([1.0, 0.5, -1.0, 2.0], dtype=np.float32)
    topic = np.array([True, False, False, False, False])
    floor = UNREACHED * 3
    got = path_relevance_numpy(head, tail, topic, w, rounds=2)
    # 1: 0->1 = 1; 2: 0->1->2 = 1.5; 3 is three hops away: unreached; 4: 0<-4 walked backwards = 2.
    # The topic keeps 0: walking 0->4->0 (2 + 2) is not a shortest walk.
    assert got.tolist() == pytest.approx([0.0, 1.0, 1.5, floor, 2.0])
    entity, relation, sg, q = numpy_subgraph(seed=1)
    x = build_tensors(
        TensorTables.from_numpy(entity, relation),
        head=head,
        relation=np.zeros(4, np.int64),
        tail=tail,
        entity_idx=np.arange(5),
        topic=np.array([0]),
        is_cvt=np.zeros(5, bool),
        question_embedding=q,
    )
    assert path_relevance(x, torch.from_numpy(w), rounds=2).tolist() == pytest.approx(got.tolist())


def test_the_shipped_default_is_small_and_graph_independent():
    folder = shipped_checkpoint()
    assert folder is not None and folder.name == "cosine-dde-webqsp"
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["retriever"] == "cosine-dde" and cfg["dataset"] == "webqsp"
    assert (folder / "model.safetensors").stat().st_size < 100_000
    # scores any graph of the same embedding model: random tables of dimension 384
    entity, relation, sg, q = numpy_subgraph(d=384)
    scores = numpy_scorer("cosine-dde", folder)(entity, relation, sg, q)
    assert scores.shape == (sg.num_triples,) and np.isfinite(scores).all()
