"""Relation paths: a planner (`kgdb.pipeline.planners`, or the path ranker) proposes relation paths,
Cypher grounds them hop by hop, RRP's structural reasoner and rethinking rescore them, and
`RelationPathRetriever` returns scored paths, triples and entities."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.cypher.linking import question_topics
from kgdb.pipeline.vectors import vectors_on_demand
from kgdb.cypher.tables import graph_fingerprint
from kgdb.cypher.writeback import write_scores
from kgdb.embeddings import get_embedder
from kgdb.errors import InputError
from kgdb.pipeline.answer_closeness import weigh_by_answer_closeness
from kgdb.pipeline.planners import CosinePathPlanner, PlannedPath, encode_question, load_planner, walk
from kgdb.protocol import Retrieval, ScoredPath, ScoredTriple, relation_path_text
from kgdb.subgraph import Subgraph
from kgdb.pipeline.retrieve import _ms


class RelationPathRetriever:
    """A `QuestionRetriever` that plans relation paths, grounds each in Cypher hop by hop
    (`ground_step.cypher`: typed relationships, both directions, parallel edges kept, a bounded
    frontier) and returns the reasoning paths, their triples and the entities they reach.

    The planner is any object with `plan(graph, question, topics, topic_names) -> [PlannedPath]`;
    the default is the untrained `CosinePathPlanner`.
    """

    name = "relation-paths"

    def __init__(
        self, graph: Graph, settings: Settings, *, planner=None, k: int = 100, write: bool = True, ground_cap: int = 200, walks: bool = False,
        structural=None, mode: str = "rethink", lambda1: float = 0.5, theta: float = 0.0, closeness_weight: float = 0.0,
    ):
        from kgdb.cypher.tables import graph_fingerprint as fingerprint_of

        if mode not in MODES:
            raise InputError(f"{mode!r} is not one of {', '.join(MODES)}", path="--rrp-mode")
        self.graph, self.settings, self.k, self.write, self.ground_cap = graph, settings, k, write, ground_cap
        # RRP's structural reasoner (`kgdb.pipeline.structural.StructuralRunner`) and rethinking (λ1, θ)
        self.structural, self.mode, self.lambda1, self.theta = structural, (mode if structural is not None else "planner"), lambda1, theta
        self.walks = walks  # ground as walks (entities may repeat), the planner's label semantics
        self.closeness_weight = closeness_weight  # `kgdb.pipeline.answer_closeness`; 0: the planner's scores as they are
        _, info = fingerprint_of(graph)
        self.embedding_model = info.get("model") or settings.embedding_model
        self.embedder = get_embedder(self.embedding_model, settings.device, settings.embedding_batch_size)
        self.planner = planner or CosinePathPlanner(self.embedder)
        self.notes: list[str] = []
        self._entity_vectors = vectors_on_demand(graph, settings, self.embedder)  # linking on a lazily embedded graph

    def describe(self) -> dict:
        ckpt = getattr(self.planner, "checkpoint", None)
        return {
            "retriever": self.name,
            "planner": getattr(self.planner, "name", type(self.planner).__name__),
            # the LLM planner's endpoint and prompt; the path ranker's enumeration bounds
            "planner_settings": self.planner.describe() if hasattr(self.planner, "describe") else None,
            "checkpoint": ckpt.name if ckpt else None,
            "planner_decoding": ("constrained" if self.planner.constrained else "free") if hasattr(self.planner, "constrained") else None,
            "beam": getattr(self.planner, "beam", None),
            "grounding": "walks" if self.walks else "simple paths",
            "structural": self.structural.checkpoint.name if getattr(self.structural, "checkpoint", None) else None,
            "rrp_mode": self.mode,
            "rethinking": {"lambda1": self.lambda1, "lambda2": 1.0 - self.lambda1, "theta": self.theta} if self.mode != "planner" else None,
            "answer_closeness_weight": self.closeness_weight,
            "k": self.k,
            "notes": list(self.notes),
        }

    def gather(self, question: str, topics: list[str] | None = None, q_emb: np.ndarray | None = None) -> "Gathered":
        """Link, plan, ground, and (with a structural reasoner) reason over the grounded triples and
        trace its paths back: every candidate path of both modules with its S1 and S2, unfiltered."""
        from kgdb.cypher.paths import UnknownRelationError, entity_names, ground_relation_paths, why_empty

        if not question or not question.strip():
            raise InputError("the question is empty", path="QUESTION")
        timings: dict[str, float] = {}
        t = time.perf_counter()
        if q_emb is None and not topics:  # only linking from the text reads the whole question's vector
            q_emb = self.embedder.encode([question])[0]
        found = question_topics(self.graph, question, q_emb, topics, entity_vectors=self._entity_vectors, encode=self.embedder.encode)
        names = {e.id: e.name for e in found.linked if e.id in found.ids}  # linking returned their names
        if len(names) < len(found.ids):
            names = {i: e.name for i, e in entity_names(self.graph, found.ids).items()}
        timings["link"] = _ms(t)
        t = time.perf_counter()
        if hasattr(self.planner, "choose_topic"):  # the ranker: linked candidates compete on answerability too (plan time)
            chosen = self.planner.choose_topic(self.graph, question, found)
            if chosen is not found:
                found, names = chosen, {e.id: e.name for e in chosen.linked if e.id in chosen.ids}
        topic_names = [names.get(i, i) for i in found.ids]
        notes: list[str] = []
        usage, composed = None, None
        if hasattr(self.planner, "plan_noted"):  # the LLM planner: what it dropped or fell back on, and its tokens
            from kgdb.cypher.linking import strip_mentions

            text, text_emb = strip_mentions(question, topic_names), None  # the structural reasoner learnt on this text
            plans, plan_notes, usage = self.planner.plan_noted(self.graph, question, found.ids, topic_names)
            notes += plan_notes
        elif hasattr(self.planner, "plan_encoded"):
            text, text_emb = self.planner.encode(question, topic_names)
            plans = self.planner.plan_encoded(self.graph, text, text_emb, found.ids)
            if hasattr(self.planner, "compose"):  # the ranker: a compositional question's second reading
                plans, composed = self.planner.compose(self.graph, question, found.ids, topic_names, plans)
                notes += [composed] if composed else []
        else:
            text, text_emb = question, None
            plans = self.planner.plan(self.graph, question, found.ids, topic_names)
        timings["plan"] = _ms(t)
        t = time.perf_counter()
        grounded: list[tuple[PlannedPath, str, list[tuple]]] = []
        jobs = [(plan, anchor) for plan in plans for anchor in found.ids]
        groundings = ground_relation_paths(
            self.graph, [(anchor, list(plan.relations), list(plan.directions) or None) for plan, anchor in jobs], cap=self.ground_cap, walks=self.walks,
            step_scan=self.settings.rrp_step_scan,
        )
        for (plan, anchor), grounding in zip(jobs, groundings):
            grounded += [(plan, anchor, triples) for triples in grounding]
        reached = {plan for plan, _, _ in grounded}
        if plans and (top := max(plans, key=lambda p: p.score)) not in reached and top.score > max((p.score for p in reached), default=-1.0):
            # say why an answer may not fit the question: its best reading found nothing in this graph
            notes.append(f"the best-scored relation path, {relation_path_text(top.relations, top.directions)} ({top.score:.3g}), "
                         f"reaches nothing from {', '.join(topic_names)}; "
                         + ("the answers follow the best one that does" if reached else "no planned path reaches anything"))
        # A graph-constrained planner only names relations that leave the topics' frontier, so a
        # plan that grounds to nothing cannot name an unknown relation: no round trip to ask why.
        unexplained = [] if getattr(self.planner, "constrained", False) else [p for p in dict.fromkeys(plan for plan, _ in jobs) if p not in reached]
        for plan in unexplained:
            exc = why_empty(self.graph, found.ids[0], list(plan.relations))
            if isinstance(exc, UnknownRelationError):
                notes.append(f"planned path skipped: {exc}")
            elif exc is not None:
                raise exc
        timings["ground"] = _ms(t)
        ids = [e for _, anchor, triples in grounded for e in walk(anchor, triples)[0]] + found.ids
        info = entity_names(self.graph, ids)
        names = {i: e.name for i, e in info.items()}
        cvt = {i for i, e in info.items() if e.cvt}
        source = getattr(self.planner, "name", "")
        planned = [_Candidate(_path(plan.score, anchor, triples, source), list(triples), plan.score) for plan, anchor, triples in grounded]
        closeness = self._closeness(question, text_emb, topic_names, {i: e.idx for i, e in info.items()})
        # Not for a composed reading: the whole question's words describe its middle entity too ("where was
        # step brothers' *director* born?" would favour people over places).
        if self.closeness_weight and not composed:  # rescoring the grounded paths: timed with rethinking, the other rescoring
            t = time.perf_counter()
            excluded = set(found.ids) | cvt
            weighed = weigh_by_answer_closeness(planned, closeness, self.closeness_weight, excluded)
            timings["rethink"] = _ms(t)
            first, now = (_first_path(p, excluded) for p in (planned, weighed))
            if now != first:  # say why the answers do not follow the ranker's first path
                notes.append(f"what the paths reach put {relation_path_text(*now)} first, above the planner's first, "
                             f"{relation_path_text(*first)}: its answers fit the question's words better "
                             f"(answering.closeness_weight {self.closeness_weight:g})")
            planned = weighed
        structural: list[_Candidate] = []
        s2: dict[str, float] = {}
        if self.structural is not None and self.mode != "planner":
            t = time.perf_counter()
            structural, s2 = self._structural(text, text_emb, found.ids, planned, plans, cvt)
            timings["structural"] = _ms(t)
        return Gathered(found, names, cvt, planned, structural, s2, timings, notes, closeness, usage)

    def retrieve(
        self, question: str, topics: list[str] | None = None, *, qid: str | None = None, q_emb: np.ndarray | None = None
    ) -> Retrieval:
        from kgdb.protocol import ScoredEntity

        g = self.gather(question, topics, q_emb)
        found, names, cvt, timings, notes = g.found, g.names, g.cvt, g.timings, g.notes
        candidates = g.planned
        if self.mode != "planner":
            t = time.perf_counter()
            candidates = select(self.mode, g.planned, g.structural, g.s2, found.ids, cvt, self.lambda1, self.theta)
            for c in candidates:  # `mode:module`: the answer-bearing paths the reasoner takes all of
                c.path = replace(c.path, source=f"{self.mode}:{c.path.source}")
            timings["rethink"] = timings.get("rethink", 0.0) + _ms(t)
        paths = [replace(c.path, names=tuple(names.get(e, e) for e in c.path.entities)) for c in candidates]
        best = best_per_answer(paths, set(found.ids) | cvt)
        close = g.closeness(tied_at_best(best))
        # ties: the answers tied at the best score closest to the question first, then by name (`PathReasoner` keeps this order)
        paths.sort(key=lambda p: (-p.score, -close.get(p.answer, 0.0), names.get(p.answer, p.answer), len(p.relations), p.entities))
        triples: dict[str, tuple[float, tuple]] = {}  # elementId -> (best path score, triple)
        for c in candidates:
            for triple in c.triples:
                if triple[0] not in triples or triples[triple[0]][0] < c.path.score:
                    triples[triple[0]] = (c.path.score, triple)
        ordered = sorted(triples.values(), key=lambda st: (-st[0], st[1][0]))[: self.k]
        top = [
            ScoredTriple(rank, names.get(h, h), r, names.get(tl, tl), score, h, tl, -1)
            for rank, (score, (_, h, r, tl)) in enumerate(ordered, start=1)
        ]
        entities = [ScoredEntity(e, names.get(e, e), sc) for e, sc in sorted(best.items(), key=lambda kv: (-kv[1], -close.get(kv[0], 0.0), names.get(kv[0], kv[0])))]
        run = None
        t = time.perf_counter()
        if self.write and ordered:
            run = write_scores(self.graph, _as_subgraph(question, qid, found.ids, [st[1] for st in ordered]),
                               np.array([st[0] for st in ordered]), self.name, self.k)
        timings["write"] = _ms(t)
        return Retrieval(
            question=question, qid=qid, retriever=self.name, k=self.k, topics=found.ids, triples=top, paths=paths,
            entities=entities, run=run, linked=found.linked, names=names, cvt=cvt, timings=timings,
            notes=[n for n in [found.note(), *dict.fromkeys(notes)] if n], missing_topics=list(found.missing), llm_usage=g.usage,
        )

    def _closeness(self, question: str, text_emb: np.ndarray | None, topic_names: list[str], rows: dict[str, int]) -> Callable[[list[str]], dict[str, float]]:
        """`Gathered.closeness` of one question: answer ids -> cosine of their name vectors (the ones
        linking reads; `rows`: id -> vector row) with the question read without the topic names.
        Every end of one relation path scores the same, and the words left in the question often say
        which end it asks for ("where did kevin love go to *college*": UCLA, not his high school;
        "judy garland *father*"). Asked only for the answers tied at the best score, fewer than two
        get none, so a lazily embedded graph encodes few names. Chosen on the WebQSP training and
        validation splits (docs/answering.md, "Answers tied on one path")."""
        memo: dict[str, float] = {}
        q = text_emb  # encoded on first need where the planner did not encode the question

        def closeness(ids: list[str]) -> dict[str, float]:
            nonlocal q
            if len(ids) < 2:
                return {}
            if new := [e for e in ids if e not in memo and rows.get(e, -1) >= 0]:
                if q is None:
                    q = encode_question(self.embedder, question, topic_names)[1]
                vectors = self._entity_vectors([rows[e] for e in new])
                matrix = np.stack([vectors[rows[e]] for e in new])
                cos = matrix @ q / np.maximum(np.linalg.norm(matrix, axis=1) * np.linalg.norm(q), 1e-12)
                memo.update(zip(new, cos.tolist()))
            return {e: memo[e] for e in ids if e in memo}

        return closeness

    def _structural(self, text: str, text_emb, topics: list[str], planned: list["_Candidate"], plans: list[PlannedPath], cvt: set[str]):
        """RRP §IV-B over the grounded triples: S2 per entity (P^n over its largest non-topic P^n)
        and the structural paths traced back from P^n, each with S1 = the planner's P(relation path | q)."""
        by_key: dict[tuple, tuple] = {(tr[1], tr[2], tr[3]): tr for c in planned for tr in c.triples}
        if text_emb is None:
            text_emb = self.embedder.encode([text])[0]
        out = self.structural.run(text, text_emb, topics, list({tr[0]: tr for c in planned for tr in c.triples}.values()), cvt)
        s2 = out.probability
        structural: list[_Candidate] = []
        for nodes, rels, dirs in out.paths:
            steps = [(a, r, b) if d > 0 else (b, r, a) for a, r, b, d in zip(nodes, rels, nodes[1:], dirs)]
            if all(k in by_key for k in steps):
                path = ScoredPath(s2.get(nodes[-1], 0.0), tuple(nodes), tuple(rels), tuple(dirs), source=STRUCTURAL_SOURCE)
                structural.append(_Candidate(path, [by_key[k] for k in steps], 0.0))
        plan_score = {(p.relations, p.directions): p.score for p in plans}
        missing = list(dict.fromkeys((c.path.relations, c.path.directions) for c in structural if (c.path.relations, c.path.directions) not in plan_score))
        if missing and hasattr(self.planner, "path_probability"):
            plan_score.update(zip(missing, self.planner.path_probability(text, text_emb, missing)))
        for c in structural:
            c.s1 = plan_score.get((c.path.relations, c.path.directions), 0.0)
        return structural, s2


STRUCTURAL_SOURCE = "rrp-structural"
MODES = ("planner", "structural", "union", "rethink")


@dataclass
class _Candidate:
    path: ScoredPath
    triples: list[tuple]  # (elementId, head, relation, tail) per step
    s1: float  # the planner's P(relation path | q)


@dataclass
class Gathered:
    found: object  # kgdb.cypher.linking topics
    names: dict[str, str]
    cvt: set[str]
    planned: list[_Candidate]  # grounded planner paths, score = S1
    structural: list[_Candidate]  # traced back from P^n, score = S2
    s2: dict[str, float]  # entity id -> S2
    timings: dict[str, float]
    notes: list[str]
    closeness: Callable[[list[str]], dict[str, float]]  # answer ids -> closeness to the question (`RelationPathRetriever._closeness`)
    usage: dict | None = None  # the LLM planner's calls and tokens (None: no LLM planned)


def _first_path(planned: list["_Candidate"], excluded: set[str]) -> tuple | None:
    """(relations, directions) of the best-scored grounded path that reaches an answer (ties: the shorter, then the first)."""
    usable = [c for c in planned if c.path.answer not in excluded]
    best = max(usable, key=lambda c: (c.path.score, -len(c.path.relations)), default=None)
    return (best.path.relations, best.path.directions) if best else None


def select(mode: str, planned: list[_Candidate], structural: list[_Candidate], s2: dict[str, float], topics: list[str], cvt: set[str],
           lambda1: float, theta: float) -> list[_Candidate]:
    """The answer-bearing paths of a mode. `rethink` (RRP §IV-C, Eqs. 9-11): every path of both
    modules scored S = λ1·S1 + (1-λ1)·S2, kept when S > θ·max S (the best one always), best first,
    one per (entities, relations); θ is relative because S1 and S2 are probabilities whose scale
    varies by question (a one-answer and a fifty-answer question), where the paper's cosines do not. S1: the planner's P(relation path | q), S2: the structural reasoner's
    normalised P^n of the path's end entity: probabilities, where the paper's cosines of LLM and
    GNN vectors would need embeddings trained for it. The ablations: `structural` (its paths
    alone, S = S2 > θ) and `union` (both modules' answer paths unscored: the planner's best
    relation path and the structural paths with S2 > θ)."""
    if mode == "structural":
        return sorted([c for c in structural if c.path.score > theta] or structural[:1], key=lambda c: -c.path.score)
    if mode == "union":
        top = max((c.s1 for c in planned), default=0.0)
        return [c for c in planned if c.s1 == top] + ([c for c in structural if c.path.score > theta] or structural[:1])
    scored: dict[tuple, _Candidate] = {}
    for c in planned + structural:
        if c.path.answer in topics or c.path.answer in cvt:
            continue
        s = lambda1 * c.s1 + (1.0 - lambda1) * s2.get(c.path.answer, 0.0)
        key = (c.path.entities, c.path.relations)
        if key not in scored or scored[key].path.score < s:
            scored[key] = _Candidate(replace(c.path, score=s), c.triples, c.s1)
    ranked = sorted(scored.values(), key=lambda c: (-c.path.score, len(c.path.relations), c.path.entities))
    cut = theta * ranked[0].path.score if ranked else 0.0
    return [c for c in ranked if c.path.score > cut] or ranked[:1]


def best_per_answer(paths, excluded: set[str]) -> dict[str, float]:
    """Answer id -> the best score of the `paths` (ScoredPath) ending there, topics and CVT nodes (`excluded`) left out."""
    best: dict[str, float] = {}
    for p in paths:
        if p.answer not in excluded and p.score > best.get(p.answer, float("-inf")):
            best[p.answer] = p.score
    return best


def tied_at_best(best: dict[str, float]) -> list[str]:
    """The answer ids sharing the best score of `best` (answer id -> its best path score)."""
    top = max(best.values(), default=None)
    return sorted(e for e, score in best.items() if score == top)


def _path(score: float, anchor: str, triples, source: str) -> ScoredPath:
    nodes, dirs = walk(anchor, triples)
    return ScoredPath(score, tuple(nodes), tuple(r for _, _, r, _ in triples), tuple(dirs), source=source)


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


def relation_path_retriever(
    graph: Graph, settings: Settings, *, checkpoint: str | None = None, k: int = 100, write: bool = True, beam: int | None = None,
    ground_cap: int = 200, constrained: bool = True, walks: bool = True, structural: str | bool | None = None, mode: str | None = None,
    lambda1: float | None = None, theta: float | None = None, planner=None, closeness_weight: float | None = None,
) -> "RelationPathRetriever":
    """`RelationPathRetriever` with the trained planner for this graph (`NoCheckpointError` when none);
    `constrained`: decode only relation steps that exist from the entities reached so far; `walks`:
    ground as walks (entities may repeat), as the planner's labels are computed.

    `structural`: a structural-reasoner checkpoint name, None = the newest trained on this graph if
    any (else the planner alone), False = the planner alone. `mode` (planner, structural, union,
    rethink), λ1, θ and the planner's `beam` default to the values chosen on the val split and stored
    in that checkpoint (`kgdb train rrp`; the beam by a val sweep, else 3), else rethinking with 0.5 and 0.
    `planner`: a planner object used instead of the trained one (the LLM planner, `kgdb.qa.llm_planner`).
    `closeness_weight` (`kgdb.pipeline.answer_closeness`) defaults to `answering.closeness_weight`
    of the checkpoint that chose λ1 and θ (a ranker, else the structural one), else 0."""
    from kgdb.models.checkpoints import NoCheckpointError
    from kgdb.pipeline.structural import chosen_mode, load_structural

    runner = None
    if structural is not False:
        try:
            runner = load_structural(graph, settings, structural if isinstance(structural, str) else None)
        except NoCheckpointError:
            if structural:
                raise
    # the checkpoint that chose the answering settings: the structural one, or a ranker (below), which replaces them
    chose = runner.checkpoint.config if runner is not None and runner.checkpoint else {}
    from kgdb.pipeline.path_ranker import load_ranker, shipped_ranker  # a ranker replaces the beam planner (and its tuned settings)

    fallback = None
    if planner is not None:  # a planner given by the caller (`--planner llm`); rethinking as the structural checkpoint tuned it
        pass
    elif (planner := load_ranker(graph, settings, checkpoint, beam=beam)) is not None:
        chose = planner.checkpoint.config
    else:
        try:
            tuned_beam = int((chose.get("rethinking") or {}).get("beam", 3))
            planner = load_planner(graph, settings, checkpoint, beam=tuned_beam if beam is None else beam, constrained=constrained)
        except NoCheckpointError:  # nothing trained on this graph: the portable ranker shipped with kgdb, if it fits
            if checkpoint or (planner := shipped_ranker(graph, settings, beam=beam)) is None:
                raise
            chose = planner.checkpoint.config
            fallback = (f"no RRP planner or ranker in {settings.checkpoints_dir} was trained on this graph, so the portable rrp-ranker "
                        f"shipped with kgdb ranked the relation paths (trained on {planner.checkpoint.config.get('dataset', '?')}); "
                        "`kgdb train rrp-ranker` trains one for this graph")
    tuned = chose.get("rethinking") or {}
    if closeness_weight is None:
        closeness_weight = float((chose.get("answering") or {}).get("closeness_weight", 0.0))
    retriever = RelationPathRetriever(
        graph, settings, planner=planner, k=k, write=write, ground_cap=ground_cap, walks=walks, structural=runner, closeness_weight=closeness_weight,
        mode=chosen_mode(tuned) if mode is None else mode,
        lambda1=tuned.get("lambda1", 0.5) if lambda1 is None else lambda1, theta=tuned.get("theta", 0.0) if theta is None else theta,
    )
    if fallback:
        retriever.notes.append(fallback)
    fingerprint = graph_fingerprint(graph)[0]
    for part in (planner, runner):
        ckpt = getattr(part, "checkpoint", None)
        trained_on = ckpt.config.get("graph_fingerprint") if ckpt else None
        if trained_on and trained_on != fingerprint:
            retriever.notes.append(f"{ckpt.name} was trained on another graph ({trained_on[:12]}), not this one ({fingerprint[:12]})")
    return retriever
