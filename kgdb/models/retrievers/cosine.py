"""Cosine baseline (SubgraphRAG Table 1): question vs triple text embedding, no training.

The triple embedding is composed from the stored tables, normalise(z_h + z_r + z_t), rather than
encoding the text "h r t" at query time: the tables are already in Neo4j, so scoring needs no
encoder pass per triple and runs in well under a millisecond. Unnamed CVT nodes contribute
nothing (their table rows are zeros), so a triple through a CVT is judged by its named end and
its relation. This differs from the paper, which encodes each triple's text with the encoder.
"""

from __future__ import annotations

import torch
from torch import Tensor

from kgdb.models.base import Retriever, SubgraphTensors


class CosineRetriever(Retriever):
    name = "cosine"
    trainable = False
    description = "question vs normalise(z_h + z_r + z_t) from the stored tables; no training"

    def forward(self, x: SubgraphTensors) -> Tensor:
        z = x.entity_embedding()
        triple = z.index_select(0, x.head) + x.relation_embedding() + z.index_select(0, x.tail)
        triple = torch.nn.functional.normalize(triple, dim=1)
        if x.num_questions == 1:
            return triple @ x.question[0]
        return (triple * x.question.index_select(0, x.triple_question())).sum(dim=1)
