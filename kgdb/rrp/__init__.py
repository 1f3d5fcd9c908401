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
