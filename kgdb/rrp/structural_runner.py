"""RRP's structural reasoner at answering time: loading its checkpoint and running it over the triples a
question's planned relation paths grounded to (`StructuralRunner`, used by `RelationPathRetriever`).
Training it and tuning rethinking live in `kgdb.rrp.structural`, which answers through the retriever."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.errors import KgdbError
from kgdb.models.checkpoints import Checkpoint
from kgdb.protocol import ScoredPath
from kgdb.rrp.answering import GroundedPath
from kgdb.rrp.plan import PathPlanner, Plan
from kgdb.rrp.planners import load_relation_model
from kgdb.scoring.path_tokens import text_features

STRUCTURAL = "rrp-structural"


@dataclass
class StructuralOutput:
    probability: dict[str, float]  # entity id -> P^n / max over non-topic entities
    paths: list[tuple[list[str], list[str], list[int]]]  # traced back: entity ids, relation names, directions


@dataclass
class _Local:
    """One question's triples as the reasoner reads them: entity ids and local head / relation / tail indices."""

    ids: list[str]
    head: np.ndarray
    relation: np.ndarray
    tail: np.ndarray
    topic: np.ndarray  # bool per entity


class StructuralRunner:
    """A trained structural reasoner over the triples of one question's grounded relation paths."""

    def __init__(self, model, relation_names: list[str], checkpoint: Checkpoint | None = None, top: int = 10):
        self.model, self.relation_names, self.checkpoint, self.top = model.eval(), relation_names, checkpoint, top
        self.relation_index = {r: i for i, r in enumerate(relation_names)}

    def run(
        self, text: str, q_emb: np.ndarray, topics: list[str], triples: list[tuple], skip: set[str]
    ) -> StructuralOutput:
        """`triples`: (element id, head id, relation, tail id); `skip`: entities never answers (CVT)."""
        import torch
        from torch_geometric.data import Batch

        from kgdb.rrp.models.structural import trace_paths
        from kgdb.rrp.training.structural import StructuralExample, collate, to_data

        local = self._local(topics, triples)
        if local is None:
            return StructuralOutput({}, [])
        ids, topic = local.ids, local.topic
        ex = StructuralExample(
            "",
            np.asarray(q_emb, np.float32),
            text_features(text, self.model.cfg.buckets),
            local.head,
            local.relation,
            local.tail,
            topic,
            np.zeros(len(ids), bool),
        )
        batch: Batch = collate([to_data(ex)])
        with torch.no_grad():
            prop = self.model(batch)
        p = prop.log_probs[-1].exp().numpy()
        eligible = np.array([not topic[i] and ids[i] not in skip for i in range(len(ids))])
        if not eligible.any():
            return StructuralOutput({}, [])
        top_p = float(p[eligible].max()) or 1.0
        prob = {ids[i]: float(p[i]) / top_p for i in np.flatnonzero(eligible)}
        ends = [int(i) for i in np.argsort(-np.where(eligible, p, -1.0), kind="stable")[: self.top] if eligible[i]]
        traced = trace_paths(
            prop, torch.from_numpy(local.head), torch.from_numpy(local.relation), torch.from_numpy(local.tail), ends
        )
        paths = [
            ([ids[n] for n in nodes], [self.relation_names[r] for r in rels], dirs)
            for nodes, rels, dirs in traced
            if rels and topic[nodes[0]]
        ]
        return StructuralOutput(prob, paths)

    def _local(self, topics: list[str], triples: list[tuple]) -> _Local | None:
        """The triples of relations the reasoner knows, indexed locally (topics first); None when none is left."""
        triples = [t for t in triples if t[2] in self.relation_index]
        ids = list(dict.fromkeys([*topics, *(x for _, h, _, t in triples for x in (h, t))]))
        if not triples or not ids:
            return None
        pos = {e: i for i, e in enumerate(ids)}
        return _Local(
            ids,
            np.array([pos[h] for _, h, _, _ in triples], np.int64),
            np.array([self.relation_index[r] for _, _, r, _ in triples], np.int64),
            np.array([pos[t] for _, _, _, t in triples], np.int64),
            np.isin(np.arange(len(ids)), [pos[t] for t in topics if t in pos]),
        )


def load_structural(graph: Graph, settings: Settings, checkpoint: str | None = None) -> StructuralRunner:
    """The named structural checkpoint, else the newest trained on this graph (`NoCheckpointError`)."""

    def build(cfg: dict, state: dict):
        # torch-geometric is imported only once a checkpoint was found (1.6 s of a cold `kgdb ask`)
        from kgdb.rrp.models.structural import StructuralConfig, StructuralReasoner

        return StructuralReasoner(StructuralConfig(**cfg), state["relation_emb"])

    model, ckpt = load_relation_model(graph, settings, checkpoint, STRUCTURAL, build, "--structural")
    return StructuralRunner(model, list(ckpt.config["relation_names"]), ckpt)


STRUCTURAL_SOURCE = "rrp-structural"


def structural_paths(
    runner: StructuralRunner | None,
    planner: PathPlanner,
    embedder,
    plan: Plan,
    planned: list[GroundedPath],
    cvt: set[str],
) -> tuple[list[GroundedPath], dict[str, float]]:
    """RRP §IV-B over the grounded triples: S2 per entity (P^n over its largest non-topic P^n)
    and the structural paths traced back from P^n, each with S1 = the planner's P(relation path | q)."""
    by_key: dict[tuple, tuple] = {(tr[1], tr[2], tr[3]): tr for c in planned for tr in c.triples}
    if runner is None:
        raise KgdbError("no structural reasoner to run")
    text_emb = plan.text_emb if plan.text_emb is not None else embedder.encode([plan.text])[0]
    out = runner.run(
        plan.text, text_emb, plan.topics.ids, list({tr[0]: tr for c in planned for tr in c.triples}.values()), cvt
    )
    structural: list[GroundedPath] = []
    for nodes, rels, dirs in out.paths:
        steps = [(a, r, b) if d > 0 else (b, r, a) for a, r, b, d in zip(nodes, rels, nodes[1:], dirs)]
        if all(k in by_key for k in steps):
            path = ScoredPath(
                out.probability.get(nodes[-1], 0.0),
                tuple(nodes),
                tuple(rels),
                tuple(dirs),
                source=STRUCTURAL_SOURCE,
            )
            structural.append(GroundedPath(path, [by_key[k] for k in steps], 0.0))
    plan_score = {(p.relations, p.directions): p.score for p in plan.paths}
    missing = list(
        dict.fromkeys(
            (c.path.relations, c.path.directions)
            for c in structural
            if (c.path.relations, c.path.directions) not in plan_score
        )
    )
    if missing:
        plan_score.update(zip(missing, planner.path_probability(replace(plan, text_emb=text_emb), missing)))
    for c in structural:
        c.s1 = plan_score.get((c.path.relations, c.path.directions), 0.0)
    return structural, out.probability
