"""The seam: the one place where the database side (`kgdb.cypher`, numpy) meets the torch side
(`kgdb.models`, `kgdb.training`). Everything above it (QA, CLI, Python API) talks to retrieval
through here; nothing below it imports it (import-linter contract).

- `retrieve`: `RetrievePipeline`, a registered tensor retriever as a `QuestionRetriever`.
- `splits`: `prepare_split`, the labelled subgraphs of a question split, cached on disk.
- `train`: `train_retriever` (any registered retriever).
- `trainables`, `trainable_kinds`: the registry of trainable kinds behind `kgdb train KIND` and `Kgdb.train`.

RRP (relation paths, planners, grounding, path ranker, structural reasoner) lives in `kgdb.rrp`, which sits
above this seam and plugs into it through the registries, as a third-party method would.
- `model_choice`: which checkpoint serves a retriever on this graph (the answering policy's model half).
- `vectors`: `EntityVectors`, the entity rows a use touches, missing vectors filled on use.
"""

# Names are imported from their module on first use (PEP 562), not here: `train` imports torch, and
# every module costs start-up time a cold `kgdb ask` with the numpy cosine path does not need.
_MODULE_OF = {
    **dict.fromkeys(("STAGES", "QuestionInput", "RetrievePipeline"), "retrieve"),
    **dict.fromkeys(("EntityVectors", "entity_vectors"), "vectors"),
    "prepare_split": "splits",
    **dict.fromkeys(("SplitReport", "train_retriever"), "train"),
}


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_MODULE_OF])


__all__ = [
    "STAGES",
    "EntityVectors",
    "QuestionInput",
    "RetrievePipeline",
    "SplitReport",
    "entity_vectors",
    "prepare_split",
    "train_retriever",
]
