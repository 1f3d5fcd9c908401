"""What `kgdb eval rrp` and benchmarks/cwq.py print: Hit, Hit@1, Macro-F1, the share of questions whose gold
answer ends a candidate path (reachable) and seconds per question, over all questions or by question type.

Kept apart from the answering code so that a report is a pure function of (gold, predicted, reachable,
seconds) per question: the same figures for any planner, and testable without a database. Which split a
question file is scored on is decided here too (`choose_split`), once for every caller.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgdb.data.questions import SPLITS, QuestionRecord, QuestionSet
from kgdb.qa.confidence import summary

QUESTION_TYPES = ("composition", "conjunction", "comparative", "superlative")

# ComplexWebQuestions' four kinds (Talmor & Berant 2018), read from the wording because the question
# files carry no label. Superlatives and comparatives have marker words; a conjunction joins two
# conditions on the answer ("... and ...", or two topic entities named); everything else composes.
_SUPERLATIVE = re.compile(
    r"\b(most|least|largest|smallest|biggest|highest|lowest|latest|earliest|first|last|oldest|youngest|longest|shortest|"
    r"greatest|best|worst|newest|tallest|deepest|closest|furthest|farthest|richest|poorest|fewest|heaviest|lightest)\b",
    re.IGNORECASE,
)
_COMPARATIVE = re.compile(
    r"\b((more|less|fewer|greater|larger|smaller|bigger|higher|lower|earlier|later|older|younger|longer|shorter)\s+than|"
    r"(before|after|prior to|since|until|over|under|above|below|at least|at most)\s+(\d|the year|[a-z]+\s+\d))",
    re.IGNORECASE,
)
_CONJUNCTION = re.compile(r"\b(and|but|while|also|as well as)\b", re.IGNORECASE)


def question_type(text: str, topics: Sequence[str] = ()) -> str:
    """One of QUESTION_TYPES for a question's text (and the number of topic entities it names)."""
    if _SUPERLATIVE.search(text):
        return "superlative"
    if _COMPARATIVE.search(text):
        return "comparative"
    if len(topics) >= 2 or _CONJUNCTION.search(text):
        return "conjunction"
    return "composition"


@dataclass(frozen=True)
class ScoredQuestion:
    """One question's answers against its gold ids. `predicted` is in answer order; `reachable`: a gold
    answer ends some candidate path; `failed`: retrieval raised (counted as a miss, as `score_mode` does)."""

    qid: str
    gold: frozenset[str]
    predicted: tuple[str, ...]
    reachable: bool
    seconds: float | None = None
    failed: bool = False
    kind: str = ""
    confidence: float | None = None  # the answer model's P(first answer right); None: not judged
    min_confidence: float | None = None


def f1(predicted: Iterable[str], gold: frozenset[str]) -> float:
    pred = set(predicted)
    common = len(pred & gold)
    return 2 * common / (len(pred) + len(gold)) if common else 0.0


def summarise(rows: Sequence[ScoredQuestion]) -> dict:
    """Set figures in % (Hit: a gold id among the answers; Hit@1: the first answer is one; Macro-F1 over
    set F1 per question; reachable), the question count, failures, and seconds per question (mean,
    p50, p95) where measured. A question without gold answers counts in n and scores 0, like `score_mode`."""
    n = len(rows)
    scored = [r for r in rows if not r.failed and r.gold]
    out: dict[str, Any] = {
        "n": n,
        "hit": 100 * sum(bool(set(r.predicted) & r.gold) for r in scored) / max(n, 1),
        "hit1": 100 * sum(bool(r.predicted) and r.predicted[0] in r.gold for r in scored) / max(n, 1),
        "macro_f1": 100 * sum(f1(r.predicted, r.gold) for r in scored) / max(n, 1),
        "reachable": 100 * sum(r.reachable for r in scored) / max(n, 1),
        "failed": sum(r.failed for r in rows),
    }
    if confidence := _confidence(rows):
        out["confidence"] = confidence
    seconds = sorted(r.seconds for r in rows if r.seconds is not None)
    if seconds:
        out["seconds_mean"] = statistics.fmean(seconds)
        out["seconds_p50"] = _quantile(seconds, 0.50)
        out["seconds_p95"] = _quantile(seconds, 0.95)
    return out


def _confidence(rows: Sequence[ScoredQuestion]) -> dict | None:
    """The confidence figures (`kgdb.qa.confidence.summary`) of the questions the answer model judged."""
    judged = [r for r in rows if r.confidence is not None]
    if not judged:
        return None
    threshold = next((r.min_confidence for r in judged if r.min_confidence is not None), None)
    right = [bool(r.predicted) and r.predicted[0] in r.gold for r in judged]
    return summary([r.confidence or 0.0 for r in judged], right, threshold)


def _quantile(ordered: list[float], q: float) -> float:
    """Nearest-rank quantile of an ascending list (the convention of benchmarks/ask.py's p50 / p95)."""
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def by_type(rows: Sequence[ScoredQuestion]) -> dict[str, dict]:
    """`summarise` per question type (types with no question are left out), in QUESTION_TYPES order."""
    return {
        kind: summarise([r for r in rows if r.kind == kind])
        for kind in QUESTION_TYPES
        if any(r.kind == kind for r in rows)
    }


def rrp_rows(
    items,
    mode: str,
    lambda1: float,
    theta: float,
    seconds: Sequence[float | None] | None = None,
    records: Sequence[QuestionRecord] | None = None,
    model=None,
) -> list[ScoredQuestion]:
    """`ScoredQuestion`s of RRP's gathered candidate paths (`kgdb.rrp.structural.gather_questions`)
    answered in `mode`, in the answer order `kgdb ask --reasoner rrp` uses (`judged_answers`: the answer
    `model`'s, None: the ranker's), with the model's confidence. With `records` (the same order as `items`),
    each row carries its question type. A question with no answer has confidence 0 where a model judges."""
    from kgdb.rrp.judging import judged_answers

    out = []
    for i, it in enumerate(items):
        secs = seconds[i] if seconds is not None else None
        kind = question_type(records[i].text, records[i].topics) if records is not None else ""
        g = it.gathered
        unjudged = None if model is None else 0.0
        threshold = None if model is None else model.min_confidence
        if g is None:
            out.append(ScoredQuestion(it.qid, frozenset(it.gold), (), False, secs, True, kind, unjudged, threshold))
            continue
        ends = {c.path.answer for c in g.planned + g.structural + g.joint}
        judged = judged_answers(g, mode, lambda1, theta, model)
        out.append(
            ScoredQuestion(
                it.qid,
                frozenset(it.gold),
                tuple(judged.answers),
                bool(ends & it.gold),
                secs,
                False,
                kind,
                judged.confidence if judged.confidence is not None else unjudged,
                threshold,
            )
        )
    return out


def planner_usage(items: Sequence) -> dict[str, int] | None:
    """LLM calls and tokens summed over the questions' plans; None when no plan used an LLM."""
    usages = [g.usage for g in (item.gathered for item in items) if g is not None and g.usage]
    if not usages:
        return None
    return {key: sum(u[key] for u in usages) for key in ("calls", "prompt_tokens", "completion_tokens")}


def choose_split(qs: QuestionSet, requested: str | None, splits_dir: Path = Path("splits")) -> tuple[str, str | None]:
    """The split to score and a note saying why when it is not the one asked for.

    A file with a fixed split in `splits_dir` (`<dataset>.json` holding some of its ids) is scored on
    `requested`, default val. A file whose ids are not there (a hand-written question set) is scored
    whole: a hash-chosen fifth of a few dozen questions measures nothing anyone chose."""
    path = Path(splits_dir) / f"{qs.dataset}.json"
    known: set[str] = set()
    if path.is_file():
        ids = json.loads(path.read_text(encoding="utf-8")).get("ids", {})
        known = {qid for name in SPLITS for qid in ids.get(name, [])}
    if known & {q.id for q in qs.questions}:
        return requested or "val", None
    if requested in (None, "all"):
        return "all", f"no ids of {qs.path.name} are in {path}: the whole file is evaluated (--split all)"
    return requested, (
        f"no ids of {qs.path.name} are in {path}: --split {requested} is a hash-chosen part of the file, "
        "not a fixed split (--split all scores the whole file)"
    )
