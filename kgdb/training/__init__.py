"""Training and evaluating registered retrievers on cached, labelled subgraphs (torch, never the database).

`trainer`: the generic loop (any registered retriever, its own loss and label kind, per-epoch
state for `--resume`); `evaluation`: retrieval recall@K through a pipeline object.
"""
