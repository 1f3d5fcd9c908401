"""Featurisation: numpy `Subgraph` (from Neo4j) -> `SubgraphTensors` on the model's device."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import torch

from kgdb.data.cache import CachedQuestion
from kgdb.errors import KgdbError
from kgdb.models.base import SubgraphTensors, TensorTables


class SubgraphArrays(Protocol):
    """What `featurise` reads: a fetched `kgdb.subgraph.Subgraph` or a cached training item
    (`kgdb.data.cache.CachedQuestion`), which hold the same arrays."""

    @property
    def head(self) -> np.ndarray: ...

    @property
    def relation(self) -> np.ndarray: ...

    @property
    def tail(self) -> np.ndarray: ...

    @property
    def entity_idx(self) -> np.ndarray: ...

    @property
    def topic(self) -> np.ndarray: ...

    @property
    def is_cvt(self) -> np.ndarray: ...

    @property
    def question_embedding(self) -> np.ndarray | None: ...


# The arrays of `SubgraphArrays` that `build_tensors` takes as they are.
ARRAYS = ("head", "relation", "tail", "entity_idx", "topic", "is_cvt")


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
    features: dict[str, np.ndarray] | None = None,
) -> SubgraphTensors:
    """Tensors from raw arrays (the training cache stores exactly these arrays, and `features`:
    per-node features a retriever precomputed, see `Retriever.node_feature_key`)."""
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
        features={
            k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)).to(device)
            for k, v in (features or {}).items()
        },
    )


def featurise(
    sg: SubgraphArrays, tables: TensorTables, question_embedding: np.ndarray | None = None
) -> SubgraphTensors:
    """Tensors for one fetched subgraph (or a cached training item with the same array fields);
    the question embedding defaults to `sg.question_embedding`."""
    q = question_embedding if question_embedding is not None else sg.question_embedding
    if q is None:
        raise KgdbError("subgraph has no question embedding: embed the question first")
    arrays = {name: getattr(sg, name) for name in ARRAYS}
    features = sg.features if isinstance(sg, CachedQuestion) else None
    return build_tensors(tables, **arrays, question_embedding=q, features=features)


def batch_tensors(parts: list[SubgraphTensors]) -> SubgraphTensors:
    """One disjoint union of several questions' tensors (PyG `Batch`), scored in a single pass."""
    if len(parts) == 1:
        return parts[0]
    from torch_geometric.data import Batch, Data  # ~2 s to import: only batched scoring pays it

    data = [
        Data(
            edge_index=torch.stack([p.head, p.tail]),
            relation=p.relation,
            entity_idx=p.entity_idx,
            topic_mask=p.topic_mask,
            cvt_mask=p.cvt_mask,
            question=p.question,
            num_nodes=p.num_nodes,
        )
        for p in parts
    ]
    batch = Batch.from_data_list(data)  # shifts each part's node ids by the nodes before it
    shared = set.intersection(*(set(p.features) for p in parts))
    return SubgraphTensors(
        head=batch.edge_index[0],
        relation=batch.relation,
        tail=batch.edge_index[1],
        entity_idx=batch.entity_idx,
        topic_mask=batch.topic_mask,
        cvt_mask=batch.cvt_mask,
        question=batch.question,
        node_batch=batch.batch,
        tables=parts[0].tables,
        triple_offsets=batch._slice_dict["edge_index"].tolist(),
        node_offsets=batch.ptr.tolist(),
        features={k: torch.cat([p.features[k] for p in parts]) for k in sorted(shared)},
    )
