"""Featurisation: numpy `Subgraph` (from Neo4j) -> `SubgraphTensors` on the model's device."""

from __future__ import annotations

import numpy as np
import torch

from kgdb.errors import KgdbError
from kgdb.models.base import SubgraphTensors, TensorTables
from kgdb.subgraph import Subgraph


def _long(a: np.ndarray, device: torch.device) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64)).to(device)


def _bool(a: np.ndarray, device: torch.device) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.bool_)).to(device)


def build_tensors(
    tables: TensorTables,
    *,
    head: np.ndarray,
    relation: np.ndarray,
    tail: np.ndarray,
    entity_idx: np.ndarray,
    topic: np.ndarray,
    is_cvt: np.ndarray,
    question_embedding: np.ndarray,
) -> SubgraphTensors:
    """Tensors from raw arrays (the training cache stores exactly these arrays)."""
    device = tables.device
    n = int(entity_idx.shape[0])
    topic_mask = np.zeros(n, dtype=bool)
    topic_mask[np.asarray(topic, dtype=np.int64)] = True
    q = np.asarray(question_embedding, dtype=np.float32)
    if q.shape != (tables.dim,):
        raise KgdbError(
            f"question embedding has shape {q.shape} but the graph's embedding tables have dimension "
            f"{tables.dim}: embed questions with the model the graph was loaded with"
        )
    return SubgraphTensors(
        head=_long(head, device),
        relation=_long(relation, device),
        tail=_long(tail, device),
        entity_idx=_long(entity_idx, device),
        topic_mask=_bool(topic_mask, device),
        cvt_mask=_bool(is_cvt, device),
        question=torch.from_numpy(q.copy()).to(device).unsqueeze(0),
        node_batch=torch.zeros(n, dtype=torch.long, device=device),
        tables=tables,
    )


def featurise(sg: Subgraph, tables: TensorTables, question_embedding: np.ndarray | None = None) -> SubgraphTensors:
    """Tensors for one fetched subgraph (or a cached training item with the same array fields);
    the question embedding defaults to `sg.question_embedding`."""
    q = question_embedding if question_embedding is not None else sg.question_embedding
    if q is None:
        raise KgdbError("subgraph has no question embedding: embed the question first")
    return build_tensors(
        tables,
        head=sg.head,
        relation=sg.relation,
        tail=sg.tail,
        entity_idx=sg.entity_idx,
        topic=sg.topic,
        is_cvt=sg.is_cvt,
        question_embedding=q,
    )


def batch_tensors(parts: list[SubgraphTensors]) -> SubgraphTensors:
    """One disjoint union of several questions' tensors, scored in a single forward pass."""
    if len(parts) == 1:
        return parts[0]
    node_off = np.cumsum([0] + [p.num_nodes for p in parts])
    triple_off = np.cumsum([0] + [p.num_triples for p in parts]).tolist()
    return SubgraphTensors(
        head=torch.cat([p.head + int(o) for p, o in zip(parts, node_off)]),
        relation=torch.cat([p.relation for p in parts]),
        tail=torch.cat([p.tail + int(o) for p, o in zip(parts, node_off)]),
        entity_idx=torch.cat([p.entity_idx for p in parts]),
        topic_mask=torch.cat([p.topic_mask for p in parts]),
        cvt_mask=torch.cat([p.cvt_mask for p in parts]),
        question=torch.cat([p.question for p in parts]),
        node_batch=torch.cat([torch.full_like(p.node_batch, b) for b, p in enumerate(parts)]),
        tables=parts[0].tables,
        triple_offsets=triple_off,
    )
