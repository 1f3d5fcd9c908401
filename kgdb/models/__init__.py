"""Retrievers and their training/evaluation (torch), plus the reasoning helpers of `kgdb ask`.

Retrieval modules: `base` (Retriever interface, SubgraphTensors), `features`, `dde`, `subgraphrag`,
`cosine`, `checkpoints`, `datasets` (question files + fixed splits), `cache` (labelled subgraphs on
disk), `training`, `metrics`, `evaluation`, `db` (the only database calls). Nothing is imported
here, so `kgdb.models.datasets` and the ask helpers load without torch.
"""
