"""The fetched subgraph: what the database layer hands to retrievers, as numpy arrays.

Neither side depends on the other: `kgdb.cypher` fills a `Subgraph` from Neo4j (numpy only),
`kgdb.models` turns it into torch tensors and returns one score per triple.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Subgraph:
    """Triples around the topic entities of one question.

    Nodes are numbered locally 0..n-1; `entity_idx` maps them to the graph-wide dense `Entity.idx`
    (rows of the entity embedding table) and `relation` holds graph-wide `Relation.idx` values
    (rows of the relation embedding table). Triple i is (head[i], relation[i], tail[i]).
    """

    entity_ids: list[str]  # Entity.id per local node
    entity_names: list[str]  # Entity.name per local node
    entity_idx: np.ndarray  # int64 [n]
    is_cvt: np.ndarray  # bool [n]: unnamed compound-value nodes (no text embedding)
    head: np.ndarray  # int64 [m], local node index
    relation: np.ndarray  # int64 [m], graph-wide Relation.idx
    tail: np.ndarray  # int64 [m], local node index
    relation_names: list[str]  # relationship type per triple
    edge_ids: list[str]  # elementId of each relationship, used to write scores back
    topic: np.ndarray  # int64 [k], local indices of the topic entities
    question: str = ""
    qid: str | None = None
    question_embedding: np.ndarray | None = None  # float32 [d], unit norm
    meta: dict = field(default_factory=dict)  # timings, caps applied, etc.

    @property
    def num_nodes(self) -> int:
        return len(self.entity_ids)

    @property
    def num_triples(self) -> int:
        return int(self.head.shape[0])

    def triple(self, i: int) -> tuple[str, str, str]:
        """Readable (head name, relation, tail name) of triple i."""
        return (self.entity_names[self.head[i]], self.relation_names[i], self.entity_names[self.tail[i]])

    def topic_mask(self) -> np.ndarray:
        mask = np.zeros(self.num_nodes, dtype=bool)
        mask[self.topic] = True
        return mask
