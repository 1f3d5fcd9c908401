"""Hand-made tensors for the model tests, no database: random entity and relation tables, random
subgraphs and RAPL questions over them, cached questions, relation-path planner examples and a chain
graph for the structural reasoner."""

from __future__ import annotations

import numpy as np

from kgdb.models.base import TensorTables
from kgdb.models.features import build_tensors
from kgdb.rrp.training.planner import PlannerExample
from kgdb.rrp.training.structural import StructuralExample
from kgdb.scoring.path_tokens import text_features, token_of
from kgdb.subgraph import Subgraph


def random_tables(n_entities=30, n_rel=7, d=16, seed=0) -> TensorTables:
    rng = np.random.default_rng(seed)
    ent = rng.normal(size=(n_entities, d)).astype(np.float32)
    ent /= np.linalg.norm(ent, axis=1, keepdims=True)
    ent[3] = 0.0  # a CVT row
    rel = rng.normal(size=(n_rel, d)).astype(np.float32)
    rel /= np.linalg.norm(rel, axis=1, keepdims=True)
    return TensorTables.from_numpy(ent, rel, "test")


def rapl_tables(n_entities=40, n_rel=9, d=16, seed=0) -> TensorTables:
    """The tables `rapl_question` indexes."""
    return random_tables(n_entities, n_rel, d, seed)


def rapl_question(tables, seed, n=12, m=30):
    rng = np.random.default_rng(seed)
    head = rng.integers(0, n, m)
    tail = (head + rng.integers(1, n, m)) % n
    q = rng.normal(size=tables.dim).astype(np.float32)
    q /= np.linalg.norm(q)
    x = build_tensors(
        tables,
        head=head,
        relation=rng.integers(0, 9, m),
        tail=tail,
        entity_idx=rng.choice(40, n, replace=False),
        topic=np.array([0]),
        is_cvt=np.zeros(n, dtype=bool),
        question_embedding=q,
    )
    return x, head, tail


def random_subgraph(tables: TensorTables, n=12, m=40, seed=0):
    rng = np.random.default_rng(seed)
    entity_idx = rng.choice(tables.entity.shape[0], size=n, replace=False)
    entity_idx[0] = 3
    q = rng.normal(size=tables.dim).astype(np.float32)
    return build_tensors(
        tables,
        head=rng.integers(0, n, m),
        relation=rng.integers(0, tables.relation.shape[0], m),
        tail=rng.integers(0, n, m),
        entity_idx=entity_idx,
        topic=np.array([1]),
        is_cvt=entity_idx == 3,
        question_embedding=q / np.linalg.norm(q),
    )


def cached_items(tables: TensorTables, count=6):
    from kgdb.data.cache import CachedQuestion

    items = []
    for i in range(count):
        x = random_subgraph(tables, seed=10 + i)
        labels = np.zeros(x.num_triples, dtype=bool)
        labels[[i, i + 3]] = True
        items.append(
            CachedQuestion(
                qid=f"q{i}",
                question="",
                head=x.head.numpy(),
                relation=x.relation.numpy(),
                tail=x.tail.numpy(),
                entity_idx=x.entity_idx.numpy(),
                is_cvt=x.cvt_mask.numpy(),
                topic=np.array([1]),
                labels=labels,
                answers=np.array([x.tail[i].item()]),
                n_answers_in_graph=1,
                question_embedding=x.question[0].numpy(),
                hop=1,
            )
        )
    return items


PLANNER_QUESTIONS = [  # question -> relation path (relation index, direction)
    ("who directed X", [[(0, 1)]]),
    ("which films did X direct", [[(0, -1)]]),
    ("who starred in X", [[(1, 1)]]),
    ("who directed the films starring X", [[(1, -1), (0, 1)]]),
    ("who starred in films directed by X", [[(0, -1), (1, 1)]]),
    ("what genre are the films written by X", [[(2, -1), (3, 1)], [(3, -1), (3, 1)]]),  # two labelled paths
    ("the directors of films written by the writer of X", [[(2, 1), (2, -1), (0, 1)]]),
]


def planner_examples(buckets):
    rng = np.random.default_rng(0)
    out = []
    for i, (text, paths) in enumerate(PLANNER_QUESTIONS):
        toks = sorted({tuple(token_of(r, d) for r, d in p) for p in paths})
        out.append(PlannerExample(f"q{i}", rng.normal(size=8).astype(np.float32), text_features(text, buckets), toks))
    return out


def chain_example(answer: int = 2, seed: int = 0) -> StructuralExample:
    # 0 -r0-> 1 -r1-> 2, 1 -r2-> 3 : the question asks r0 then r1 (answer 2) or r0 then r2 (answer 3)
    rng = np.random.default_rng(seed)
    return StructuralExample(
        qid=f"q{answer}",
        q_emb=rng.normal(size=8).astype(np.float32) if answer == 2 else np.ones(8, np.float32),
        words=[answer],
        head=np.array([0, 1, 1]),
        relation=np.array([0, 1, 2]),
        tail=np.array([1, 2, 3]),
        topic=np.array([True, False, False, False]),
        answer=np.arange(4) == answer,
    )


def numpy_subgraph(
    seed: int = 0, n: int = 30, m: int = 90, d: int = 16
) -> tuple[np.ndarray, np.ndarray, Subgraph, np.ndarray]:
    """Tables and one question's subgraph with what real ones hold: CVT nodes (zero rows), parallel
    edges, a duplicated triple, a node without edges, two topics."""
    rng = np.random.default_rng(seed)
    entity = rng.normal(size=(n + 5, d)).astype(np.float32)
    relation = rng.normal(size=(7, d)).astype(np.float32)
    entity_idx = np.sort(rng.permutation(n + 5)[:n])
    is_cvt = rng.random(n) < 0.2
    is_cvt[:2] = False  # the topics are named entities
    entity[entity_idx[is_cvt]] = 0.0
    head, tail = rng.integers(0, n - 1, m), rng.integers(0, n - 1, m)  # node n-1 has no edge
    rel = rng.integers(0, 7, m)
    if m > 4:
        head[-2:], tail[-2:] = head[0], tail[0]  # parallel edges
        rel[-1] = rel[0]  # and one triple twice
    q = rng.normal(size=d).astype(np.float32)
    q /= np.linalg.norm(q)
    sg = Subgraph(
        entity_ids=[f"e{i}" for i in range(n)],
        entity_names=[f"e{i}" for i in range(n)],
        entity_idx=entity_idx,
        is_cvt=is_cvt,
        head=head,
        relation=rel,
        tail=tail,
        relation_names=[f"r{r}" for r in rel],
        edge_ids=[str(i) for i in range(m)],
        topic=np.array([0, 1]),
        question_embedding=q,
    )
    return entity, relation, sg, q
