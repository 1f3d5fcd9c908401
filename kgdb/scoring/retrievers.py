"""The numpy twins of the registered retrievers that have one: each computes exactly what the
retriever's torch `forward` computes for one question. cosine needs no weights; cosine-dde reads a
few hundred from its checkpoint (`kgdb.scoring.weights.read_arrays`). Which retriever is served by
which twin is declared in `kgdb.scoring.twins`, and a test compares every declared pair."""

from __future__ import annotations

from typing import Protocol

import numpy as np

UNREACHED = -4.0  # cosine-dde: path relevance floor per hop (the torch module reads it from here)


class ScoredSubgraph(Protocol):
    """What a numpy scorer reads of a fetched subgraph (`kgdb.subgraph.Subgraph` has it)."""

    head: np.ndarray
    relation: np.ndarray
    tail: np.ndarray
    entity_idx: np.ndarray
    is_cvt: np.ndarray
    topic: np.ndarray


def cosine_scores(
    entity: np.ndarray,
    relation: np.ndarray,
    head: np.ndarray,
    rel: np.ndarray,
    tail: np.ndarray,
    entity_idx: np.ndarray,
    question: np.ndarray,
) -> np.ndarray:
    """`CosineRetriever.forward` for one question: question · normalise(z_h + z_r + z_t), float32.

    `entity`/`relation` are the graph's tables, `entity_idx` maps local nodes to table rows and
    `head`/`rel`/`tail` are the candidate triples (local node ids, relation rows).
    """
    z = entity[np.asarray(entity_idx, dtype=np.int64)]
    triple = (
        z[np.asarray(head, dtype=np.int64)]
        + relation[np.asarray(rel, dtype=np.int64)]
        + z[np.asarray(tail, dtype=np.int64)]
    )
    # torch.nn.functional.normalize: x / max(||x||, 1e-12)
    norm = np.sqrt((triple * triple).sum(axis=1, keepdims=True, dtype=np.float32))
    triple = triple / np.maximum(norm, np.float32(1e-12))
    # Row-wise products, not a BLAS gemv: gemv takes different code paths for different rows, so
    # two triples with equal vectors (e.g. two CVTs with one relation to one tail) could score
    # 1e-7 apart and swap places in the top K; here equal rows give equal scores, as in torch.
    return (triple * np.asarray(question, dtype=np.float32)).sum(axis=1, dtype=np.float32)


def _mean_in(x: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """PyG mean aggregation over edges src -> dst; nodes without incoming edges get zeros."""
    total = np.zeros_like(x)
    np.add.at(total, dst, x[src])
    count = np.bincount(dst, minlength=x.shape[0]).astype(np.float32)
    return total / np.maximum(count, 1)[:, None]


def dde_numpy(
    head: np.ndarray, tail: np.ndarray, topic_mask: np.ndarray, rounds: int, reverse_rounds: int
) -> np.ndarray:
    """`kgdb.models.dde.dde` in numpy: [n, 2 * (1 + rounds + reverse_rounds)]."""
    topic = topic_mask.astype(np.float32)
    s0 = np.stack([topic, 1 - topic], axis=1)
    feats, x = [s0], s0
    for _ in range(rounds):
        x = _mean_in(x, head, tail)
        feats.append(x)
    x = s0
    for _ in range(reverse_rounds):
        x = _mean_in(x, tail, head)
        feats.append(x)
    return np.concatenate(feats, axis=1)


def path_relevance_numpy(
    head: np.ndarray, tail: np.ndarray, topic_mask: np.ndarray, weight: np.ndarray, rounds: int
) -> np.ndarray:
    """`cosine_dde.path_relevance` in numpy: best weight sum along a shortest walk from a topic."""
    src, dst = np.concatenate([head, tail]), np.concatenate([tail, head])
    w = np.concatenate([weight, weight]).astype(np.float32)
    reached = np.asarray(topic_mask, dtype=bool).copy()
    best = np.where(reached, np.float32(0), np.float32(UNREACHED * (rounds + 1))).astype(np.float32)
    for _ in range(rounds):
        step = np.full_like(best, -np.inf)
        np.maximum.at(step, dst, np.where(reached, best, -np.inf)[src] + w)
        new = ~reached & np.isfinite(step)
        best = np.where(new, step, best).astype(np.float32)
        reached |= new
    return best


def _standardise(values: np.ndarray) -> np.ndarray:
    centred = values - values.mean(axis=0, keepdims=True, dtype=np.float32)
    std = np.sqrt((centred * centred).mean(axis=0, keepdims=True, dtype=np.float32))
    return centred / (std + np.float32(1e-2))


def cosine_dde_scores(
    weights: dict[str, np.ndarray],
    config: dict,
    entity: np.ndarray,
    relation: np.ndarray,
    sg: ScoredSubgraph,
    question: np.ndarray,
) -> np.ndarray:
    """`CosineDDE.forward` for one question, from the checkpoint's weights and model config."""
    head, tail = np.asarray(sg.head, dtype=np.int64), np.asarray(sg.tail, dtype=np.int64)
    rels, rel = np.unique(np.asarray(sg.relation, dtype=np.int64), return_inverse=True)
    z, zr = entity[np.asarray(sg.entity_idx, dtype=np.int64)], relation[rels]
    q = np.asarray(question, dtype=np.float32)
    # Dot products with q per node and per relation, gathered per triple: only the triple's norm
    # needs a [m, d] row sum (the torch module normalises each row; same cosines to float rounding).
    eq, rq = z @ q, zr @ q
    en, rn = np.linalg.norm(z, axis=1), np.linalg.norm(zr, axis=1)
    triple = z[head] + zr[rel] + z[tail]
    tn = np.sqrt(np.einsum("ij,ij->i", triple, triple))
    tiny = np.float32(1e-12)
    raw = np.stack(
        [
            (eq[head] + rq[rel] + eq[tail]) / np.maximum(tn, tiny),
            (rq / np.maximum(rn, tiny))[rel],
            (eq / np.maximum(en, tiny))[head],
            (eq / np.maximum(en, tiny))[tail],
        ],
        axis=1,
    ).astype(np.float32)
    cvt = np.asarray(sg.is_cvt, dtype=np.float32)
    sims = np.concatenate([raw, _standardise(raw), np.stack([cvt[head], cvt[tail]], axis=1)], axis=1)
    topic_mask = np.zeros(len(cvt), dtype=bool)
    topic_mask[np.asarray(sg.topic, dtype=np.int64)] = True
    relation_std = sims[:, raw.shape[1] + 1]
    walk = path_relevance_numpy(head, tail, topic_mask, relation_std, int(config["walk_rounds"]))
    wh, wt = walk[head], walk[tail]
    s = dde_numpy(head, tail, topic_mask, int(config["dde_rounds"]), int(config["dde_reverse_rounds"]))
    x = np.concatenate([sims, np.stack([wh, wt, np.maximum(wh, wt) + relation_std], axis=1), s[head], s[tail]], axis=1)
    hidden = np.maximum(x @ weights["mlp.0.weight"].T + weights["mlp.0.bias"], 0)
    return (hidden @ weights["mlp.2.weight"].T + weights["mlp.2.bias"])[:, 0].astype(np.float32)
