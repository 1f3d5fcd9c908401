"""What a path reaches, read against the question: the grounded relation paths' scores weighed by how
close their answers' names are to the question's words.

A path ranker (or planner) scores relation paths before they are grounded, from the relations'
text alone, but a question's words often name what its answer is: "which *country* was justin
bieber born in?" asks for Canada (nationality), not London (place of birth, ranked first);
"what *music period* did beethoven live in?" for Classical music, not the viola. After grounding,
each relation path as long as the best-scored one has its score multiplied by exp(weight x the mean
closeness of its first `ENDS_PER_PATH` answers) (the cosine `Gathered.closeness` reads for ties on
one path: name vector against the question without the topic names); paths of other lengths take
the best one's factor, and all are rescaled so the grounded paths keep their total.
The weight is an answering setting of a checkpoint (`answering.closeness_weight` in its
config.json), chosen on val splits by `benchmarks/answer_closeness.py` (docs/answering.md, "Answers that fit
the question's words"); 0, the default, leaves the scores as the planner gave them.
"""

from __future__ import annotations

import math
from dataclasses import replace

ENDS_PER_PATH = 5  # answers per relation path read (the first by id): WebQSP / MetaQA val choose the same with all of them
WEIGHTS = (0.0, 1.0, 2.0, 3.0, 4.0, 6.0)  # the grid `benchmarks/answer_closeness.py` chooses from


def weigh_by_answer_closeness(planned: list, closeness, weight: float, excluded: set[str]) -> list:
    """`planned` (`relation_paths._Candidate`, one per grounded path) with path score and S1 times
    exp(weight x mean closeness of the relation path's first answers) (the best path's factor for paths
    of another length), rescaled to the same total over the relation paths; answers in `excluded`
    (topics, CVT nodes) are not read. Unchanged for weight 0."""
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
    close = closeness(sorted({e for kept in first.values() for e in kept}))  # a lazily embedded graph encodes the names it lacks
    factor = {key: math.exp(weight * _mean([close[e] for e in kept if e in close])) for key, kept in first.items()}
    factor = {key: factor.get(key, factor[best]) for key in score}
    before, after = sum(score.values()), sum(s * factor[key] for key, s in score.items())
    scale = before / after if after > 0 else 1.0
    out = []
    for c in planned:
        f = factor[(c.path.relations, c.path.directions)] * scale
        out.append(replace(c, path=replace(c.path, score=c.path.score * f), s1=c.s1 * f))
    return out


def with_weight(gathered, weight: float):
    """A copy of a `Gathered` whose planned paths are weighed (scoring many weights offline on one gathering)."""
    if not weight or gathered is None:
        return gathered
    excluded = set(gathered.found.ids) | gathered.cvt
    return replace(gathered, planned=weigh_by_answer_closeness(gathered.planned, gathered.closeness, weight, excluded))


def weight_grid(items: list, mode: str, lambda1: float, theta: float) -> dict[str, dict]:
    """Val scores (`structural.score_mode`: Hit@1, Macro-F1) of one gathering (`QuestionPaths`) per weight of `WEIGHTS`."""
    from kgdb.pipeline.structural import QuestionPaths, score_mode

    return {str(w): score_mode([QuestionPaths(it.qid, it.gold, with_weight(it.gathered, w)) for it in items], mode, lambda1, theta)
            for w in WEIGHTS}


def mean_over(grids: list[dict[str, dict]], weight: float, key: str) -> float:
    """The mean of one score (`hit1`, `macro_f1`) at one weight over the grids (one per question file)."""
    return sum(g[str(weight)][key] for g in grids) / len(grids)


def choose_weight(grids: list[dict[str, dict]]) -> float:
    """The weight with the best mean Hit@1 over the grids (one per question file), then the best mean
    Macro-F1, then the smaller."""
    return max(WEIGHTS, key=lambda w: (round(mean_over(grids, w, "hit1"), 6), round(mean_over(grids, w, "macro_f1"), 6), -w))


def answering_config(grids: dict[str, dict], per_file: int) -> dict:
    """The `answering` block of a checkpoint's config.json: the chosen weight and the val grids (file label -> grid)."""
    return {"closeness_weight": choose_weight(list(grids.values())), "ends_per_path": ENDS_PER_PATH, "split": "val", "per_file": per_file,
            "rule": "best mean val Hit@1 over the question files, then Macro-F1, then the smaller weight", "val": grids}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
