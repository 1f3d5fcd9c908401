"""Relation paths: a planner (`kgdb.rrp.plan.PathPlanner`: the cosine baseline, RRP's trained
planner, the path ranker or an LLM) proposes relation paths, Cypher grounds them hop by hop, RRP's
structural reasoner and rethinking rescore them (`kgdb.rrp.answering`), and
`RelationPathRetriever` returns scored paths, triples and entities."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import replace
from typing import Callable, cast

import numpy as np

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.cypher.answer_evidence import attached_values, type_features
from kgdb.cypher.linking import Topics, capitalised, names_mention, question_topics, written_as_name
from kgdb.cypher.paths import UnknownRelationError, entity_names, ground_relation_paths, why_empty
from kgdb.cypher.tables import graph_fingerprint
from kgdb.cypher.topic_intersection import topics_next_to
from kgdb.cypher.writeback import write_scores
from kgdb.embeddings import get_embedder
from kgdb.errors import InputError, KgdbError
from kgdb.models.checkpoints import Checkpoint, NoCheckpointError
from kgdb.pipeline.retrieve import _ms
from kgdb.pipeline.vectors import data_fingerprint, trained_on_this_data, vectors_on_demand
from kgdb.protocol import Retrieval, ScoredEntity, ScoredPath, ScoredTriple, relation_path_text
from kgdb.rrp.answering import (
    MODES,
    Gathered,
    GroundedPath,
    best_per_answer,
    chosen_mode,
    first_path,
    ranked_answers,
    select,
    tied_at_best,
    weigh_by_answer_closeness,
)
from kgdb.rrp.constraints import (
    Constraints,
    answer_cue,
    apply_attributes,
    apply_literal,
    literal_choice,
    parse_constraints,
    word_stems,
    years_of,
)
from kgdb.rrp.joint_topics import answers_next_to_topics, joint_answer_paths
from kgdb.rrp.path_ranker import competing_topics, load_ranker, shipped_ranker
from kgdb.rrp.plan import PathPlanner, Plan, PlannedPath
from kgdb.rrp.planners import CosinePathPlanner, encode_question, load_planner, walk
from kgdb.rrp.structural_runner import StructuralRunner, load_structural
from kgdb.subgraph import Subgraph

STRUCTURAL_SOURCE = "rrp-structural"
# A question linked from its text is read from each of its first JOIN_CANDIDATES mentioned candidates
# within JOIN_MARGIN of the best link score (`topics_to_join`): wider than the namesakes that compete to
# be its one topic, since a second name ("what david slade film starred taylor lautner?") links lower than
# the first and still has to be reached. Beyond the namesakes' margin only a mention of JOIN_WIDE_WORDS
# words or more joins, or one the question writes with a capital: a lower-case one-word mention that far
# below is most often the question's wording ("what kind of monarchy does japan have?"), a capitalised one
# a name ("...which has a country capital of Grodno?"). A mention whose names link within NAMESAKE_TIE of
# one another names none of them ("world series": the 2010 World Series and the World Series itself) and
# is no topic to be read from; with those left out, the count and margin were widened from 3 and 0.8.
# Chosen on the CWQ and WebQSP training splits, topics linked (docs/experiments/2026-11-28-linked-second-
# topics.md, 2026-11-28-capitalised-names.md, 2026-11-29-names-a-question-is-read-from.md).
JOIN_CANDIDATES = 4
JOIN_MARGIN = 1.2
JOIN_WIDE_WORDS = 2
NAMESAKE_TIE = 0.1
# Answers tied on the best path whose attached years a literal constraint reads (the first, by id).
LITERAL_READ = 200
# A linked question's other mentioned candidates its tied answers may be next to (`_next_to_other_mentions`);
# chosen on the CWQ and WebQSP training and val splits, topics linked.
OTHER_MENTIONS = 4
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
            "k": self.k,
            "notes": list(self.notes),
        }

    def gather(self, question: str, topics: list[str] | None = None, q_emb: np.ndarray | None = None) -> Gathered:
        """Link, plan, ground, rethink and (with a structural reasoner) reason over the grounded triples
        and trace its paths back: every candidate path of both modules with its S1 and S2, unfiltered.
        A question with several topics is also read from each topic alone and joined on the answer; where
        the joint answers lie inside one topic's composed reading, that reading answers instead (measured on
        the training and val splits: CWQ val +1, train +5, WebQSP and MetaQA unchanged,
        docs/experiments/2026-11-29-attributes-and-descriptions.md)."""
        if not question or not question.strip():
            raise InputError("the question is empty", path="QUESTION")
        with self.planner.question():  # the readings below plan one question again and again
            return self._gather_readings(question, topics, q_emb)

    def _gather_readings(self, question: str, topics: list[str] | None, q_emb: np.ndarray | None) -> Gathered:
        t = time.perf_counter()
        found, names = self._link(question, topics, q_emb)
        g = self._gather(question, found, names, {"link": _ms(t)})
        several = with_the_first_topic(topics_to_join(found, names, question), g.found, found)
        if self.joint_paths and len(several) >= 2:
            t = time.perf_counter()
            composed, middle = _composed_through(g, self._join(question, g, several))
            g.timings["joint"] = _ms(t)
            if composed is not None:
                # the joint answers are the middle of one topic's composed reading: what its description names,
                # not what the question asks of it ("the leader of [the country that has X]", a leader's title
                # the other topic, both reach the country)
                g = self._read_again(question, composed.found, several, found, g.timings, "composed")
                g.notes.append(
                    f"reached from two topics: {', '.join(middle)}, what the description around "
                    f"{several[composed.found.ids[0]]!r} names; its composed reading answers"
                )
            elif not g.joint and all_written_as_names(found, several, question):
                # as topics given are read: every name at once
                together = Topics(list(several), found.source, [], [])
                g = self._read_again(question, together, several, found, g.timings, "together")
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
        g.constrain = answer_constraints(self.graph, question, g, several)
        return g

    def _read_again(
        self, question: str, topics: Topics, names: dict[str, str], found: Topics, first: dict[str, float], stage: str
    ) -> Gathered:
        """The question gathered again from `topics` (`names`: id -> name of these and more), keeping the linked
        candidates of `found` and the first reading's timings, with this reading timed whole as `stage`."""
        t = time.perf_counter()
        g = self._gather(question, topics, {i: names[i] for i in topics.ids}, {})
        g.found, g.timings = replace(topics, linked=found.linked), {**first, stage: _ms(t)}
        return g

    def _join(self, question: str, g: Gathered, topics: dict[str, str]) -> list[tuple[str, Gathered]]:
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
            per_topic.append((topic, self._gather(question, one, {topic: name}, {}, with_structural=False)))
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
        question: str,
        found: Topics,
        names: dict[str, str],
        timings: dict[str, float],
        with_structural: bool = True,
    ) -> Gathered:
        t = time.perf_counter()
        plan = self.planner.plan(self.graph, question, found, names)
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
        closeness = self._closeness(question, plan, {i: e.idx for i, e in info.items()})
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
            structural, s2 = self._structural(plan, planned, cvt)
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

    def _link(self, question: str, topics: list[str] | None, q_emb: np.ndarray | None) -> tuple[Topics, dict[str, str]]:
        """The question's topics (given, else linked from the text) and their names."""
        found = question_topics(
            self.graph, question, q_emb, topics, entity_vectors=self._entity_vectors, encode=self.embedder.encode
        )
        names = {e.id: e.name for e in found.linked if e.id in found.ids}  # linking returned their names
        if len(names) < len(found.ids):
            names = {i: e.name for i, e in entity_names(self.graph, found.ids).items()}
        return found, names

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
        self, question: str, topics: list[str] | None = None, *, qid: str | None = None, q_emb: np.ndarray | None = None
    ) -> Retrieval:
        g = self.gather(question, topics, q_emb)
        found, names, cvt, timings = g.found, g.names, g.cvt, g.timings
        read = topics_read(found.ids, g.joint)
        candidates = self._answer_paths(g)
        paths = [replace(c.path, names=tuple(names.get(e, e) for e in c.path.entities)) for c in candidates]
        best = best_per_answer(paths, set(read) | cvt)
        # ties: the answers tied at the best score that meet a literal constraint, then those closest to the
        # question, then by name (`ranked_answers`; `PathReasoner` keeps this order)
        place = {e: i for i, e in enumerate(ranked_answers(best, g))}
        paths.sort(key=lambda p: (-p.score, place.get(p.answer, len(place)), len(p.relations), p.entities))
        ordered = _best_triples(candidates)[: self.k]
        top = [
            ScoredTriple(rank, names.get(h, h), r, names.get(tl, tl), score, h, tl, -1)
            for rank, (score, (_, h, r, tl)) in enumerate(ordered, start=1)
        ]
        entities = [ScoredEntity(e, names.get(e, e), best[e]) for e in place]
        run = None
        t = time.perf_counter()
        if self.write and ordered:
            run = write_scores(
                self.graph,
                _as_subgraph(question, qid, read, [st[1] for st in ordered]),
                np.array([st[0] for st in ordered]),
                self.name,
                self.k,
            )
        timings["write"] = _ms(t)
        return Retrieval(
            question=question,
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

    def _closeness(self, question: str, plan: Plan, rows: dict[str, int]) -> Callable[[list[str]], dict[str, float]]:
        """`Gathered.closeness` of one question: answer ids -> cosine of their name vectors (the ones
        linking reads; `rows`: id -> vector row) with the question read without the topic names.
        Every end of one relation path scores the same, and the words left in the question often say
        which end it asks for ("where did kevin love go to *college*": UCLA, not his high school;
        "judy garland *father*"). Asked only for the answers tied at the best score, fewer than two
        get none, so a lazily embedded graph encodes few names. Chosen on the WebQSP training and
        validation splits (docs/answering.md, "Answers tied on one path")."""
        memo: dict[str, float] = {}
        q = plan.text_emb  # encoded on first need where the planner did not encode the question

        def closeness(ids: list[str]) -> dict[str, float]:
            nonlocal q
            if len(ids) < 2:
                return {}
            if new := [e for e in ids if e not in memo and rows.get(e, -1) >= 0]:
                if q is None:
                    q = encode_question(self.embedder, question, list(plan.topic_names))[1]
                vectors = self._entity_vectors([rows[e] for e in new])
                matrix = np.stack([vectors[rows[e]] for e in new])
                cos = matrix @ q / np.maximum(np.linalg.norm(matrix, axis=1) * np.linalg.norm(q), 1e-12)
                memo.update(zip(new, cos.tolist()))
            return {e: memo[e] for e in ids if e in memo}

        return closeness

    def _structural(
        self, plan: Plan, planned: list[GroundedPath], cvt: set[str]
    ) -> tuple[list[GroundedPath], dict[str, float]]:
        """RRP §IV-B over the grounded triples: S2 per entity (P^n over its largest non-topic P^n)
        and the structural paths traced back from P^n, each with S1 = the planner's P(relation path | q)."""
        by_key: dict[tuple, tuple] = {(tr[1], tr[2], tr[3]): tr for c in planned for tr in c.triples}
        if self.structural is None:
            raise KgdbError("no structural reasoner to run")
        text_emb = plan.text_emb if plan.text_emb is not None else self.embedder.encode([plan.text])[0]
        out = self.structural.run(
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
            plan_score.update(zip(missing, self.planner.path_probability(replace(plan, text_emb=text_emb), missing)))
        for c in structural:
            c.s1 = plan_score.get((c.path.relations, c.path.directions), 0.0)
        return structural, out.probability


def answer_constraints(
    graph: Graph, question: str, g: Gathered, read_from: Iterable[str] = ()
) -> Callable[[list[str]], list[str]]:
    """`Gathered.constrain`: the question's literal constraint (`kgdb.rrp.constraints`: a year bound,
    "last" / "first"), read over the years each answer tied on the best path carries in its name or in the
    values attached to it or its CVT node; before it, the answers whose own relations name an attribute the
    question asks about and neither its topics nor its paths name (`apply_attributes`: "the university with
    the fewest *postgraduates*" puts a school with `number_of_postgraduates` first, even where the graph lost
    the count); and ahead of all, a linked question's answers next to another entity it mentions
    (`_next_to_other_mentions`; `read_from`: the topics the joint reading read it from besides those of `g`).
    One answer: the order as given. Moves answers only among those tied, so the ranker's choice of path
    stands. Measured on the training and val splits: literal constraints
    ComplexWebQuestions val Hit@1 +0.71, WebQSP and MetaQA val unchanged
    (docs/experiments/2026-11-28-literal-constraints.md); attributes CWQ val +1.07, train +0.82
    (docs/experiments/2026-11-29-attributes-and-descriptions.md); other mentions CWQ val +1, train +5 −1,
    topics linked (docs/experiments/2026-12-01-topics-the-graph-lacks.md). A question asking for a time whose
    tied answers carry no year gets a note (`_note_no_time`), even with one answer. In a joint reading the
    literal constraint first chooses among every joint answer on the planned reading's best path
    (`_literal_over_joint`)."""
    c = parse_constraints(question)
    known = _literal_over_joint(graph, g, c) if g.joint and c.literal else {}
    paths = [p.path for p in g.joint or g.planned]
    best = best_per_answer(paths, set(g.found.ids) | g.cvt)
    tied = tied_at_best(best)
    # years order tied answers for a literal constraint, and say whether a time question reached a time at all
    dated = bool(tied) and (c.asks_a_time or (c.literal and len(tied) > 1))
    years = _answer_years(graph, g, tied, known) if dated else {}
    if c.asks_a_time and tied:
        _note_no_time(g, years)
    if len(tied) < 2:
        return list
    asked = _asked_words(question, [g.names.get(t, t) for t in g.found.ids], [r for p in paths for r in p.relations])
    # no word left to name an attribute: no query for the tied answers' relations
    relations = type_features(graph, tied[:LITERAL_READ]) if asked else {}
    near = _next_to_other_mentions(graph, question, g, tied, set(g.found.ids) | set(read_from))

    def order(ordered: list[str]) -> list[str]:
        out = apply_attributes(ordered, relations, asked)
        out = apply_literal(out, years, c) if c.literal else out
        return [a for a in out if a in near] + [a for a in out if a not in near]

    return order


def _answer_years(graph: Graph, g: Gathered, answers: list[str], known: dict[str, list[int]]) -> dict[str, list[int]]:
    """The years each of `answers` carries (`years_of`: its name, and the values attached to it or its CVT node,
    read for the first LITERAL_READ); those in `known` are not read again."""
    new = [a for a in answers if a not in known]
    values = attached_values(graph, new[:LITERAL_READ]) if new else {}
    return {a: known[a] if a in known else years_of(a, g.names.get(a), values.get(a, ())) for a in answers}


def _literal_over_joint(graph: Graph, g: Gathered, c: Constraints) -> dict[str, list[int]]:
    """The answers of the planned reading's best path (tied at its best score) that the joint reading reaches
    too and the question's literal constraint chooses among them (`literal_choice`) are raised to the joint
    reading's best strength, so they are tied with its best answers. A joint answer's strength adds the score
    of the path that reaches it from each topic, and the graph may store the same fact under a relation and
    under its inverse ("Stanley Cup" reaches one final by `championship`, the others by `events`): the second
    topic's scores then rank the answers by how their facts are stored, not by the year the question asks
    for. Measured on the CWQ and WebQSP training and val splits, topics given and linked: one WebQSP training
    question turned right (linked), none wrong. Returns the years it read."""
    excluded = set(g.found.ids) | g.cvt
    best = best_per_answer((p.path for p in g.joint), excluded)
    top = max(best.values(), default=None)
    planned = set(tied_at_best(best_per_answer((p.path for p in g.planned), excluded)))
    pool = sorted((a for a in best if a in planned), key=lambda a: (-best[a], a))[:LITERAL_READ]
    if top is None or all(best[a] == top for a in pool):
        return {}
    years = _answer_years(graph, g, pool, {})
    raised = {a for a in literal_choice(pool, years, c) if best[a] < top}
    if not raised:
        return years
    g.joint = [
        GroundedPath(replace(p.path, score=top), p.triples, p.s1) if p.path.answer in raised else p for p in g.joint
    ]
    g.notes.append(
        f"the question's {'year' if c.bounds else 'last / first'} constraint chose "
        f"{', '.join(sorted(g.names.get(a, a) for a in raised))} among the answers its best path and its topics "
        "together reach"
    )
    return years


def _next_to_other_mentions(graph: Graph, question: str, g: Gathered, tied: list[str], read: set[str]) -> set[str]:
    """The `tied` answers of a question linked from its text that are joined (by one relationship, or two
    through a CVT node) to an entity it mentions and is not read from: one of the first OTHER_MENTIONS linked
    candidates that is none of the topics it was `read` from, whose mention shares no word with
    theirs (a namesake of a topic) and is not the noun the question asks for ("what *state* is …"). "Who is
    JFK's brothers that are *lawyers*?" reads JFK's siblings; the one with the profession Lawyer comes first.
    Empty when none or every tied answer is; else a note names the entities."""
    found = g.found
    if found.source != "linked":
        return set()
    words = {w for e in found.linked if e.id in read and e.mention for w in e.mention.split()}
    words.update(answer_cue(question).split()[1:])  # the noun of "what state …" is the kind asked for
    kept = [e for e in found.linked if e.mention and e.id not in read and not words & set(e.mention.split())]
    others = {e.id: e.name for e in kept[:OTHER_MENTIONS]}
    if not others:
        return set()
    joined = topics_next_to(graph, tied[:LITERAL_READ], list(others), per_end=1)
    near = {c.answer for c in joined}
    if not near or len(near) == len(tied):
        return set()
    named = sorted({others[t] for c in joined for t in c.topics})
    g.notes.append(f"of the answers tied on the best path, those next to {', '.join(map(repr, named))} come first")
    return near


def _note_no_time(g: Gathered, years: dict[str, list[int]]) -> None:
    """For a question asking for a time: a note where no answer on the best path carries a year (`years`), in
    its name or in a date attached to it or its CVT node. The best path then reads another relation than the
    one asked about ("when did the bruins win the stanley cup?" answered with the teams that beat them), so a
    user looks at the other readings. It changes no answer."""
    if any(years.values()):
        return
    g.notes.append(
        "the question asks for a time, and no answer on the best path carries a year (in its name or a date "
        "attached to it): the path may read another relation than the one asked about"
    )


def _composed_through(g: Gathered, per_topic: list[tuple[str, Gathered]]) -> tuple[Gathered | None, list[str]]:
    """The one topic's composed reading whose best paths pass through every joint answer of `g` (the joint
    reading then answered its description) and the names of those answers, which leave `g.joint`; else
    (None, [])."""
    answers = {c.path.answer for c in g.joint}
    through = [one for _, one in per_topic if one.composed and answers and answers <= _middle(one)]
    if len(through) != 1:
        return None, []
    g.joint = []
    return through[0], sorted(g.names.get(a, a) for a in answers)


def _middle(g: Gathered) -> set[str]:
    """The entities inside (not at the ends of) the best-scored planned paths of `g`."""
    top = max((c.path.score for c in g.planned), default=None)
    return {e for c in g.planned if c.path.score == top for e in c.path.entities[1:-1]}


def _asked_words(question: str, topic_names: list[str], path_relations: list[str]) -> set[str]:
    """The stems of the question's words that neither a topic's name nor a relation of the planned paths writes,
    nor the noun it asks for ("which *school* …": a school's newspaper relation writes "school" too)."""
    known = {s for n in topic_names for s in word_stems(n)} | {s for r in path_relations for s in word_stems(r)}
    return word_stems(question) - known - word_stems(answer_cue(question))


def _best_triples(candidates: list[GroundedPath]) -> list[tuple[float, tuple]]:
    """Every triple of the candidates with the best score of a path through it, best first (then by elementId)."""
    triples: dict[str, tuple[float, tuple]] = {}  # elementId -> (best path score, triple)
    for c in candidates:
        for triple in c.triples:
            if triple[0] not in triples or triples[triple[0]][0] < c.path.score:
                triples[triple[0]] = (c.path.score, triple)
    return sorted(triples.values(), key=lambda st: (-st[0], st[1][0]))


def topics_to_join(found: Topics, names: dict[str, str], question: str) -> dict[str, str]:
    """The topics a question is read from one by one (id -> name): every given topic, or, linked from
    the text, the mentioned candidates that compete to be its topic (`competing_topics`) and the names of
    several words (or one the `question` writes with a capital) linked up to JOIN_MARGIN below the best,
    whose names are their mention (`names_mention`: held, or several words misspelt), one per group of
    words (two namesakes of "kirk" are one topic read two ways, not two topics), the one whose mention holds
    the others' words and more where there is one ("american graffiti series" over "american graffiti"),
    none whose mention names others as well (`NAMESAKE_TIE`), and none whose mention starts with the noun
    the question asks for ("which politician who fought …", "what time zone is …") unless written as a
    name. Fewer than two: no joint reading."""
    if found.source != "linked":
        return {i: names.get(i, i) for i in found.ids}
    picked: list = []
    near = {e.id for e in competing_topics(found)}
    written = capitalised(question)
    asked = answer_cue(question).split()[1:]  # the noun of "which politician …", "what time zone …"
    for e in competing_topics(found, JOIN_CANDIDATES, JOIN_MARGIN):
        mention = cast(str, e.mention)  # competing_topics keeps the candidates with a mention only
        words = set(mention.split())
        if asked and mention.split()[0] == asked[0] and not words <= written:
            continue  # the kind of thing asked for, not a thing the answer is reached from
        if e.id not in near and len(mention.split()) < JOIN_WIDE_WORDS and not words <= written:
            continue
        if not names_mention(e.name, mention) or _tied_with_a_namesake(e, found):
            continue
        shared = [p for p in picked if words & set(p.mention.split())]
        if not shared:
            picked.append(e)
        elif len(shared) == 1 and words > set(shared[0].mention.split()):
            picked[picked.index(shared[0])] = e
    return {e.id: e.name for e in picked}


def with_the_first_topic(several: dict[str, str], first: Topics, found: Topics) -> dict[str, str]:
    """`several` (the topics a linked question is read from one by one) with the topic its first reading
    chose, which the joint reading needs as much as the others though its name may not be its mention
    ("JFK", "USA", "American League West" for "american league"); a topic whose mention shares a word
    with the chosen one's is a namesake of it and leaves."""
    if found.source != "linked" or len(first.ids) != 1 or first.ids[0] in several:
        return several
    mentions = {e.id: e.mention for e in found.linked}
    chosen = next((e for e in found.linked if e.id == first.ids[0]), None)
    if chosen is None:
        return several
    words = set((chosen.mention or "").split())  # a topic found by its vector alone has no mention
    return {
        chosen.id: chosen.name,
        **{i: n for i, n in several.items() if not words & set((mentions.get(i) or "").split())},
    }


def all_written_as_names(found: Topics, several: dict[str, str], question: str) -> bool:
    """Whether each of the `several` names a linked question is read from is one it writes as a name (in
    quotes, or capitalised by a writer who capitalises names: `written_as_name`). Such a question, where no
    answer is reached from two of its names, is read from all of them at once, as topics given are: "What
    country neighboring France is the nation where Waldenburg is a second level division?" Names linked from
    words of the wording (Actor, Time Zone) are never given; reading them together was worse."""
    if found.source != "linked":
        return False
    written = capitalised(question)
    mentions = {e.id: e.mention for e in found.linked}
    return all(written_as_name(question, mentions.get(i) or "", written) for i in several)


def _tied_with_a_namesake(e, found: Topics) -> bool:
    return any(
        o.id != e.id
        and o.mention == e.mention
        and abs(o.score - e.score) <= NAMESAKE_TIE
        and names_mention(o.name, cast(str, o.mention))  # e's mention: e is one of competing_topics
        for o in found.linked
    )


def topics_read(found: list[str], joint: list[GroundedPath]) -> list[str]:
    """The topics a question's answers were read from: those it was linked to or given, then the other topics
    its joint reading started a path from (a linked question is read from each entity it names). They are the
    run's topics, so its evidence and Neo4j Browser show the paths from each."""
    return list(dict.fromkeys([*found, *(c.path.entities[0] for c in joint if c.path.entities)]))


def _path(score: float, anchor: str, triples, source: str) -> ScoredPath:
    nodes, dirs = walk(anchor, triples)
    return ScoredPath(score, tuple(nodes), tuple(r for _, _, r, _ in triples), tuple(dirs), source=source)


def _as_subgraph(question: str, qid: str | None, topics: list[str], triples: list[tuple]) -> Subgraph:
    """The grounded triples as a `Subgraph`, the shape write-back takes."""
    ids = list(dict.fromkeys([*topics, *(x for _, h, _, t in triples for x in (h, t))]))
    pos = {e: i for i, e in enumerate(ids)}
    n = len(ids)
    return Subgraph(
        entity_ids=ids,
        entity_names=ids,
        entity_idx=np.zeros(n, np.int64),
        is_cvt=np.zeros(n, bool),
        head=np.array([pos[h] for _, h, _, _ in triples], np.int64),
        relation=np.zeros(len(triples), np.int64),
        tail=np.array([pos[t] for _, _, _, t in triples], np.int64),
        relation_names=[r for _, _, r, _ in triples],
        edge_ids=[e for e, _, _, _ in triples],
        topic=np.array([pos[t] for t in topics], np.int64),
        question=question,
        qid=qid,
    )


def relation_path_retriever(
    graph: Graph,
    settings: Settings,
    *,
    checkpoint: str | None = None,
    k: int = 100,
    write: bool = True,
    beam: int | None = None,
    ground_cap: int = 200,
    constrained: bool = True,
    walks: bool = True,
    structural: str | bool | None = None,
    mode: str | None = None,
    lambda1: float | None = None,
    theta: float | None = None,
    planner: PathPlanner | None = None,
    closeness_weight: float | None = None,
) -> RelationPathRetriever:
    """`RelationPathRetriever` with the trained planner for this graph (`NoCheckpointError` when none);
    `constrained`: decode only relation steps that exist from the entities reached so far; `walks`:
    ground as walks (entities may repeat), as the planner's labels are computed.

    `structural`: a structural-reasoner checkpoint name, None = the newest trained on this graph if
    any (else the planner alone), False = the planner alone. `mode` (planner, structural, union,
    rethink), λ1, θ and the planner's `beam` default to the values chosen on the val split and stored
    in that checkpoint (`kgdb train rrp`; the beam by a val sweep, else 3), else rethinking with 0.5 and 0.
    `planner`: a planner used instead of the trained one (the LLM planner, `kgdb.rrp.llm_planner`).
    `closeness_weight` (`answering_rules.weigh_by_answer_closeness`) defaults to `answering.closeness_weight`
    of the checkpoint that chose λ1 and θ (a ranker, else the structural one), else 0."""
    runner = _structural_runner(graph, settings, structural)
    # the checkpoint that chose the answering settings: the structural one, or a ranker, which replaces them
    chose = runner.checkpoint.config if runner is not None and runner.checkpoint else {}
    fallback = None
    # a planner given by the caller (`--planner llm`) answers with rethinking as the structural checkpoint tuned it
    if planner is None:
        planner, chose, fallback = _trained_planner(graph, settings, checkpoint, beam, constrained, chose)
    tuned = chose.get("rethinking") or {}
    if closeness_weight is None:
        closeness_weight = float((chose.get("answering") or {}).get("closeness_weight", 0.0))
    retriever = RelationPathRetriever(
        graph,
        settings,
        planner=planner,
        k=k,
        write=write,
        ground_cap=ground_cap,
        walks=walks,
        structural=runner,
        closeness_weight=closeness_weight,
        mode=chosen_mode(tuned) if mode is None else mode,
        lambda1=tuned.get("lambda1", 0.5) if lambda1 is None else lambda1,
        theta=tuned.get("theta", 0.0) if theta is None else theta,
    )
    retriever.notes += ([fallback] if fallback else []) + _trained_elsewhere(
        graph, [planner.checkpoint, runner.checkpoint if runner else None]
    )
    return retriever


def _structural_runner(graph: Graph, settings: Settings, structural: str | bool | None) -> StructuralRunner | None:
    """The structural reasoner `relation_path_retriever` was asked for: the named one, the newest of
    this graph's if any (None), or none (False)."""
    if structural is False:
        return None
    try:
        return load_structural(graph, settings, structural if isinstance(structural, str) else None)
    except NoCheckpointError:
        if structural:
            raise
        return None


def _trained_planner(
    graph: Graph, settings: Settings, checkpoint: str | None, beam: int | None, constrained: bool, chose: dict
) -> tuple[PathPlanner, dict, str | None]:
    """(the planner of this graph, the config that chose the answering settings, a note when it is the
    shipped one): a ranker (which brings its tuned settings), else the trained beam planner, else the
    portable ranker shipped with kgdb, if it fits."""
    ranker = load_ranker(graph, settings, checkpoint, beam=beam)
    if ranker is not None:
        return ranker, cast(Checkpoint, ranker.checkpoint).config, None  # a loaded ranker names its checkpoint
    try:
        tuned_beam = int((chose.get("rethinking") or {}).get("beam", 3))
        return (
            load_planner(
                graph, settings, checkpoint, beam=tuned_beam if beam is None else beam, constrained=constrained
            ),
            chose,
            None,
        )
    except NoCheckpointError:  # nothing trained on this graph: the portable ranker shipped with kgdb, if it fits
        if checkpoint or (ranker := shipped_ranker(graph, settings, beam=beam)) is None:
            raise
    shipped = cast(Checkpoint, ranker.checkpoint)  # a loaded ranker names its checkpoint
    note = (
        f"no RRP planner or ranker in {settings.checkpoints_dir} was trained on this graph, so the portable rrp-ranker "
        f"shipped with kgdb ranked the relation paths (trained on {shipped.config.get('dataset', '?')}); "
        "`kgdb train rrp-ranker` trains one for this graph"
    )
    return ranker, shipped.config, note


def _trained_elsewhere(graph: Graph, checkpoints: list) -> list[str]:
    """A note for each checkpoint trained on another graph than this one."""
    fingerprint, info = graph_fingerprint(graph)
    data = data_fingerprint(info)
    notes = []
    for ckpt in checkpoints:
        trained_on = ckpt.config.get("graph_fingerprint") if ckpt else None
        if trained_on and trained_on_this_data(ckpt.config, fingerprint, data) is False:
            notes.append(
                f"{ckpt.name} was trained on another graph ({trained_on[:12]}), not this one ({fingerprint[:12]})"
            )
    return notes
