"""Training models on tensors prepared by the seam (torch, never the database).

`fit`: the one loop every trainable kind shares (epochs, early stopping, resume, seeding, DDP,
progress `events`); each kind supplies a `FitTask` with its loss and validation: `trainer` (any
registered retriever), `planner`, `path_ranker` and `structural` (RRP's models). `distributed`: the
DDP workers; `evaluation`: retrieval recall@K through a pipeline object.
"""
