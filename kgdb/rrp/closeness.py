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
the question's words"); 0, the default, leaves the scores as the planner gave them. The weighing is an
answering rule (`kgdb.rrp.answering.weigh_by_answer_closeness`); this module chooses its weight.
"""

from __future__ import annotations

from kgdb.rrp.answering import ENDS_PER_PATH, QuestionPaths, score_mode, with_weight

WEIGHTS = (0.0, 1.0, 2.0, 3.0, 4.0, 6.0)  # the grid `benchmarks/answer_closeness.py` chooses from


def weight_grid(items: list[QuestionPaths], mode: str, lambda1: float, theta: float) -> dict[str, dict]:
    """Val scores (`score_mode`: Hit@1, Macro-F1) of one gathering per weight of `WEIGHTS`."""
    return {
        str(w): score_mode(
            [QuestionPaths(it.qid, it.gold, with_weight(it.gathered, w)) for it in items], mode, lambda1, theta
        )
        for w in WEIGHTS
    }


def mean_over(grids: list[dict[str, dict]], weight: float, key: str) -> float:
    """The mean of one score (`hit1`, `macro_f1`) at one weight over the grids (one per question file)."""
    return sum(g[str(weight)][key] for g in grids) / len(grids)


def choose_weight(grids: list[dict[str, dict]]) -> float:
    """The weight with the best mean Hit@1 over the grids (one per question file), then the best mean
    Macro-F1, then the smaller."""
    return max(
        WEIGHTS, key=lambda w: (round(mean_over(grids, w, "hit1"), 6), round(mean_over(grids, w, "macro_f1"), 6), -w)
    )


def answering_config(grids: dict[str, dict], per_file: int) -> dict:
    """The `answering` block of a checkpoint's config.json: the chosen weight and the val grids (file label -> grid)."""
    return {
        "closeness_weight": choose_weight(list(grids.values())),
        "ends_per_path": ENDS_PER_PATH,
        "split": "val",
        "per_file": per_file,
        "rule": "best mean val Hit@1 over the question files, then Macro-F1, then the smaller weight",
        "val": grids,
    }
