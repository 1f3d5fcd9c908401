"""RRP (relation paths, a structural reasoner and rethinking) in one package, with kgdb's path ranker.

A question's relation paths are planned (`planners`: the cosine baseline and RRP's trained planner;
`path_ranker`: the ranker over every enumerated path; `llm_planner`: an LLM), grounded hop by hop in Cypher
(`kgdb.cypher.paths`, the database layer), rescored by the structural reasoner and rethinking
(`structural_runner`, `answering`, `closeness`), read from several topics at once (`joint_topics`) and
turned into scored paths, triples and entities by `retriever.RelationPathRetriever`; `reasoner` answers
from them without an LLM. `models` holds the networks, `training` their loops, `scoring` the numpy twin
the shipped ranker answers with (no torch at answer time); `kinds` registers what `kgdb train` trains.

The package sits above the QA layer and plugs into it through the registries' entry points, as a
third-party method would (import-linter contracts in pyproject.toml keep its layers).
"""

# Names are imported from their module on first use (PEP 562): a cold `kgdb ask` pays only for what it runs.
_MODULE_OF = {
    **dict.fromkeys(("PathPlanner", "Plan", "PlannedPath"), "plan"),
    **dict.fromkeys(("PLANNER", "CosinePathPlanner", "TrainedPathPlanner", "load_planner"), "planners"),
    **dict.fromkeys(("RelationPathRetriever", "relation_path_retriever"), "retriever"),
    **dict.fromkeys(("planner_examples", "train_planner"), "planner_training"),
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


__all__ = sorted(_MODULE_OF)
