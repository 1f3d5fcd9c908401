"""Relation paths: a planner (untrained cosine beam, or RRP's trained planner) proposes relation
paths, Cypher grounds them hop by hop, and `RelationPathRetriever` returns scored paths, triples
and entities."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.cypher.linking import question_topics
from kgdb.cypher.tables import graph_fingerprint
from kgdb.cypher.writeback import write_scores
from kgdb.embeddings import get_embedder
from kgdb.errors import InputError
from kgdb.models.checkpoints import Checkpoint, check_compatible, checkpoint_for_graph, find_checkpoint
from kgdb.protocol import Retrieval, ScoredTriple
from kgdb.subgraph import Subgraph
from kgdb.pipeline.retrieve import _ms


@dataclass(frozen=True)
class PlannedPath:
    relations: tuple[str, ...]
    score: float
    directions: tuple[int, ...] = ()  # +1 / -1 per relation; empty = either direction


def _walk(anchor: str, triples) -> tuple[list[str], list[int]]:
    """Entity sequence and step directions of a grounded path (triples are (eid, head, rel, tail))."""
    nodes, dirs = [anchor], []
    for _, head, _, tail in triples:
        forward = head == nodes[-1]
        nodes.append(tail if forward else head)
        dirs.append(1 if forward else -1)
    return nodes, dirs


class CosinePathPlanner:
    """Beam search over relation sequences leaving the topic entities, scored by the cosine of the
    question (topic names removed) and the relation-path text. Untrained: the baseline a trained
    planner (RRP) replaces through the same `plan()` call."""

    name = "cosine"

    def __init__(self, embedder, *, max_hops: int = 2, beam: int = 5, ground_cap: int = 200):
        self.embedder, self.max_hops, self.beam, self.ground_cap = embedder, max_hops, beam, ground_cap

    def plan(self, graph: Graph, question: str, topics: list[str], topic_names: list[str]) -> list[PlannedPath]:
        from kgdb.cypher.paths import ground_relation_path, relations_around
        from kgdb.embeddings import relation_text
        from kgdb.cypher.linking import strip_mentions

        q = self.embedder.encode([strip_mentions(question, topic_names)])[0]
        frontier: list[tuple[tuple[str, ...], list[str]]] = [((), list(topics))]
        kept: list[PlannedPath] = []
        for _ in range(self.max_hops):
            steps = [(rels + (rel,)) for rels, ends in frontier for rel in sorted({r for r, _ in relations_around(graph, ends)})]
            steps = list(dict.fromkeys(steps))
            if not steps:
                break
            sims = self.embedder.encode([" ; ".join(relation_text(r) for r in rels) for rels in steps]) @ q
            order = np.argsort(-sims, kind="stable")[: self.beam]
            kept += [PlannedPath(steps[i], float(sims[i])) for i in order]
            frontier = []
            for i in order:
                ends = {_walk(a, path)[0][-1] for a in topics for path in ground_relation_path(graph, a, list(steps[i]), cap=self.ground_cap)}
                frontier.append((steps[i], sorted(ends)))
        return sorted(kept, key=lambda p: (-p.score, len(p.relations), p.relations))[: self.beam]


class RelationPathRetriever:
    """A `QuestionRetriever` that plans relation paths, grounds each in Cypher hop by hop
    (`ground_step.cypher`: typed relationships, both directions, parallel edges kept, a bounded
    frontier) and returns the reasoning paths, their triples and the entities they reach.

    The planner is any object with `plan(graph, question, topics, topic_names) -> [PlannedPath]`;
    the default is the untrained `CosinePathPlanner`.
    """

    name = "relation-paths"

    def __init__(
        self, graph: Graph, settings: Settings, *, planner=None, k: int = 100, write: bool = True, ground_cap: int = 200, walks: bool = False
    ):
        from kgdb.cypher.tables import graph_fingerprint as fingerprint_of

        self.graph, self.settings, self.k, self.write, self.ground_cap = graph, settings, k, write, ground_cap
        self.walks = walks  # ground as walks (entities may repeat), the planner's label semantics
        _, info = fingerprint_of(graph)
        self.embedding_model = info.get("model") or settings.embedding_model
        self.embedder = get_embedder(self.embedding_model, settings.device, settings.embedding_batch_size)
        self.planner = planner or CosinePathPlanner(self.embedder)
        self.notes: list[str] = []

    def describe(self) -> dict:
        ckpt = getattr(self.planner, "checkpoint", None)
        return {
            "retriever": self.name,
            "planner": getattr(self.planner, "name", type(self.planner).__name__),
            "checkpoint": ckpt.name if ckpt else None,
            "planner_decoding": ("constrained" if self.planner.constrained else "free") if hasattr(self.planner, "constrained") else None,
            "grounding": "walks" if self.walks else "simple paths",
            "k": self.k,
            "notes": list(self.notes),
        }

    def retrieve(
        self, question: str, topics: list[str] | None = None, *, qid: str | None = None, q_emb: np.ndarray | None = None
    ) -> Retrieval:
        from kgdb.cypher.paths import UnknownRelationError, entity_names, ground_relation_path
        from kgdb.protocol import ScoredEntity, ScoredPath

        if not question or not question.strip():
            raise InputError("the question is empty", path="QUESTION")
        timings: dict[str, float] = {}
        t = time.perf_counter()
        q_emb = self.embedder.encode([question])[0] if q_emb is None else q_emb
        found = question_topics(self.graph, question, q_emb, topics)
        names = {i: n for i, (n, _) in entity_names(self.graph, found.ids).items()}
        timings["link"] = _ms(t)
        t = time.perf_counter()
        plans = self.planner.plan(self.graph, question, found.ids, [names.get(i, i) for i in found.ids])
        timings["plan"] = _ms(t)
        t = time.perf_counter()
        paths: list[ScoredPath] = []
        triples: dict[str, tuple[float, tuple]] = {}  # elementId -> (best path score, triple)
        notes: list[str] = []
        for plan in plans:
            for anchor in found.ids:
                try:
                    grounding = ground_relation_path(
                        self.graph, anchor, list(plan.relations), cap=self.ground_cap, directions=list(plan.directions) or None,
                        walks=self.walks,
                    )
                except UnknownRelationError as exc:
                    notes.append(f"planned path skipped: {exc}")
                    break
                for grounded in grounding:
                    nodes, dirs = _walk(anchor, grounded)
                    paths.append(ScoredPath(plan.score, tuple(nodes), plan.relations, tuple(dirs), source=getattr(self.planner, "name", "")))
                    for triple in grounded:
                        if triple[0] not in triples or triples[triple[0]][0] < plan.score:
                            triples[triple[0]] = (plan.score, triple)
        timings["ground"] = _ms(t)
        info = entity_names(self.graph, [e for p in paths for e in p.entities] + found.ids)
        names = {i: n for i, (n, _) in info.items()}
        cvt = {i for i, (_, is_cvt) in info.items() if is_cvt}
        paths = [ScoredPath(p.score, p.entities, p.relations, p.directions, tuple(names.get(e, e) for e in p.entities), p.source) for p in paths]
        paths.sort(key=lambda p: (-p.score, len(p.relations), p.entities))
        ordered = sorted(triples.values(), key=lambda st: (-st[0], st[1][0]))[: self.k]
        top = [
            ScoredTriple(rank, names.get(h, h), r, names.get(tl, tl), score, h, tl, -1)
            for rank, (score, (_, h, r, tl)) in enumerate(ordered, start=1)
        ]
        best: dict[str, float] = {}
        for p in paths:
            if p.answer not in found.ids and p.answer not in cvt:
                best[p.answer] = max(best.get(p.answer, -1.0), p.score)
        entities = [ScoredEntity(e, names.get(e, e), sc) for e, sc in sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))]
        run = None
        t = time.perf_counter()
        if self.write and ordered:
            run = write_scores(self.graph, _as_subgraph(question, qid, found.ids, [st[1] for st in ordered]),
                               np.array([st[0] for st in ordered]), self.name, self.k)
        timings["write"] = _ms(t)
        return Retrieval(
            question=question, qid=qid, retriever=self.name, k=self.k, topics=found.ids, triples=top, paths=paths,
            entities=entities, run=run, linked=found.linked, names=names, cvt=cvt, timings=timings,
            notes=[n for n in [found.note(), *dict.fromkeys(notes)] if n], missing_topics=list(found.missing),
        )


def _as_subgraph(question: str, qid: str | None, topics: list[str], triples: list[tuple]) -> Subgraph:
    """The grounded triples as a `Subgraph`, the shape write-back takes."""
    ids = list(dict.fromkeys([*topics, *(x for _, h, _, t in triples for x in (h, t))]))
    pos = {e: i for i, e in enumerate(ids)}
    n = len(ids)
    return Subgraph(
        entity_ids=ids, entity_names=ids, entity_idx=np.zeros(n, np.int64), is_cvt=np.zeros(n, bool),
        head=np.array([pos[h] for _, h, _, _ in triples], np.int64), relation=np.zeros(len(triples), np.int64),
        tail=np.array([pos[t] for _, _, _, t in triples], np.int64), relation_names=[r for _, _, r, _ in triples],
        edge_ids=[e for e, _, _, _ in triples], topic=np.array([pos[t] for t in topics], np.int64), question=question, qid=qid,
    )


PLANNER = "rrp-planner"


class TrainedPathPlanner:
    """`plan()` with a trained `kgdb.models.planner.PathPlanner`: beam search over (relation,
    direction) steps given the question (topic names removed); scores are path probabilities."""

    name = PLANNER

    def __init__(
        self, model, relation_names: list[str], embedder, *, beam: int = 3, checkpoint: Checkpoint | None = None,
        constrained: bool = True, frontier_cap: int = 200,
    ):
        self.model, self.relation_names, self.embedder, self.beam = model.eval(), relation_names, embedder, beam
        self.checkpoint, self.constrained, self.frontier_cap = checkpoint, constrained, frontier_cap
        self.relation_index = {r: i for i, r in enumerate(relation_names)}

    def _allowed(self, graph: Graph, topics: list[str]):
        """Graph-constrained decoding: after a prefix, only the (relation, direction) steps that leave
        the entities the prefix reaches (one `relations_around` and one `relation_step` per prefix)."""
        from kgdb.cypher.paths import relation_step, relations_around
        from kgdb.models.planner import step_of, token_of

        reached: dict[tuple[int, ...], list[str]] = {(): list(topics)}

        def ends_of(prefix: tuple[int, ...]) -> list[str]:
            if prefix not in reached:
                before = ends_of(prefix[:-1])
                r, d = step_of(prefix[-1])
                reached[prefix] = relation_step(graph, before, self.relation_names[r], d, cap=self.frontier_cap) if before else []
            return reached[prefix]

        def allowed(prefix: tuple[int, ...]) -> list[int]:
            ends = ends_of(prefix)
            if not ends:
                return []
            return [token_of(self.relation_index[r], d) for r, d in relations_around(graph, ends) if r in self.relation_index]

        return allowed

    def plan(self, graph: Graph, question: str, topics: list[str], topic_names: list[str]) -> list[PlannedPath]:
        from kgdb.cypher.linking import strip_mentions
        from kgdb.models.planner import step_of, text_features

        text = strip_mentions(question, topic_names)
        q = torch.from_numpy(self.embedder.encode([text])[0])
        words = torch.tensor(text_features(text, self.model.cfg.buckets))
        out = []
        allowed = self._allowed(graph, topics) if self.constrained else None
        for tokens, logp in self.model.beam_search(q, words, self.beam, allowed):
            steps = [step_of(t) for t in tokens]
            out.append(PlannedPath(tuple(self.relation_names[r] for r, _ in steps), float(np.exp(logp)), tuple(d for _, d in steps)))
        return out


def load_planner(graph: Graph, settings: Settings, checkpoint: str | None = None, *, beam: int = 3, constrained: bool = True) -> TrainedPathPlanner:
    """The named planner checkpoint, else the newest trained on this graph (`NoCheckpointError`)."""
    from safetensors.torch import load_file

    from kgdb.cypher.tables import graph_fingerprint as fingerprint_of
    from kgdb.models.checkpoints import WEIGHTS
    from kgdb.models.planner import PathPlanner, PlannerConfig

    fingerprint, info = fingerprint_of(graph)
    ckpt = find_checkpoint(checkpoint, settings.checkpoints_dir) if checkpoint else checkpoint_for_graph(settings.checkpoints_dir, PLANNER, fingerprint)
    cfg = ckpt.config
    if cfg.get("retriever") != PLANNER:
        raise InputError(f"checkpoint {ckpt.name} holds a {cfg.get('retriever')} model, not a relation-path planner", path="--checkpoint")
    check_compatible(ckpt, info.get("model") or settings.embedding_model, int(cfg.get("embedding_dim") or 0))
    state = load_file(str(ckpt.path / WEIGHTS), device="cpu")
    model = PathPlanner(PlannerConfig(**cfg["model"]), state["relation_emb"])
    model.load_state_dict(state)
    embedder = get_embedder(cfg.get("embedding_model") or settings.embedding_model, settings.device, settings.embedding_batch_size)
    return TrainedPathPlanner(model, list(cfg["relation_names"]), embedder, beam=beam, checkpoint=ckpt, constrained=constrained)


def relation_path_retriever(
    graph: Graph, settings: Settings, *, checkpoint: str | None = None, k: int = 100, write: bool = True, beam: int = 3,
    ground_cap: int = 200, constrained: bool = True, walks: bool = True,
) -> "RelationPathRetriever":
    """`RelationPathRetriever` with the trained planner for this graph (`NoCheckpointError` when none);
    `constrained`: decode only relation steps that exist from the entities reached so far; `walks`:
    ground as walks (entities may repeat), as the planner's labels are computed."""
    planner = load_planner(graph, settings, checkpoint, beam=beam, constrained=constrained)
    retriever = RelationPathRetriever(graph, settings, planner=planner, k=k, write=write, ground_cap=ground_cap, walks=walks)
    fingerprint = graph_fingerprint(graph)[0]
    trained_on = planner.checkpoint.config.get("graph_fingerprint") if planner.checkpoint else None
    if trained_on and trained_on != fingerprint:
        retriever.notes.append(f"planner {planner.checkpoint.name} was trained on another graph ({trained_on[:12]}), not this one ({fingerprint[:12]})")
    return retriever
