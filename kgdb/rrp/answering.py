"""How RRP answers from grounded relation paths, as plain rules over plain values: which paths a mode
keeps (`select`), each answer's best score, the answers tied at the best, and the weighing of paths by
how close their answers are to the question (`weigh_by_answer_closeness`). `RelationPathRetriever`
answers with them, and the tuning of λ1, θ and the closeness weight scores them offline (`answers_of`,
`score_mode`): one leaf module that imports nothing of the pipeline, so neither side imports the other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Iterable

from kgdb.protocol import ScoredPath

if TYPE_CHECKING:
    from kgdb.reading import QuestionReading, Topics

# planner: the planner's paths alone; structural: the structural reasoner's alone; union: both unscored;
# rethink: both scored S = λ1·S1 + (1-λ1)·S2 (RRP §IV-C)
MODES = ("planner", "structural", "union", "rethink")
ABLATIONS = MODES
ENDS_PER_PATH = (
    5  # answers per relation path read (the first by id): WebQSP / MetaQA val choose the same with all of them
)


@dataclass
class GroundedPath:
    """A relation path grounded to one entity path, with its triples and the planner's score."""

    path: ScoredPath
    triples: list[tuple]  # (elementId, head, relation, tail) per step
    s1: float  # the planner's P(relation path | q)


@dataclass
class Gathered:
    """One question's candidate paths of both modules, unfiltered (`RelationPathRetriever.gather`)."""

    found: Topics
    names: dict[str, str]
    cvt: set[str]
    planned: list[GroundedPath]  # grounded planner paths, score = S1
    structural: list[GroundedPath]  # traced back from P^n, score = S2
    s2: dict[str, float]  # entity id -> S2
    timings: dict[str, float]
    notes: list[str]
    closeness: Callable[
        [list[str]], dict[str, float]
    ]  # answer ids -> closeness to the question (`RelationPathRetriever._closeness`)
    usage: dict | None = None  # the LLM planner's calls and tokens (None: no LLM planned)
    # several topics: the paths of the answers reached from the most of them (`kgdb.rrp.joint_topics`);
    # when there are any, they are the answer paths of every mode
    joint: list[GroundedPath] = field(default_factory=list)
    # answers tied at the best score, in order -> those that have the attribute the question asks about or
    # meet its literal constraint ("the last time", "after 2000") first
    # (`kgdb.rrp.retriever.answer_constraints`); as given without one
    constrain: Callable[[list[str]], list[str]] = list
    composed: bool = False  # the plan read the question as a composition (`RankedPathPlanner.compose`)
    reading: QuestionReading | None = None  # the question as read and linked (`RelationPathRetriever.gather`)
    # candidate id -> its relationship types, `out:` / `in:` (`type_features`), read where the question asks
    # for a kind of thing ("which *country*"); the answer model's type feature
    answer_types: dict[str, frozenset[str]] = field(default_factory=dict)


@dataclass
class QuestionPaths:
    """One question's candidate paths of both modules (`RelationPathRetriever.gather`), for scoring
    rethinking settings offline: one database pass, any number of (mode, λ1, θ)."""

    qid: str
    gold: set[str]  # answer entity ids
    gathered: Gathered | None  # None: retrieval failed


def select(
    mode: str,
    planned: list[GroundedPath],
    structural: list[GroundedPath],
    s2: dict[str, float],
    topics: list[str],
    cvt: set[str],
    lambda1: float,
    theta: float,
) -> list[GroundedPath]:
    """The answer-bearing paths of a mode. `rethink` (RRP §IV-C, Eqs. 9-11): every path of both
    modules scored S = λ1·S1 + (1-λ1)·S2, kept when S > θ·max S (the best one always), best first,
    one per (entities, relations); θ is relative because S1 and S2 are probabilities whose scale
    varies by question (a one-answer and a fifty-answer question), where the paper's cosines do not.
    S1: the planner's P(relation path | q), S2: the structural reasoner's normalised P^n of the path's
    end entity: probabilities, where the paper's cosines of LLM and GNN vectors would need embeddings
    trained for it. The ablations: `structural` (its paths
    alone, S = S2 > θ) and `union` (both modules' answer paths unscored: the planner's best
    relation path and the structural paths with S2 > θ)."""
    if mode == "structural":
        return sorted(_above(structural, theta), key=lambda c: -c.path.score)
    if mode == "union":
        top = max((c.s1 for c in planned), default=0.0)
        return [c for c in planned if c.s1 == top] + _above(structural, theta)
    return _rethink(planned + structural, s2, set(topics) | cvt, lambda1, theta)


def _above(structural: list[GroundedPath], theta: float) -> list[GroundedPath]:
    """The structural paths with S2 > θ, else the first one."""
    return [c for c in structural if c.path.score > theta] or structural[:1]


def _rethink(
    paths: list[GroundedPath], s2: dict[str, float], excluded: set[str], lambda1: float, theta: float
) -> list[GroundedPath]:
    scored: dict[tuple, GroundedPath] = {}
    for c in paths:
        if c.path.answer in excluded:
            continue
        s = lambda1 * c.s1 + (1.0 - lambda1) * s2.get(c.path.answer, 0.0)
        key = (c.path.entities, c.path.relations)
        if key not in scored or scored[key].path.score < s:
            scored[key] = GroundedPath(replace(c.path, score=s), c.triples, c.s1)
    ranked = sorted(scored.values(), key=lambda c: (-c.path.score, len(c.path.relations), c.path.entities))
    cut = theta * ranked[0].path.score if ranked else 0.0
    return [c for c in ranked if c.path.score > cut] or ranked[:1]


def best_per_answer(paths: Iterable[ScoredPath], excluded: set[str]) -> dict[str, float]:
    """Answer id -> the best score of the `paths` ending there, topics and CVT nodes (`excluded`) left out."""
    best: dict[str, float] = {}
    for p in paths:
        if p.answer not in excluded and p.score > best.get(p.answer, float("-inf")):
            best[p.answer] = p.score
    return best


def tied_at_best(best: dict[str, float]) -> list[str]:
    """The answer ids sharing the best score of `best` (answer id -> its best path score)."""
    top = max(best.values(), default=None)
    return sorted(e for e, score in best.items() if score == top)


def first_path(planned: list[GroundedPath], excluded: set[str]) -> tuple | None:
    """(relations, directions) of the best-scored grounded path that reaches an answer (ties: the shorter, then
    the first)."""
    usable = [c for c in planned if c.path.answer not in excluded]
    best = max(usable, key=lambda c: (c.path.score, -len(c.path.relations)), default=None)
    return (best.path.relations, best.path.directions) if best else None


def answers_of(mode: str, g: Gathered, lambda1: float, theta: float) -> list[str]:
    """The entity ids `kgdb ask --reasoner rrp` answers with in `mode` (the `PathReasoner` rules, ties
    in the retriever's order: those at the best score closest to the question first, then by name)."""
    topics, cvt = set(g.found.ids), g.cvt
    if mode == "planner" or g.joint:
        return _planner_answers(g, topics | cvt)
    kept = select(mode, g.planned, g.structural, g.s2, g.found.ids, cvt, lambda1, theta)
    return ranked_answers(best_per_answer((c.path for c in kept), topics | cvt), g)


def ranked_answers(best: dict[str, float], g: Gathered) -> list[str]:
    """Answer ids by their best path score (`best`); those tied at the best closest to the question first,
    then by name, then those meeting the question's literal constraint moved ahead (`Gathered.constrain`)."""
    tied = set(tied_at_best(best))
    close = g.closeness(sorted(tied))
    order = sorted(best, key=lambda e: (-best[e], -close.get(e, 0.0), g.names.get(e, e)))
    return g.constrain(order[: len(tied)]) + order[len(tied) :]


def _planner_answers(g: Gathered, excluded: set[str]) -> list[str]:
    """The ends of the best-scored planned (or joint) paths, the most often reached first."""
    usable = [c for c in (g.joint or g.planned) if c.path.answer not in excluded]
    if not usable:
        return []
    best = max(c.path.score for c in usable)
    counts: dict[str, int] = {}
    for c in usable:
        if c.path.score == best:
            counts[c.path.answer] = counts.get(c.path.answer, 0) + 1
    # the order `PathReasoner` gives: the most often reached first, then the retriever's (`ranked_answers`)
    return sorted(ranked_answers(dict.fromkeys(counts, best), g), key=lambda e: -counts[e])


def score_mode(items: list[QuestionPaths], mode: str, lambda1: float, theta: float) -> dict[str, float]:
    """Hit@1 and Macro-F1 (answer entity ids against the gold ids, %), and the share of questions
    with a gold answer at the end of some candidate path of either module (reachable)."""
    hit = f1 = reach = 0.0
    for it in items:
        if it.gathered is None or not it.gold:
            continue
        pred = answers_of(mode, it.gathered, lambda1, theta)
        hit += bool(pred) and pred[0] in it.gold
        common = len(set(pred) & it.gold)
        f1 += 2 * common / (len(set(pred)) + len(it.gold)) if common else 0.0
        ends = {c.path.answer for c in it.gathered.planned + it.gathered.structural + it.gathered.joint}
        reach += bool(ends & it.gold)
    n = max(len(items), 1)
    return {"hit1": 100 * hit / n, "macro_f1": 100 * f1 / n, "reachable": 100 * reach / n, "n": len(items)}


def chosen_mode(tuned: dict) -> str:
    """The ablation mode `kgdb ask` answers with: the best on val by Hit@1, then Macro-F1 (ties:
    rethinking first). On MetaQA val the planner alone beats rethinking (98.33 / 96.63 vs
    98.00 / 95.13), on WebQSP val rethinking wins, so the mode is a tuned setting like λ1 and θ."""
    scores = tuned.get("ablation_val") or {}
    ranked = [m for m in ("rethink", "union", "planner", "structural") if scores.get(m)]
    if not ranked:
        return "rethink"
    return max(ranked, key=lambda m: (scores[m]["hit1"], scores[m]["macro_f1"], -ranked.index(m)))


def weigh_by_answer_closeness(
    planned: list[GroundedPath], closeness, weight: float, excluded: set[str]
) -> list[GroundedPath]:
    """`planned` (one per grounded path) with path score and S1 times exp(weight x mean closeness of
    the relation path's first answers) (the best path's factor for paths of another length), rescaled
    to the same total over the relation paths; answers in `excluded` (topics, CVT nodes) are not read.
    Unchanged for weight 0 (`kgdb.rrp.closeness` says why)."""
    if not weight or not planned:
        return planned
    ends: dict[tuple, set[str]] = {}
    score: dict[tuple, float] = {}
    for c in planned:
        key = (c.path.relations, c.path.directions)
        score[key] = c.path.score
        if c.path.answer not in excluded:
            ends.setdefault(key, set()).add(c.path.answer)
    # Only paths as long as the best one are reordered; the others keep their place relative to it. A
    # longer question names its middle entity too ("the *country* whose capital is stockholm"), which
    # would lift the shorter path that ends there over the one that goes on to the answer.
    best = max(score, key=lambda key: (score[key], -len(key[0])))
    first = {key: sorted(ends.get(key, ()))[:ENDS_PER_PATH] for key in score if len(key[0]) == len(best[0])}
    close = closeness(
        sorted({e for kept in first.values() for e in kept})
    )  # a lazily embedded graph encodes the names it lacks
    factor = {key: math.exp(weight * _mean([close[e] for e in kept if e in close])) for key, kept in first.items()}
    factor = {key: factor.get(key, factor[best]) for key in score}
    before, after = sum(score.values()), sum(s * factor[key] for key, s in score.items())
    scale = before / after if after > 0 else 1.0
    out = []
    for c in planned:
        f = factor[(c.path.relations, c.path.directions)] * scale
        out.append(replace(c, path=replace(c.path, score=c.path.score * f), s1=c.s1 * f))
    return out


def with_weight(gathered: Gathered | None, weight: float) -> Gathered | None:
    """A copy of a `Gathered` whose planned paths are weighed (scoring many weights offline on one gathering)."""
    if not weight or gathered is None:
        return gathered
    excluded = set(gathered.found.ids) | gathered.cvt
    return replace(gathered, planned=weigh_by_answer_closeness(gathered.planned, gathered.closeness, weight, excluded))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
