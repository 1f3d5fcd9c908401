"""Relation paths: a planner (`kgdb.rrp.plan.PathPlanner`: the cosine baseline, RRP's trained
planner, the path ranker or an LLM) proposes relation paths, Cypher grounds them hop by hop, RRP's
structural reasoner and rethinking rescore them (`kgdb.rrp.answering`), and
`RelationPathRetriever` returns scored paths, triples and entities."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable, cast

import numpy as np

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.cypher.answer_evidence import type_features
from kgdb.cypher.linking import question_topics, topic_names
from kgdb.cypher.paths import UnknownRelationError, entity_names, ground_relation_paths, why_empty
from kgdb.cypher.tables import graph_fingerprint
from kgdb.cypher.writeback import write_answers, write_scores
from kgdb.embeddings import get_embedder
from kgdb.errors import InputError
from kgdb.pipeline.retrieve import _ms
from kgdb.pipeline.vectors import vectors_on_demand
from kgdb.protocol import Retrieval, ScoredEntity, ScoredPath, ScoredTriple, relation_path_text
from kgdb.reading import QuestionReading, Topics, read_question
from kgdb.reading.topics import all_written_as_names, topics_to_join, with_the_first_topic
from kgdb.rrp.answer_features import MAX_CANDIDATES
from kgdb.rrp.answering import (
    MODES,
    Gathered,
    GroundedPath,
    answers_of,
    best_per_answer,
    first_path,
    ranked_answers,
    select,
    weigh_by_answer_closeness,
)
from kgdb.rrp.joint_topics import answers_next_to_topics, composed_through, joint_answer_paths
from kgdb.rrp.judging import answer_model, judged_answers
from kgdb.rrp.plan import PathPlanner, Plan, PlannedPath
from kgdb.rrp.planners import CosinePathPlanner, walk
from kgdb.rrp.run_triples import as_subgraph, best_triples
from kgdb.rrp.structural_runner import StructuralRunner, structural_paths
from kgdb.rrp.ties import answer_constraints

# The candidates whose relationship types the answer model reads, and the relationships read per candidate.
TYPED_CANDIDATES = 20
TYPE_SCAN = 200
Grounding = tuple[PlannedPath, str, list[tuple]]  # a planned path, the topic it left, the triples of one walk


class RelationPathRetriever:
    """A `QuestionRetriever` that plans relation paths, grounds each in Cypher hop by hop
    (`ground_step.cypher`: typed relationships, both directions, parallel edges kept, a bounded
    frontier) and returns the reasoning paths, their triples and the entities they reach.

    The planner is any `PathPlanner`; the default is the untrained `CosinePathPlanner`.
    """

    name = "relation-paths"

    def __init__(
        self,
        graph: Graph,
        settings: Settings,
        *,
        planner: PathPlanner | None = None,
        k: int = 100,
        write: bool = True,
        ground_cap: int = 200,
        walks: bool = False,
        structural: StructuralRunner | None = None,
        mode: str = "rethink",
        lambda1: float = 0.5,
        theta: float = 0.0,
        closeness_weight: float = 0.0,
        joint_paths: int | None = None,
    ):
        if mode not in MODES:
            raise InputError(f"{mode!r} is not one of {', '.join(MODES)}", path="--rrp-mode")
        self.graph, self.settings, self.k, self.write, self.ground_cap = graph, settings, k, write, ground_cap
        # RRP's structural reasoner (`kgdb.rrp.structural_runner.StructuralRunner`) and rethinking (λ1, θ)
        self.structural, self.mode, self.lambda1, self.theta = (
            structural,
            (mode if structural is not None else "planner"),
            lambda1,
            theta,
        )
        self.walks = walks  # ground as walks (entities may repeat), the planner's label semantics
        # several topics: relation paths per topic joined on the answer (`kgdb.rrp.joint_topics`); 0: off
        self.joint_paths = settings.rrp_joint_paths if joint_paths is None else joint_paths
        self.closeness_weight = (
            closeness_weight  # `answering_rules.weigh_by_answer_closeness`; 0: the planner's scores as they are
        )
        _, info = graph_fingerprint(graph)
        self.embedding_model = info.get("model") or settings.embedding_model
        self.embedder = get_embedder(self.embedding_model, settings.device, settings.embedding_batch_size)
        self.planner: PathPlanner = planner or CosinePathPlanner(self.embedder)
        self.notes: list[str] = []
        # orders the answers and says how sure it is (`kgdb.rrp.judging`); None: the ranker's order
        self.answer_model = answer_model(settings.answer_model)
        self._entity_vectors = vectors_on_demand(graph, settings, self.embedder)  # linking on a lazily embedded graph

    def describe(self) -> dict:
        planner, structural = self.planner, self.structural
        decoding = None if planner.constrained is None else ("constrained" if planner.constrained else "free")
        rethinking = {"lambda1": self.lambda1, "lambda2": 1.0 - self.lambda1, "theta": self.theta}
        return {
            "retriever": self.name,
            "planner": planner.name,
            # the LLM planner's endpoint and prompt; the path ranker's enumeration bounds
            "planner_settings": planner.describe(),
            "checkpoint": planner.checkpoint.name if planner.checkpoint else None,
            "planner_decoding": decoding,
            "beam": planner.beam,
            "grounding": "walks" if self.walks else "simple paths",
            "structural": structural.checkpoint.name if structural is not None and structural.checkpoint else None,
            "rrp_mode": self.mode,
            "rethinking": rethinking if self.mode != "planner" else None,
            "answer_closeness_weight": self.closeness_weight,
            "joint_paths": self.joint_paths,
            "answer_model": self.settings.answer_model if self.answer_model is not None else None,
            "min_confidence": self.answer_model.min_confidence if self.answer_model is not None else None,
            "k": self.k,
            "notes": list(self.notes),
        }

    def gather(
        self, question: str | QuestionReading, topics: list[str] | None = None, q_emb: np.ndarray | None = None
    ) -> Gathered:
        """Link, plan, ground, rethink and (with a structural reasoner) reason over the grounded triples
        and trace its paths back: every candidate path of both modules with its S1 and S2, unfiltered.
        A question with several topics is also read from each topic alone and joined on the answer; where
        the joint answers lie inside one topic's composed reading, that reading answers instead (measured on
        the training and val splits: CWQ val +1, train +5, WebQSP and MetaQA unchanged,
        docs/experiments/2026-11-29-attributes-and-descriptions.md)."""
        reading = question if isinstance(question, QuestionReading) else read_question(question)
        if not reading.text or not reading.text.strip():
            raise InputError("the question is empty", path="QUESTION")
        with self.planner.question():  # the readings below plan one question again and again
            return self._gather_readings(reading, topics, q_emb)

    def _gather_readings(
        self, reading: QuestionReading, topics: list[str] | None, q_emb: np.ndarray | None
    ) -> Gathered:
        t = time.perf_counter()
        found, names = self._link(reading, topics, q_emb)
        reading = reading.linked(found, names)
        g = self._gather(reading, found, names, {"link": _ms(t)})
        g.reading = reading
        several = with_the_first_topic(topics_to_join(reading), g.found, found)
        if self.joint_paths and len(several) >= 2:
            t = time.perf_counter()
            composed, middle = composed_through(g, self._join(reading, g, several))
            g.timings["joint"] = _ms(t)
            if composed is not None:
                # the joint answers are the middle of one topic's composed reading: what its description names,
                # not what the question asks of it ("the leader of [the country that has X]", a leader's title
                # the other topic, both reach the country)
                g = self._read_again(reading, composed.found, several, found, g.timings, "composed")
                g.notes.append(
                    f"reached from two topics: {', '.join(middle)}, what the description around "
                    f"{several[composed.found.ids[0]]!r} names; its composed reading answers"
                )
            elif not g.joint and all_written_as_names(reading, several):
                # as topics given are read: every name at once
                together = Topics(list(several), found.source, [], [])
                g = self._read_again(reading, together, several, found, g.timings, "together")
            if not g.joint:
                t = time.perf_counter()
                g.joint, joined = answers_next_to_topics(self.graph, g, list(several))
                self._name_joint(g)
                if g.joint:
                    answers = len({c.path.answer for c in g.joint})
                    g.notes.append(
                        ("" if composed is not None else "no answer is reached from two topics; ")
                        + f"the {answers} planned answer(s) joined to "
                        f"{', '.join(repr(several[tid]) for tid in joined)} by one relation (or two through a CVT node) "
                        "come first"
                    )
                g.timings["next_to"] = _ms(t)
        g.constrain = answer_constraints(self.graph, reading, g, several)
        if reading.asked_noun:  # what the graph says each candidate is, for the answer model's type feature
            ranked = answers_of(self.mode, g, self.lambda1, self.theta)[:TYPED_CANDIDATES]
            g.answer_types = type_features(self.graph, ranked, per_entity=TYPE_SCAN)
        return g

    def _read_again(
        self,
        reading: QuestionReading,
        topics: Topics,
        names: dict[str, str],
        found: Topics,
        first: dict[str, float],
        stage: str,
    ) -> Gathered:
        """The question gathered again from `topics` (`names`: id -> name of these and more), keeping the linked
        candidates of `found` and the first reading's timings, with this reading timed whole as `stage`."""
        t = time.perf_counter()
        g = self._gather(reading, topics, {i: names[i] for i in topics.ids}, {})
        g.found, g.timings, g.reading = replace(topics, linked=found.linked), {**first, stage: _ms(t)}, reading
        return g

    def _join(self, reading: QuestionReading, g: Gathered, topics: dict[str, str]) -> list[tuple[str, Gathered]]:
        """The joint reading of a several-topic question (`topics`: id -> name): each topic's own plan,
        joined on the answer (`g.joint`, empty when no answer is reached from two topics). Returns each
        topic's own reading."""
        per_topic = []
        for topic, name in topics.items():
            one = Topics([topic], "given", [], [])
            if g.found.ids == [topic] and g.names.get(topic) == name:
                # the first reading is this topic's own: planned and grounded again, it would be the same
                per_topic.append((topic, replace(g, found=one, structural=[], s2={}, timings={}, notes=[])))
                continue
            # the joint reading reads each topic's planned paths only: no structural pass per topic
            per_topic.append((topic, self._gather(reading, one, {topic: name}, {}, with_structural=False)))
        g.joint = joint_answer_paths(self.graph, per_topic, self.joint_paths)
        self._name_joint(g)
        return per_topic

    def _name_joint(self, g: Gathered) -> None:
        """Names (and CVT marks) of the joint paths' entities that the planned paths did not reach."""
        unnamed = list(dict.fromkeys(e for c in g.joint for e in c.path.entities if e not in g.names))
        for i, e in entity_names(self.graph, unnamed).items():
            g.names[i] = e.name
            if e.cvt:
                g.cvt.add(i)

    def _gather(
        self,
        reading: QuestionReading,
        found: Topics,
        names: dict[str, str],
        timings: dict[str, float],
        with_structural: bool = True,
    ) -> Gathered:
        t = time.perf_counter()
        plan = self.planner.plan(self.graph, reading, found, names)
        timings["plan"] = _ms(t)
        t = time.perf_counter()
        grounded = self._ground(plan)
        notes = [*plan.notes, *self._unreached(plan, grounded)]
        timings["ground"] = _ms(t)
        info = entity_names(
            self.graph, [e for _, anchor, triples in grounded for e in walk(anchor, triples)[0]] + plan.topics.ids
        )
        names = {i: e.name for i, e in info.items()}
        cvt = {i for i, e in info.items() if e.cvt}
        planned = [
            GroundedPath(_path(p.score, anchor, triples, self.planner.name), list(triples), p.score)
            for p, anchor, triples in grounded
        ]
        closeness = self._closeness(reading, plan, {i: e.idx for i, e in info.items()})
        # Not for a composed reading: the whole question's words describe its middle entity too ("where was
        # step brothers' *director* born?" would favour people over places). Rescoring the grounded paths is
        # timed with rethinking, the other rescoring.
        if self.closeness_weight and not plan.composed:
            t = time.perf_counter()
            planned, weighed_note = self._weigh(planned, closeness, set(plan.topics.ids) | cvt)
            notes += weighed_note
            timings["rethink"] = _ms(t)
        structural: list[GroundedPath] = []
        s2: dict[str, float] = {}
        if with_structural and self.structural is not None and self.mode != "planner":
            t = time.perf_counter()
            structural, s2 = structural_paths(self.structural, self.planner, self.embedder, plan, planned, cvt)
            timings["structural"] = _ms(t)
        return Gathered(
            plan.topics,
            names,
            cvt,
            planned,
            structural,
            s2,
            timings,
            notes,
            closeness,
            plan.usage,
            composed=bool(plan.composed),
        )

    def read(self, question: QuestionReading, topics: list[str] | None = None) -> QuestionReading:
        """The question read and linked, nothing planned (`kgdb ask --explain`)."""
        return question.linked(*self._link(question, topics, None))

    def _link(
        self, reading: QuestionReading, topics: list[str] | None, q_emb: np.ndarray | None
    ) -> tuple[Topics, dict[str, str]]:
        """The question's topics (given, else linked from its mentions) and their names."""
        found = question_topics(
            self.graph, reading, q_emb, topics, entity_vectors=self._entity_vectors, encode=self.embedder.encode
        )
        return found, topic_names(self.graph, found)

    def _ground(self, plan: Plan) -> list[Grounding]:
        """Every planned path grounded from every topic, one walk per entry (`ground_relation_paths`)."""
        jobs = [(p, anchor) for p in plan.paths for anchor in plan.topics.ids]
        groundings = ground_relation_paths(
            self.graph,
            [(anchor, list(p.relations), list(p.directions) or None) for p, anchor in jobs],
            cap=self.ground_cap,
            walks=self.walks,
            step_scan=self.settings.rrp_step_scan,
        )
        grounded = [(p, anchor, triples) for (p, anchor), grounding in zip(jobs, groundings) for triples in grounding]
        if plan.composed:
            # the composed path continues from the description's answers, never back through a topic
            # ("the wife of X": X's marriage names X too)
            composed, topics = plan.paths[0], set(plan.topics.ids)
            grounded = [
                (p, anchor, triples)
                for p, anchor, triples in grounded
                if p is not composed or not topics & set(walk(anchor, triples)[0][1:-1])
            ]
        return grounded

    def _unreached(self, plan: Plan, grounded: list[Grounding]) -> list[str]:
        """Notes on planned paths that reached nothing: the best one's (why an answer may not fit the
        question), and those naming a relation the graph lacks (`why_empty`)."""
        notes = []
        reached = {p for p, _, _ in grounded}
        if (
            plan.paths
            and (top := max(plan.paths, key=lambda p: p.score)) not in reached
            and top.score > max((p.score for p in reached), default=-1.0)
        ):
            best = relation_path_text(top.relations, top.directions)
            notes.append(
                f"the best-scored relation path, {best} ({top.score:.3g}), "
                f"reaches nothing from {', '.join(plan.topic_names)}; "
                + ("the answers follow the best one that does" if reached else "no planned path reaches anything")
            )
        # A graph-constrained planner only names relations that leave the topics' frontier, so a
        # plan that grounds to nothing cannot name an unknown relation: no round trip to ask why.
        if self.planner.constrained or not plan.topics.ids:
            return notes
        for p in dict.fromkeys(p for p in plan.paths if p not in reached):
            exc = why_empty(self.graph, plan.topics.ids[0], list(p.relations))
            if isinstance(exc, UnknownRelationError):
                notes.append(f"planned path skipped: {exc}")
            elif exc is not None:
                raise exc
        return notes

    def _weigh(
        self, planned: list[GroundedPath], closeness, excluded: set[str]
    ) -> tuple[list[GroundedPath], list[str]]:
        """The grounded paths weighed by their answers' closeness to the question, and a note when that
        changed which relation path comes first."""
        weighed = weigh_by_answer_closeness(planned, closeness, self.closeness_weight, excluded)
        first, now = (first_path(p, excluded) for p in (planned, weighed))
        if now == first:
            return weighed, []
        # the same paths reweighed: both reach an answer (or neither, which is equal)
        return weighed, [
            f"what the paths reach put {relation_path_text(*cast(tuple, now))} first, above the planner's first, "
            f"{relation_path_text(*cast(tuple, first))}: its answers fit the question's words better "
            f"(answering.closeness_weight {self.closeness_weight:g})"
        ]

    def retrieve(
        self,
        question: str | QuestionReading,
        topics: list[str] | None = None,
        *,
        qid: str | None = None,
        q_emb: np.ndarray | None = None,
    ) -> Retrieval:
        g = self.gather(question, topics, q_emb)
        reading = cast(QuestionReading, g.reading)
        found, names, cvt, timings = g.found, g.names, g.cvt, g.timings
        read = topics_read(found.ids, g.joint)
        candidates = self._answer_paths(g)
        paths = [replace(c.path, names=tuple(names.get(e, e) for e in c.path.entities)) for c in candidates]
        best = best_per_answer(paths, set(read) | cvt)
        # the answers in the answer model's order, then every other end by its best score (`PathReasoner`
        # keeps this order)
        judged = judged_answers(g, self.mode, self.lambda1, self.theta, self.answer_model)
        ranked = [*(a for a in judged.answers if a in best), *ranked_answers(best, g)]
        place = {e: i for i, e in enumerate(dict.fromkeys(ranked))}
        paths.sort(key=lambda p: (-p.score, place.get(p.answer, len(place)), len(p.relations), p.entities))
        ordered = best_triples(candidates)[: self.k]
        top = [
            ScoredTriple(rank, names.get(h, h), r, names.get(tl, tl), score, h, tl, -1)
            for rank, (score, (_, h, r, tl)) in enumerate(ordered, start=1)
        ]
        entities = [ScoredEntity(e, names.get(e, e), best[e], judged.probability.get(e)) for e in place]
        run = None
        t = time.perf_counter()
        if self.write and ordered:
            run = write_scores(
                self.graph,
                as_subgraph(reading.text, qid, read, [st[1] for st in ordered]),
                np.array([st[0] for st in ordered]),
                self.name,
                self.k,
            )
            if judged.confidence is not None:
                answers = [(a, judged.probability.get(a)) for a in judged.answers[:MAX_CANDIDATES]]
                write_answers(self.graph, run, answers, judged.confidence, judged.sure)
        timings["write"] = _ms(t)
        return Retrieval(
            question=reading.text,
            qid=qid,
            retriever=self.name,
            k=self.k,
            topics=read,
            triples=top,
            paths=paths,
            entities=entities,
            run=run,
            linked=found.linked,
            names=names,
            cvt=cvt,
            timings=timings,
            notes=[n for n in [found.note(), *dict.fromkeys(g.notes)] if n],
            missing_topics=list(found.missing),
            llm_usage=g.usage,
            reading=reading,
            judgement=judged.to_json() if judged.confidence is not None else None,
        )

    def _answer_paths(self, g: Gathered) -> list[GroundedPath]:
        """The paths the answers come from: the joint reading's (several topics), the planner's, or those
        the mode selects (sourced `mode:module`)."""
        if g.joint:
            return g.joint
        if self.mode == "planner":
            return g.planned
        t = time.perf_counter()
        candidates = select(self.mode, g.planned, g.structural, g.s2, g.found.ids, g.cvt, self.lambda1, self.theta)
        for c in candidates:  # `mode:module`: the answer-bearing paths the reasoner takes all of
            c.path = replace(c.path, source=f"{self.mode}:{c.path.source}")
        g.timings["rethink"] = g.timings.get("rethink", 0.0) + _ms(t)
        return candidates

    def _closeness(
        self, reading: QuestionReading, plan: Plan, rows: dict[str, int]
    ) -> Callable[[list[str]], dict[str, float]]:
        """`Gathered.closeness` of one question: answer ids -> cosine of their name vectors (the ones
        linking reads; `rows`: id -> vector row) with the question read without the topic names.
        Every end of one relation path scores the same, and the words left in the question often say
        which end it asks for ("where did kevin love go to *college*": UCLA, not his high school;
        "judy garland *father*"). Asked only for the answers tied at the best score, fewer than two
        get none, so a lazily embedded graph encodes few names: the answers tied at the best score, and the
        answer model's candidates (`kgdb.rrp.answer_features`). Chosen on the WebQSP training and
        validation splits (docs/answering.md, "Answers tied on one path")."""
        memo: dict[str, float] = {}
        q = plan.text_emb  # encoded on first need where the planner did not encode the question

        def closeness(ids: list[str]) -> dict[str, float]:
            nonlocal q
            if not ids:
                return {}
            if new := [e for e in ids if e not in memo and rows.get(e, -1) >= 0]:
                if q is None:
                    q = reading.encoded(self.embedder.encode, plan.topic_names).vector
                vectors = self._entity_vectors([rows[e] for e in new])
                matrix = np.stack([vectors[rows[e]] for e in new])
                cos = matrix @ q / np.maximum(np.linalg.norm(matrix, axis=1) * np.linalg.norm(q), 1e-12)
                memo.update(zip(new, cos.tolist()))
            return {e: memo[e] for e in ids if e in memo}

        return closeness


def topics_read(found: list[str], joint: list[GroundedPath]) -> list[str]:
    """The topics a question's answers were read from: those it was linked to or given, then the other topics
    its joint reading started a path from (a linked question is read from each entity it names). They are the
    run's topics, so its evidence and Neo4j Browser show the paths from each."""
    return list(dict.fromkeys([*found, *(c.path.entities[0] for c in joint if c.path.entities)]))


def _path(score: float, anchor: str, triples, source: str) -> ScoredPath:
    nodes, dirs = walk(anchor, triples)
    return ScoredPath(score, tuple(nodes), tuple(r for _, _, r, _ in triples), tuple(dirs), source=source)
