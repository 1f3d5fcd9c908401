"""Data-parallel training (`kgdb train NAME --nproc N`): two CPU processes under DDP (gloo) reach
the validation recall of one process, on a tiny task built here (no database: the workers train
from the cache the parent prepared, which is what makes this possible)."""

from __future__ import annotations

import numpy as np

from kgdb.data.cache import CachedQuestion


def _task(n_questions: int, seed: int, entity: np.ndarray, relation: np.ndarray) -> list[CachedQuestion]:
    """Each question asks for one relation type: its labelled triples are the topic's triples of that
    type, and its embedding is that relation's vector plus noise."""
    rng = np.random.default_rng(seed)
    items = []
    for i in range(n_questions):
        n, m = 24, 60
        head = rng.integers(0, n, m)
        head[:6] = 0  # the topic (local node 0) has a few triples of several types
        tail = (head + 1 + rng.integers(0, n - 1, m)) % n
        rel = rng.integers(0, len(relation), m)
        target = int(rng.integers(0, len(relation)))
        rel[0] = target
        labels = (head == 0) & (rel == target)
        q = relation[target] + 0.1 * rng.standard_normal(relation.shape[1]).astype(np.float32)
        items.append(
            CachedQuestion(
                qid=f"q{seed}-{i}",
                question="",
                head=head.astype(np.int64),
                relation=rel.astype(np.int64),
                tail=tail.astype(np.int64),
                entity_idx=rng.choice(len(entity), n, replace=False).astype(np.int64),
                is_cvt=np.zeros(n, bool),
                topic=np.array([0], np.int64),
                labels=labels,
                answers=np.unique(tail[labels]).astype(np.int64),
                n_answers_in_graph=int(len(np.unique(tail[labels]))),
                question_embedding=(q / np.linalg.norm(q)).astype(np.float32),
                hop=1,
            )
        )
    return items


def test_shards_have_equal_length_and_cover_every_question():
    from kgdb.training.distributed import shard

    order = list(range(7))
    parts = [shard(order, r, 3) for r in range(3)]
    assert [len(p) for p in parts] == [3, 3, 3]
    assert set().union(*parts) == set(order)
    assert shard(order, 0, 1) == order


def _subgraphrag():
    from kgdb.models.retrievers.subgraphrag import SubgraphRAG, SubgraphRAGConfig

    return SubgraphRAG, SubgraphRAGConfig(hidden=32)


def _rapl():  # a path retriever: its loss uses modules forward never calls
    from kgdb.models.retrievers.rapl import RAPL, RAPLConfig

    return RAPL, RAPLConfig(hidden=32, samples=40, top_m=20)


def _train_each(jobs: list[tuple], device: str = "cpu") -> list:
    """Every job in one process group: the workers start (and import torch) once for all retrievers."""
    from kgdb.training.trainer import WorkerJob, train_worker

    return [train_worker(WorkerJob(*job), device=device) for job in jobs]


def test_two_processes_reach_the_validation_recall_of_one(tmp_path, one_thread):
    from kgdb.training import distributed
    from kgdb.training.trainer import TrainConfig

    rng = np.random.default_rng(0)
    entity = rng.standard_normal((200, 16)).astype(np.float32)
    relation = rng.standard_normal((8, 16)).astype(np.float32)
    relation /= np.linalg.norm(relation, axis=1, keepdims=True)
    train, val = _task(64, 1, entity, relation), _task(24, 2, entity, relation)
    cfg = TrainConfig(max_epochs=6, patience=6, select_k=6, lr=1e-2)
    makers = {"subgraphrag": _subgraphrag, "rapl": _rapl}
    args = {name: (*make(), 16, train, val, entity, relation, "toy", cfg) for name, make in makers.items()}

    one = _train_each([(*a, tmp_path / f"one-{name}", False) for name, a in args.items()])
    many = distributed.run(_train_each, ([(*a, tmp_path / f"many-{name}", False) for name, a in args.items()],), 2)

    for name, (_, one_result), (_, many_result) in zip(args, one, many):
        assert len(many_result.epochs) == len(one_result.epochs) == 6, name
        assert one_result.best_val_triple_recall > 0.7, (
            name
        )  # learnt (a random ranking gets ~0.1), so the comparison means something
        # Tolerance: two processes average two questions' gradients per step and take half the steps,
        # so the path differs; the recall reached must not.
        assert abs(many_result.best_val_triple_recall - one_result.best_val_triple_recall) <= 0.05, name
        assert (tmp_path / f"many-{name}" / "train-state.pt").is_file(), name  # written by rank 0
