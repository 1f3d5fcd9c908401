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

import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Callable, Iterator, Mapping, cast

import numpy as np

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.cypher.linking import LinkedEntity, Topics, capitalised, written_as_name
from kgdb.cypher.path_candidates import RelationPathCandidate, candidate_hops, relation_paths_around
from kgdb.cypher.tables import graph_fingerprint
from kgdb.data.composition import Composition, split_composition
from kgdb.embeddings import get_embedder
from kgdb.limits import RRP_STEP_SCAN
from kgdb.models.checkpoints import (
    Checkpoint,
    CheckpointError,
    NoCheckpointError,
    checkpoint_for_graph,
    find_checkpoint,
)
from kgdb.protocol import relation_path_text
from kgdb.rrp.plan import PathPlanner, Plan, PlannedPath, RelationPath, names_of
from kgdb.rrp.planners import encode_question, load_planner, load_relation_model
from kgdb.rrp.scoring import PLANNER_FEATURES, PORTABLE_FEATURES, NumpyPathRanker, RankerConfig
from kgdb.scoring.path_tokens import text_features, token_of

RANKER = "rrp-ranker"
CAP = 200  # frontier entities per hop, as grounding (the hop counts: `kgdb.cypher.path_candidates.candidate_hops`)
# Topics linked from the text: the first TOPIC_CANDIDATES mentioned candidates within TOPIC_LINK_MARGIN
# of the best link score compete on link score + TOPIC_PATH_WEIGHT x the ranker's best raw path score
# from each (`RankedPathPlanner.choose_topic`). Chosen on the WebQSP training split on both graphs
# (docs/answering.md, "Linking by answerability"); the margin keeps ~95 % of the gain at half the rankings.
TOPIC_CANDIDATES = 3
TOPIC_PATH_WEIGHT = 0.05
TOPIC_LINK_MARGIN = 0.3
# At most this many of them share one mention: a word that names many things alike ("national anthem":
# Chile's, Afghanistan's, Russia's) would otherwise take every place from the name the question is about
# ("the national anthem of the place where Tsakhur is spoken"). Chosen on the CWQ training split.
NAMESAKES_COMPETING = 2
# A name the question writes in quotes or with capitals competes alone (`names_first`), from as far as
# NAME_LINK_MARGIN below the best link score. Chosen on the CWQ training split, topics linked (0.5 against
# 0.8; docs/experiments/2026-11-28-names-as-the-writer-marks-them.md).
NAME_LINK_MARGIN = 0.5
# A composition's inner answer names at most this many entities (`RankedPathPlanner.compose`): more is
# a class ("the films of …"), which the whole question's paths already read.
COMPOSED_ENDS = 10
# A question whose first question word is "where" or "who" asks for an entity (a place, a person),
# never for a value: a relation path whose answers are all literal values (dates, numbers) does not
# answer it. "where did george orwell die?" is not his date of death, which the ranker scored above his
# place of death. "whose" is left out: it is mostly relative ("when did the movies release whose
# actors …"). The WebQSP and MetaQA train and val splits hold no such question whose gold answer is a
# value. Read: the first VALUE_ENDS_READ answers of each of the first `beam` paths (`RankedPathPlanner.scored`).
QUESTION_WORD = re.compile(r"\b(what|which|when|where|who|whom|how|why)\b")
VALUE_ENDS_READ = 5


def asks_for_an_entity(text: str) -> bool:
    first = QUESTION_WORD.search(text.lower())
    return first is not None and first.group(1) in ("where", "who", "whom")


def relations_directions(steps) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """A candidate's steps ((relation, direction), ...) as a `PlannedPath`'s relations and directions."""
    return tuple(r for r, _ in steps), tuple(d for _, d in steps)


def answer_ends(c, topics: set[str]) -> set[str]:
    """The entities a candidate answers with: its ends that are neither topics nor CVT nodes."""
    return c.ends - topics - c.cvt


@dataclass(frozen=True)
class RelationText:
    """The relation vocabulary a ranker reads: relation names and their text vectors `table` [R, d]
    (a candidate's tokens index its rows)."""

    names: list[str]
    table: np.ndarray

    @classmethod
    def of(cls, names: list[str], table) -> "RelationText":
        # a torch tensor (a graph's own planner's table) is told apart without importing torch
        return cls(
            list(names),
            np.asarray(table if isinstance(table, np.ndarray) else table.detach().cpu().numpy(), np.float32),
        )

    @cached_property
    def index(self) -> dict[str, int]:
        return {r: i for i, r in enumerate(self.names)}

    @cached_property
    def unit(self) -> np.ndarray:
        return self.table / np.maximum(np.linalg.norm(self.table, axis=1, keepdims=True), 1e-12)


def _singular(words) -> set[str]:
    return {w[:-1] if w.endswith("s") else w for w in words}


def relation_wording(candidates, best_steps: dict) -> set[str]:
    """Ids of the linked `candidates` whose mention is worded by another candidate's best relation path
    (`best_steps`: id -> steps; words compared without a plural s). In "what was the cause of death
    for bruce lee?" the entity "Cause of death" is linked from words that Bruce Lee's path
    `people.deceased_person.cause_of_death` reads: the question asks that relation of Bruce Lee.
    Chosen on the WebQSP and MetaQA training splits (docs/answering.md, "Linking by answerability")."""
    from kgdb.embeddings import relation_text

    read = {
        i: _singular(w for relation, _ in steps for w in relation_text(relation).lower().split())
        for i, steps in best_steps.items()
    }
    return {
        e.id
        for e in candidates
        for other in candidates
        if other.id in read
        and not set(e.mention.split()) & set(other.mention.split())
        and _singular(e.mention.split()) <= read[other.id]
    }


def graph_relations(graph: Graph, settings: Settings) -> RelationText:
    """The connected graph's relation table, as a portable ranker reads it."""
    from kgdb.cypher.tables import open_tables

    tables = open_tables(graph, settings.cache_dir)
    return RelationText.of(tables.relation_names, tables.relation)


def prefix_score(relations: RelationText, q_emb: np.ndarray) -> Callable[[tuple], float]:
    """How question-like a relation path is, for the enumeration's prefix bound: the largest cosine
    between the question and its steps' relations (the ranker's own `cos_max` feature); -1 for a
    relation the table lacks."""
    cos = relations.unit @ (np.asarray(q_emb, np.float32) / (np.linalg.norm(q_emb) or 1.0))
    index = relations.index
    return lambda steps: max(float(cos[index[r]]) if r in index else -1.0 for r, _ in steps)


def candidate_features(
    relations: RelationText, text: str, q_emb: np.ndarray, topics: list[str], candidates, *, max_hops: int, planner=None
) -> tuple[list, np.ndarray, np.ndarray]:
    """(answer-bearing candidates of at most `max_hops` steps, tokens [N, H], dense [N, F]) of one
    question: `PORTABLE_FEATURES`, preceded by `PLANNER_FEATURES` (the log P(γ|q) of the trained
    `planner`, whose relation table `relations` then is) when a planner is given."""
    index, tset = relations.index, set(topics)
    kept = [
        c
        for c in candidates
        if answer_ends(c, tset) and len(c.steps) <= max_hops and all(r in index for r, _ in c.steps)
    ]
    tokens = _step_tokens(kept, index)
    if not kept:
        width_f = len(PORTABLE_FEATURES) + (len(PLANNER_FEATURES) if planner is not None else 0)
        return kept, tokens, np.zeros((0, width_f), np.float32)
    columns = _planner_columns(planner, text, q_emb, kept, tokens) if planner is not None else []
    return kept, tokens, np.stack(columns + _portable_columns(relations, q_emb, kept, tset), axis=1).astype(np.float32)


def _step_tokens(kept: list, index: dict[str, int]) -> np.ndarray:
    """[N, H] tokens of the candidates' (relation, direction) steps, 0-padded."""
    tokens = np.zeros((len(kept), max((len(c.steps) for c in kept), default=1)), np.int64)
    for i, c in enumerate(kept):
        tokens[i, : len(c.steps)] = [token_of(index[r], d) for r, d in c.steps]
    return tokens


def _planner_columns(planner, text: str, q_emb: np.ndarray, kept: list, tokens: np.ndarray) -> list[np.ndarray]:
    """`PLANNER_FEATURES`: the trained planner's log P(γ|q) of each candidate, scaled, and its gap to the best."""
    import torch

    from kgdb.rrp.models.planner import pack_questions

    model = planner.model
    with torch.no_grad():
        stop = np.concatenate([tokens, np.zeros((len(kept), 1), np.int64)], axis=1)
        stop[stop == 0] = -1
        stop[np.arange(len(kept)), [len(c.steps) for c in kept]] = 0  # STOP after the last step, padding after it
        q = torch.from_numpy(np.asarray(q_emb, np.float32))[None].expand(len(kept), -1)
        words, offsets = pack_questions([text_features(text, model.cfg.buckets)] * len(kept))
        logp = model.log_prob(q, words, offsets, torch.from_numpy(stop)).clamp(min=-50.0).numpy()
    return [logp / 10, (logp - logp.max()) / 10]


def _portable_columns(relations: RelationText, q_emb: np.ndarray, kept: list, tset: set[str]) -> list[np.ndarray]:
    """`PORTABLE_FEATURES` of the candidates: question-relation cosines, length, answers, CVT share, topics, reach."""
    index = relations.index
    qn = np.asarray(q_emb, np.float32) / (np.linalg.norm(q_emb) or 1.0)
    # one dot product per distinct relation, the same one per step as before (a matrix product
    # would change the last bits): thousands of candidates share a few hundred relations
    rel_cos = {r: float(relations.unit[index[r]] @ qn) for r in {r for c in kept for r, _ in c.steps}}
    cos = [[rel_cos[r] for r, _ in c.steps] for c in kept]
    n_ans = np.array([len(answer_ends(c, tset)) for c in kept], np.float32)
    hops = np.array([len(c.steps) for c in kept])
    cmax = np.array([max(x) for x in cos], np.float32)
    return [
        cmax,
        np.array([sum(x) / len(x) for x in cos], np.float32),
        np.array([x[-1] for x in cos], np.float32),
        cmax - cmax.max(),
        hops == 1,
        hops == 2,
        hops == 3,
        np.log1p(n_ans) / 5,
        n_ans == 1,
        np.array([len(c.cvt) / max(len(c.ends), 1) for c in kept], np.float32),
        np.array([len(c.topics) / max(len(tset), 1) for c in kept], np.float32),
        np.log1p(np.array([c.reached for c in kept], np.float32)) / 5,
    ]


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


def competing_topics(
    found: Topics, first: int = TOPIC_CANDIDATES, margin: float = TOPIC_LINK_MARGIN
) -> list[LinkedEntity]:
    """The linked candidates that compete to be the topic (`RankedPathPlanner.choose_topic`): the `first`
    mentioned candidates (at most NAMESAKES_COMPETING of one mention) within `margin` of the best link
    score; with a wider count and margin, those a several-topic question is read from when it was linked
    (`kgdb.rrp.retriever.topics_to_join`)."""
    candidates: list[LinkedEntity] = []
    for e in found.linked:
        if not e.mention or sum(c.mention == e.mention for c in candidates) >= NAMESAKES_COMPETING:
            continue
        # a word inside a longer mention ("stone" in "philip stone") stays below it, as the linker ranks it
        if not any(len(c.mention or "") > len(e.mention) and f" {e.mention} " in f" {c.mention} " for c in candidates):
            candidates.append(e)
    return [e for e in candidates[:first] if e.score >= candidates[0].score - margin] if candidates else []


def names_first(question: str, found: Topics) -> list[LinkedEntity]:
    """Of the candidates that compete to be the topic (`competing_topics`), those the question writes as
    names (`written_as_name`: in quotes, or capitalised by a writer who capitalises names); else the names
    among the first TOPIC_CANDIDATES mentioned candidates within NAME_LINK_MARGIN of the best link score;
    else all the competing candidates. A common word of the wording ("the writer who produced the lyrics
    for \"Kaaren\"", "the religion which includes Zhang Jue") links high as a class entity (Writer,
    Religion) and is seldom what the question is about."""
    written = capitalised(question)
    candidates = competing_topics(found)
    # competing_topics keeps the candidates with a mention only
    names = [e for e in candidates if written_as_name(question, cast(str, e.mention), written)]
    if names:
        return names
    wider = competing_topics(found, TOPIC_CANDIDATES, NAME_LINK_MARGIN)
    return [e for e in wider if written_as_name(question, cast(str, e.mention), written)] or candidates


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

    def plan(self, graph: Graph, question: str, topics: Topics, names: Mapping[str, str]) -> Plan:
        """Choose the topic by answerability, rank the paths from it, then read a compositional question in
        two steps."""
        work = _ONE_QUESTION.get() or _Question()
        chosen = self.choose_topic(graph, question, topics, work)
        if chosen is not topics:
            names = {e.id: e.name for e in chosen.linked if e.id in chosen.ids}
        named = names_of(chosen, names)
        text, emb = self.encode(question, list(named))
        ranked = self.scored(graph, text, emb, chosen.ids, work=work)
        paths, composed = self.compose(graph, question, chosen.ids, list(named), self.best_paths(ranked), work)
        return Plan(
            chosen,
            named,
            tuple(paths),
            text,
            emb,
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

    def encode(self, question: str, topic_names: list[str]) -> tuple[str, np.ndarray]:
        return encode_question(self.embedder, question, topic_names)

    def choose_topic(self, graph: Graph, question: str, found: Topics, work: _Question | None = None) -> Topics:
        """`found` (topics linked from the text) with its topic chosen by answerability: among the
        first TOPIC_CANDIDATES mentioned candidates (none of them a word inside another's longer
        mention) within TOPIC_LINK_MARGIN of the best link score, the one whose link score +
        TOPIC_PATH_WEIGHT x the best raw score the ranker gives a relation path from it is highest
        (ties: link order). A namesake or a generic word ("Time" in "when was the last time the knicks
        won") has no path the question asks for; the entity it is about has one. A candidate linked
        from words that another's best path reads (`relation_wording`) does not compete, nor a word of the
        wording where the question writes a name (`names_first`). `work` keeps the
        enumerations and raw scores for the rest of the plan."""
        candidates = names_first(question, found) if found.source == "linked" else []
        if len(candidates) < 2:
            return replace(found, ids=[candidates[0].id]) if candidates and found.ids != [candidates[0].id] else found
        work = _Question() if work is None else work
        ranked = {}
        for e in candidates:
            text, emb = self.encode(question, [e.name])
            ranked[e.id] = (text, *self._raw_scores(graph, text, emb, [e.id], work=work))

        def total(e) -> float:
            scores = ranked[e.id][2]
            return e.score + (TOPIC_PATH_WEIGHT * float(scores.max()) if len(scores) else -1e9)  # no path: last

        wording = relation_wording(
            candidates, {i: r[1][int(np.argmax(r[2]))].steps for i, r in ranked.items() if len(r[2])}
        )
        best = max([e for e in candidates if e.id not in wording] or candidates, key=total)
        return replace(found, ids=[best.id])

    def _raw_scores(
        self,
        graph: Graph,
        text: str,
        q_emb: np.ndarray,
        topics: list[str],
        *,
        reuse: bool = False,
        work: _Question | None = None,
    ) -> tuple[list, np.ndarray]:
        """The answer-bearing candidate paths around `topics` and the ranker's raw score of each.
        `reuse`: rank the candidates this question first enumerated around the same topics (for the
        whole question's text) instead of enumerating them again for another reading of it."""
        work = _Question() if work is None else work
        key = (text, tuple(topics), reuse)
        if key not in work.scores:
            work.scores[key] = self._rank_candidates(graph, text, q_emb, topics, reuse, work)
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
        question: str,
        topics: list[str],
        topic_names: list[str],
        plans: list[PlannedPath],
        work: _Question | None = None,
    ) -> tuple[list[PlannedPath], str | None]:
        """`plans` (the whole question's) read as a composition where the question describes its
        answer's subject through the topic (`kgdb.data.composition`: "where was [the director of
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
        composition = (
            split_composition(question, topic_names[0]) if self.compositions and len(topics) == 1 and plans else None
        )
        if composition is None:
            return plans, None
        work = _Question() if work is None else work
        inner, describes = self._descriptions(graph, composition, topics, topic_names, work)
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
            and self._asked_of_topic(graph, composition, topics, topic_names, work) == best_steps
        ):
            return plans, None
        ends, names = _inner_answers(graph, inner[0], topics)
        if not ends:
            return plans, None
        text, emb = self.encode(composition.outer(names[ends[0]].lower()), [names[e] for e in ends])
        outer = self.scored(graph, text, emb, ends, work=work)
        if not outer:
            return plans, None
        return self._composed(plans, composition, inner[0], outer[0], [names[e] for e in ends])

    def _descriptions(
        self, graph: Graph, composition: Composition, topics: list[str], topic_names: list[str], work: _Question
    ) -> tuple[list, Callable[[tuple], bool]]:
        """The inner question's ranked candidates that have a description's shape (one hop, or two
        through a CVT node), and that shape as a test of steps."""
        # the description and the outer words asked of the topic are read over the whole question's
        # candidates: enumerating them again with each reading's own prefixes gave the same answers on
        # the training splits and dev sets, at a seventh more time per question on a 50M-triple graph
        text, emb = self.encode(composition.inner, topic_names)
        # a description names an entity, never a value ("the author of war and peace" is not its date of publication)
        inner = self._without_values(graph, self.scored(graph, text, emb, topics, reuse=True, work=work), topics)
        # a step to CVT nodes only answers nothing, so it is found among every enumerated path ("the wife
        # of X": people.person.spouse_s, then people.marriage.spouse)
        to_cvt = {c.steps for c in work.enumerated.get(tuple(topics), []) if len(c.steps) == 1 and c.cvt}

        def describes(steps) -> bool:
            return len(steps) == 1 or (len(steps) == 2 and steps[:1] in to_cvt)

        return [c for c, _ in inner if describes(c.steps)], describes

    def _asked_of_topic(
        self, graph: Graph, composition: Composition, topics: list[str], topic_names: list[str], work: _Question
    ) -> tuple:
        """The best path of the outer words asked of the topic itself ("where was avatar born?"); () for none."""
        text, emb = self.encode(composition.outer(topic_names[0].lower()), topic_names)
        at_topic = self.scored(graph, text, emb, topics, reuse=True, work=work)
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
        text: str,
        q_emb: np.ndarray,
        topics: list[str],
        *,
        reuse: bool = False,
        work: _Question | None = None,
    ) -> Ranked:
        """Every answer-bearing candidate path with its probability, best first (`reuse`: `_raw_scores`)."""
        kept, s = self._raw_scores(graph, text, q_emb, topics, reuse=reuse, work=work)
        if not kept:
            return []
        p = np.exp(s - s.max())
        p /= p.sum()
        order = np.argsort(-p, kind="stable")
        ranked = [(kept[i], float(p[i])) for i in order]
        return self._without_values(graph, ranked, topics) if asks_for_an_entity(text) else ranked

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


def load_ranker(
    graph: Graph, settings: Settings, checkpoint: str | None = None, *, beam: int | None = None
) -> RankedPathPlanner | None:
    """The ranker: the named checkpoint (a name or a folder) if it is one (None when it names another
    kind, e.g. a planner), else the newest ranker trained on this graph, else None. A portable
    ranker reads the connected graph's relation table; a graph's own ranker, its planner's."""
    if checkpoint:
        found = find_checkpoint(checkpoint, settings.checkpoints_dir)
        if found.config.get("retriever") != RANKER:
            return None
    else:
        try:
            found = checkpoint_for_graph(settings.checkpoints_dir, RANKER, graph_fingerprint(graph)[0])
        except NoCheckpointError:
            return None
    relations: list[RelationText] = []

    def build(cfg: dict, state: dict):
        config = RankerConfig(**cfg)
        if not config.portable:
            from kgdb.rrp.models.path_ranker import PathRanker

            return PathRanker(config, state["relation_emb"])
        # Weights without a relation table (the connected graph's), scored in numpy: plain `kgdb ask` imports no torch.
        relations.append(graph_relations(graph, settings))
        return NumpyPathRanker(config, state, relations[0].table)

    portable = bool((found.config.get("model") or {}).get("portable"))
    model, ckpt = load_relation_model(graph, settings, str(found.path), RANKER, build, "--checkpoint", arrays=portable)
    tuned = ckpt.config.get("rethinking") or {}
    common = {
        "hops": candidate_hops(graph),
        "beam": beam or int(tuned.get("beam", 10)),
        "checkpoint": ckpt,
        "hub_scan": settings.fetch_hub_scan,
        "prefixes": settings.rrp_prefixes,
        "step_scan": settings.rrp_step_scan,
    }
    if model.cfg.portable:
        embedder = get_embedder(
            ckpt.config.get("embedding_model") or settings.embedding_model,
            settings.device,
            settings.embedding_batch_size,
        )
        return RankedPathPlanner(model, relations[0], embedder, **common)
    planner = load_planner(graph, settings, ckpt.config.get("planner"))
    return RankedPathPlanner(
        model,
        RelationText.of(planner.relation_names, planner.model.relation_emb),
        planner.embedder,
        planner=planner,
        **common,
    )


def shipped_ranker(graph: Graph, settings: Settings, *, beam: int | None = None) -> RankedPathPlanner | None:
    """The portable ranker shipped with kgdb (`kgdb.models.default`), or None when this install has
    none or it does not fit the graph's embedding model."""
    from kgdb.models.default import shipped_checkpoint

    folder = shipped_checkpoint(RANKER)
    if folder is None:
        return None
    try:
        return load_ranker(graph, settings, str(folder), beam=beam)
    except CheckpointError:  # the graph was embedded with another model
        return None
