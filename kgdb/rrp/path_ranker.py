"""RRP's path ranker on a graph: candidates enumerated in Cypher (`kgdb.cypher.path_candidates`),
their features (the trained planner's log P(γ|q), question-relation cosines, reach), loading the
checkpoint, and `RankedPathPlanner`, a `PathPlanner` that `RelationPathRetriever` uses
in place of the GRU planner's beam when the checkpoint for the graph is a ranker
(`relation_path_retriever` picks it; MetaQA, with no ranker trained, keeps the beam planner).

The ranker's checkpoint names the planner checkpoint whose probabilities it reads and stores the
rethinking settings (mode, λ1, θ, how many top paths are grounded) chosen with it on val. A portable
ranker (`--portable`) reads no planner and no relation ids: it is trained on questions of several
graphs at once and reads the connected graph's relation table; the one shipped with kgdb
(`shipped_ranker`) answers on graphs with no RRP model of their own. A portable ranker is served in
numpy (`kgdb.rrp.scoring`), so answering with it imports no torch; this module imports
torch only to serve a graph's own ranker. Training it: `kgdb.rrp.ranker_training`.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator, Mapping, cast

import numpy as np

from kgdb.cypher import Graph
from kgdb.cypher.path_candidates import RelationPathCandidate, relation_paths_around
from kgdb.limits import RRP_STEP_SCAN
from kgdb.models.checkpoints import (
    Checkpoint,
)
from kgdb.protocol import relation_path_text
from kgdb.reading import Encoded, QuestionReading, Topics
from kgdb.reading.composition import Composition
from kgdb.reading.topics import names_first
from kgdb.rrp.plan import PathPlanner, Plan, PlannedPath, RelationPath, names_of
from kgdb.rrp.ranker_features import (
    RelationText,
    answer_ends,
    candidate_features,
    prefix_score,
    relation_wording,
    relations_directions,
)
from kgdb.rrp.scoring import NumpyPathRanker
from kgdb.scoring.path_tokens import text_features

RANKER = "rrp-ranker"
# A linked question's competing topics (`kgdb.reading.topics.names_first`) are ranked by link score +
# TOPIC_PATH_WEIGHT x the ranker's best raw path score from each (`RankedPathPlanner.choose_topic`). Chosen on
# the WebQSP training split on both graphs (docs/answering.md, "Linking by answerability").
TOPIC_PATH_WEIGHT = 0.05
CAP = 200  # frontier entities per hop, as grounding (the hop counts: `kgdb.cypher.path_candidates.candidate_hops`)
# A composition's inner answer names at most this many entities (`RankedPathPlanner.compose`): more is
# a class ("the films of …"), which the whole question's paths already read.
COMPOSED_ENDS = 10
# Read of a where / who question (`QuestionReading.encoded`: it asks for an entity, never a value): the
# first VALUE_ENDS_READ answers of each of the first `beam` paths (`RankedPathPlanner.scored`).
VALUE_ENDS_READ = 5


@dataclass
class _Question:
    """What the readings of one question share (`RankedPathPlanner.question`; outside it, the steps of one
    `plan` call): its candidates enumerated per topics (another reading of the same topics ranks the same
    ones) and the raw scores per reading (`choose_topic` ranks each candidate topic's; the plan, and the
    joint reading of a several-topic question, rank the same reading again)."""

    enumerated: dict[tuple, list] = field(default_factory=dict)  # topics -> candidates
    scores: dict[tuple, tuple[list, np.ndarray]] = field(default_factory=dict)  # (text, topics, reuse) -> ranked


_ONE_QUESTION: ContextVar[_Question | None] = ContextVar("kgdb_ranker_question", default=None)


Ranked = list[tuple[RelationPathCandidate, float]]  # candidates with their probability, best first


def _path_text(candidate: RelationPathCandidate) -> str:
    return relation_path_text(*relations_directions(candidate.steps))


def _inner_answers(graph: Graph, inner: RelationPathCandidate, topics: list[str]) -> tuple[list[str], dict[str, str]]:
    """The entities a composition's description names (at most COMPOSED_ENDS) and their names; literal
    values are dropped: a date or number has nothing to ask about."""
    ends = sorted(answer_ends(inner, set(topics)))
    rows = graph.run("entity_names", ids=ends) if len(ends) <= COMPOSED_ENDS else []
    names = {r["id"]: r["name"] for r in rows if not r["literal"]}
    return [e for e in ends if e in names], names


class RankedPathPlanner(PathPlanner):
    """`plan()` by ranking every enumerated relation path: the top `beam` with their probability
    under the ranker (softmax over the question's candidates) as the score. `model`: the torch
    `PathRanker` of a graph's own ranker, or the `NumpyPathRanker` a portable one is served by (no
    torch); `planner`: the trained planner whose log P(γ|q) a graph's own ranker reads (None for a
    portable ranker). Its plan holds every candidate's probability (`Plan.scored`, rethinking's S1
    of the structural reasoner's paths)."""

    name = RANKER
    beam: int

    def __init__(
        self,
        model,
        relations: RelationText,
        embedder,
        *,
        planner=None,
        hops: tuple[int, int] = (2, 3),
        beam: int = 10,
        checkpoint: Checkpoint | None = None,
        frontier_cap: int = CAP,
        hub_scan: int | None = None,
        prefixes: int | None = None,
        step_scan: int | None = RRP_STEP_SCAN,
    ):
        self.model, self.relations, self.embedder, self.planner = model.eval(), relations, embedder, planner
        self.hops, self.beam, self.checkpoint, self.frontier_cap = hops, beam, checkpoint, frontier_cap
        self.hub_scan, self.prefixes, self.step_scan = hub_scan, prefixes, step_scan
        # `compose` reads compositional questions in two steps (benchmarks/compositions.py turns it off to compare)
        self.compositions = True

    def describe(self) -> dict:
        """What enumerated the candidates, recorded next to results (`RelationPathRetriever.describe`)."""
        return {
            "candidates": {
                "hops": list(self.hops),
                "frontier_cap": self.frontier_cap,
                "hub_scan": self.hub_scan,
                "prefixes": self.prefixes,
                "step_scan": self.step_scan,
            }
        }

    def plan(self, graph: Graph, reading: QuestionReading, topics: Topics, names: Mapping[str, str]) -> Plan:
        """Choose the topic by answerability, rank the paths from it, then read a compositional question in
        two steps."""
        work = _ONE_QUESTION.get() or _Question()
        chosen = self.choose_topic(graph, reading, topics, work)
        if chosen is not topics:
            names = {e.id: e.name for e in chosen.linked if e.id in chosen.ids}
        named = names_of(chosen, names)
        q = self.encode(reading, list(named))
        ranked = self.scored(graph, q, chosen.ids, work=work)
        paths, composed = self.compose(graph, reading, chosen.ids, list(named), self.best_paths(ranked), work)
        return Plan(
            chosen,
            named,
            tuple(paths),
            q.text,
            q.vector,
            notes=(composed,) if composed else (),
            composed=composed,
            scored=tuple(ranked),
        )

    def best_paths(self, ranked: Ranked) -> list[PlannedPath]:
        """The first `beam` ranked candidates as planned paths, their probability the score."""
        out = []
        for c, p in ranked[: self.beam]:
            relations, directions = relations_directions(c.steps)
            out.append(PlannedPath(relations, p, directions))
        return out

    def path_probability(self, plan: Plan, paths: list[RelationPath]) -> list[float]:
        """The ranker's probability of given relation paths among the plan's candidates; 0 for a path not among them."""
        seen = {relations_directions(c.steps): p for c, p in plan.scored}
        return [seen.get(cast(RelationPath, tuple(p)), 0.0) for p in paths]

    @contextmanager
    def question(self) -> Iterator[None]:
        """One question's readings share their enumerated candidates and raw scores (`_Question`)."""
        token = _ONE_QUESTION.set(_Question())
        try:
            yield
        finally:
            _ONE_QUESTION.reset(token)

    def encode(
        self,
        reading: QuestionReading,
        topic_names: list[str],
        part: Composition | None = None,
        answer: str | None = None,
    ) -> Encoded:
        """What the ranker reads of the question (or of a part of a composed one) without `topic_names`."""
        return reading.encoded(self.embedder.encode, topic_names, part=part, answer=answer)

    def choose_topic(
        self, graph: Graph, reading: QuestionReading, found: Topics, work: _Question | None = None
    ) -> Topics:
        """`found` (topics linked from the text) with its topic chosen by answerability: among the
        first TOPIC_CANDIDATES mentioned candidates (none of them a word inside another's longer
        mention) within TOPIC_LINK_MARGIN of the best link score, the one whose link score +
        TOPIC_PATH_WEIGHT x the best raw score the ranker gives a relation path from it is highest
        (ties: link order). A namesake or a generic word ("Time" in "when was the last time the knicks
        won") has no path the question asks for; the entity it is about has one. A candidate linked
        from words that another's best path reads (`relation_wording`) does not compete, nor a word of the
        wording where the question writes a name (`names_first`). `work` keeps the
        enumerations and raw scores for the rest of the plan."""
        candidates = names_first(reading, found) if found.source == "linked" else []
        if len(candidates) < 2:
            return replace(found, ids=[candidates[0].id]) if candidates and found.ids != [candidates[0].id] else found
        work = _Question() if work is None else work
        ranked = {}
        for e in candidates:
            ranked[e.id] = self._raw_scores(graph, self.encode(reading, [e.name]), [e.id], work=work)

        def total(e) -> float:
            scores = ranked[e.id][1]
            return e.score + (TOPIC_PATH_WEIGHT * float(scores.max()) if len(scores) else -1e9)  # no path: last

        wording = relation_wording(
            candidates, {i: r[0][int(np.argmax(r[1]))].steps for i, r in ranked.items() if len(r[1])}
        )
        best = max([e for e in candidates if e.id not in wording] or candidates, key=total)
        return replace(found, ids=[best.id])

    def _raw_scores(
        self,
        graph: Graph,
        q: Encoded,
        topics: list[str],
        *,
        reuse: bool = False,
        work: _Question | None = None,
    ) -> tuple[list, np.ndarray]:
        """The answer-bearing candidate paths around `topics` and the ranker's raw score of each.
        `reuse`: rank the candidates this question first enumerated around the same topics (for the
        whole question's text) instead of enumerating them again for another reading of it."""
        work = _Question() if work is None else work
        key = (q.text, tuple(topics), reuse)
        if key not in work.scores:
            work.scores[key] = self._rank_candidates(graph, q.text, q.vector, topics, reuse, work)
        return work.scores[key]

    def _rank_candidates(
        self, graph: Graph, text: str, q_emb: np.ndarray, topics: list[str], reuse: bool, work: _Question
    ) -> tuple[list, np.ndarray]:
        if reuse and tuple(topics) in work.enumerated:
            candidates = work.enumerated[tuple(topics)]
        else:
            candidates = relation_paths_around(
                graph,
                topics,
                max_hops=self.hops[0],
                cvt_hops=self.hops[1],
                cap=self.frontier_cap,
                hub_scan=self.hub_scan,
                prefixes=self.prefixes,
                step_scan=self.step_scan,
                prefix_score=prefix_score(self.relations, q_emb),
            )
            work.enumerated.setdefault(tuple(topics), candidates)
        kept, tokens, dense = candidate_features(
            self.relations, text, q_emb, topics, candidates, max_hops=self.model.cfg.max_hops, planner=self.planner
        )
        if not kept:
            return [], np.zeros(0, np.float32)
        words = text_features(text, self.model.cfg.buckets)
        if isinstance(self.model, NumpyPathRanker):
            from kgdb.blas import blas_threads

            with blas_threads(
                1
            ):  # one question: latency-bound, where extra BLAS threads only spin-wait on a busy machine
                return kept, self.model.scores(q_emb, words, tokens, dense)
        from kgdb.rrp.training.path_ranker import RankerExample, rank_scores

        none = np.zeros(len(kept), np.float32)
        return kept, rank_scores(
            self.model,
            RankerExample("", np.asarray(q_emb, np.float32), words, tokens, dense, none.astype(bool), none, none),
        )

    def compose(
        self,
        graph: Graph,
        reading: QuestionReading,
        topics: list[str],
        topic_names: list[str],
        plans: list[PlannedPath],
        work: _Question | None = None,
    ) -> tuple[list[PlannedPath], str | None]:
        """`plans` (the whole question's) read as a composition where the question describes its
        answer's subject through the topic (`kgdb.reading.composition`: "where was [the director of
        avatar] born?"), and a note saying so; else `plans` unchanged and None.

        The reading applies only when the whole question's best path has a description's shape (one
        hop, or two through a CVT node): the ranker then answered the description, not the question,
        on a dense graph often with another relation than the inner question picks ("the director of
        argo" read as its producers); and only when that path is not also the best path of the outer
        words asked of the topic itself (then the description adds nothing: an apposition, "the state
        of michigan"), unless the description is read with another relation (the whole question read
        as its outer words alone: "where was [the wife of X] born?") or is a relative clause ("the
        country that appointed X", never X itself). The inner question's best path
        describes the entity: its ends (at most COMPOSED_ENDS, literal values dropped: a date has
        nothing to ask about) become the topics of the outer question, whose best path continues the
        inner one. The composed path takes the best path's score; the whole question's best path keeps
        score × (1 - the outer path's probability) and stays among the plans (an "other reading" where
        the outer path is unsure). Chosen on the
        WebQSP and MetaQA training splits and two hand-written compositional dev sets (the default data;
        the distractor graph for the shape rule); the apposition rule after a look at WebQSP test
        (docs/experiments/2026-11-26-compositional-questions.md), its exception and descriptions
        through CVT nodes on the WebQSP, CWQ and MetaQA training and val splits
        (docs/experiments/2026-11-28-descriptions-through-cvt-nodes.md), relative clauses on the same
        (docs/experiments/2026-11-28-relative-clauses.md)."""
        composition = reading.composition(topic_names[0]) if self.compositions and len(topics) == 1 and plans else None
        if composition is None:
            return plans, None
        work = _Question() if work is None else work
        inner, describes = self._descriptions(graph, reading, composition, topics, topic_names, work)
        best_steps = tuple(zip(plans[0].relations, plans[0].directions))
        if not inner or not describes(best_steps):
            return plans, None
        # the outer words asked of the topic itself read the best path too, and so does the description:
        # it adds nothing (an apposition, "what timezone is [the state of michigan]?"); a description read
        # with another relation does ("where was [the wife of X] born?" read whole as "where was X born?"),
        # and a relative clause names another entity than the topic, never the topic itself ("who was the
        # vice president of [the president who attended X]?": every reading goes to the president)
        if (
            not composition.clause
            and tuple(inner[0].steps)[:1] == best_steps[:1]
            and self._asked_of_topic(graph, reading, composition, topics, topic_names, work) == best_steps
        ):
            return plans, None
        ends, names = _inner_answers(graph, inner[0], topics)
        if not ends:
            return plans, None
        q = self.encode(reading, [names[e] for e in ends], composition, names[ends[0]].lower())
        outer = self.scored(graph, q, ends, work=work)
        if not outer:
            return plans, None
        return self._composed(plans, composition, inner[0], outer[0], [names[e] for e in ends])

    def _descriptions(
        self,
        graph: Graph,
        reading: QuestionReading,
        composition: Composition,
        topics: list[str],
        topic_names: list[str],
        work: _Question,
    ) -> tuple[list, Callable[[tuple], bool]]:
        """The inner question's ranked candidates that have a description's shape (one hop, or two
        through a CVT node), and that shape as a test of steps."""
        # the description and the outer words asked of the topic are read over the whole question's
        # candidates: enumerating them again with each reading's own prefixes gave the same answers on
        # the training splits and dev sets, at a seventh more time per question on a 50M-triple graph
        q = self.encode(reading, topic_names, composition)
        # a description names an entity, never a value ("the author of war and peace" is not its date of publication)
        inner = self._without_values(graph, self.scored(graph, q, topics, reuse=True, work=work), topics)
        # a step to CVT nodes only answers nothing, so it is found among every enumerated path ("the wife
        # of X": people.person.spouse_s, then people.marriage.spouse)
        to_cvt = {c.steps for c in work.enumerated.get(tuple(topics), []) if len(c.steps) == 1 and c.cvt}

        def describes(steps) -> bool:
            return len(steps) == 1 or (len(steps) == 2 and steps[:1] in to_cvt)

        return [c for c, _ in inner if describes(c.steps)], describes

    def _asked_of_topic(
        self,
        graph: Graph,
        reading: QuestionReading,
        composition: Composition,
        topics: list[str],
        topic_names: list[str],
        work: _Question,
    ) -> tuple:
        """The best path of the outer words asked of the topic itself ("where was avatar born?"); () for none."""
        q = self.encode(reading, topic_names, composition, topic_names[0].lower())
        at_topic = self.scored(graph, q, topics, reuse=True, work=work)
        return tuple(at_topic[0][0].steps) if at_topic else ()

    def _composed(
        self,
        plans: list[PlannedPath],
        composition: Composition,
        inner: RelationPathCandidate,
        outer: tuple[RelationPathCandidate, float],
        ends: list[str],
    ) -> tuple[list[PlannedPath], str]:
        """The composed path first with the best path's score, then the best path with score × (1 - the
        outer path's probability) and the other plans; and the note saying so (`ends`: the inner answers' names)."""
        last, p_outer = outer
        best = plans[0]
        relations, directions = relations_directions(inner.steps + last.steps)
        others = [p for p in plans[1:] if (p.relations, p.directions) != (relations, directions)]
        rest = sorted([replace(best, score=best.score * (1.0 - p_outer))] + others, key=lambda p: -p.score)
        shown = ", ".join(ends[:3]) + (f" and {len(ends) - 3} more" if len(ends) > 3 else "")
        note = (
            f"read as a composition: {composition.phrase!r} is {shown} ({_path_text(inner)}), "
            f"then {composition.outer('…')!r} from there ({_path_text(last)}, {p_outer:.3g})"
        )
        return [PlannedPath(relations, best.score, directions)] + rest[: self.beam - 1], note

    def scored(
        self,
        graph: Graph,
        q: Encoded,
        topics: list[str],
        *,
        reuse: bool = False,
        work: _Question | None = None,
    ) -> Ranked:
        """Every answer-bearing candidate path with its probability, best first (`reuse`: `_raw_scores`)."""
        kept, s = self._raw_scores(graph, q, topics, reuse=reuse, work=work)
        if not kept:
            return []
        p = np.exp(s - s.max())
        p /= p.sum()
        order = np.argsort(-p, kind="stable")
        ranked = [(kept[i], float(p[i])) for i in order]
        return self._without_values(graph, ranked, topics) if q.asks_for_an_entity else ranked

    def _without_values(self, graph: Graph, ranked: Ranked, topics: list[str]) -> Ranked:
        """`ranked` (a where / who question's, a description's) without the paths among its first `beam`
        whose answers are all literal values, the others' probabilities renormalised; unchanged when every
        one of the first `beam` answers with values (the graph has nothing else to say)."""
        tset = set(topics)
        read = {id(c): sorted(answer_ends(c, tset))[:VALUE_ENDS_READ] for c, _ in ranked[: self.beam]}
        ids = sorted({e for ends in read.values() for e in ends})
        if not ids:
            return ranked
        rows = graph.run("entity_names", ids=ids)
        literal = {r["id"] for r in rows if r["literal"]}
        values = {key for key, ends in read.items() if ends and all(e in literal for e in ends)}
        if not values or len(values) == len(read):
            return ranked
        kept = [(c, p) for c, p in ranked if id(c) not in values]
        total = sum(p for _, p in kept)
        return [(c, p / total) for c, p in kept]
