"""What a relation-path run writes back: the triples of its answer paths, each with the best score of a path
through it, shaped as the `Subgraph` write-back takes."""

from __future__ import annotations

import numpy as np

from kgdb.rrp.answering import GroundedPath
from kgdb.subgraph import Subgraph


def best_triples(candidates: list[GroundedPath]) -> list[tuple[float, tuple]]:
    """Every triple of the candidates with the best score of a path through it, best first (then by elementId)."""
    triples: dict[str, tuple[float, tuple]] = {}  # elementId -> (best path score, triple)
    for c in candidates:
        for triple in c.triples:
            if triple[0] not in triples or triples[triple[0]][0] < c.path.score:
                triples[triple[0]] = (c.path.score, triple)
    return sorted(triples.values(), key=lambda st: (-st[0], st[1][0]))


def as_subgraph(question: str, qid: str | None, topics: list[str], triples: list[tuple]) -> Subgraph:
    """The grounded triples as a `Subgraph`, the shape write-back takes."""
    ids = list(dict.fromkeys([*topics, *(x for _, h, _, t in triples for x in (h, t))]))
    pos = {e: i for i, e in enumerate(ids)}
    n = len(ids)
    return Subgraph(
        entity_ids=ids,
        entity_names=ids,
        entity_idx=np.zeros(n, np.int64),
        is_cvt=np.zeros(n, bool),
        head=np.array([pos[h] for _, h, _, _ in triples], np.int64),
        relation=np.zeros(len(triples), np.int64),
        tail=np.array([pos[t] for _, _, _, t in triples], np.int64),
        relation_names=[r for _, _, r, _ in triples],
        edge_ids=[e for e, _, _, _ in triples],
        topic=np.array([pos[t] for t in topics], np.int64),
        question=question,
        qid=qid,
    )
