"""What the path ranker reads of each enumerated relation path: the graph's relation vocabulary and its text
vectors (`RelationText`), the candidates' features (the trained planner's log P(γ|q), question-relation
cosines, length, answers, CVT share, topics, reach), and the relation words a candidate's best path reads.
Served by `kgdb.rrp.path_ranker`, trained by `kgdb.rrp.ranker_training`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import numpy as np

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.rrp.scoring import PLANNER_FEATURES, PORTABLE_FEATURES
from kgdb.scoring.path_tokens import text_features, token_of


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
