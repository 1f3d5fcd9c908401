"""The seam: the one place where the database side (`kgdb.cypher`, numpy) meets the torch side
(`kgdb.models`, `kgdb.training`). Everything above it (QA, CLI, Python API) talks to retrieval
through here; nothing below it imports it (import-linter contract).

- `retrieve`: `RetrievePipeline`, a registered tensor retriever as a `QuestionRetriever`.
- `splits`: `prepare_split`, the labelled subgraphs of a question split, cached on disk.
- `train`: `train_retriever` (any registered retriever) and `train_planner` (RRP's planner).
- `relation_paths`: planners, Cypher grounding and `RelationPathRetriever`.
"""

from kgdb.pipeline.relation_paths import (
    PLANNER,
    CosinePathPlanner,
    PlannedPath,
    RelationPathRetriever,
    TrainedPathPlanner,
    load_planner,
    relation_path_retriever,
)
from kgdb.pipeline.retrieve import STAGES, QuestionInput, RetrievePipeline, load_tensor_tables
from kgdb.pipeline.splits import prepare_split
from kgdb.pipeline.train import SplitReport, planner_examples, train_planner, train_retriever

__all__ = [
    "PLANNER",
    "STAGES",
    "CosinePathPlanner",
    "PlannedPath",
    "QuestionInput",
    "RelationPathRetriever",
    "RetrievePipeline",
    "SplitReport",
    "TrainedPathPlanner",
    "load_planner",
    "load_tensor_tables",
    "planner_examples",
    "prepare_split",
    "relation_path_retriever",
    "train_planner",
    "train_retriever",
]
