"""Question-answering metrics as the KGQA papers compute them, with the matching rules made switchable.

Per question (predictions = parsed answer list, in order; gold = ground-truth answers):
- **Hit**: some prediction matches some gold answer. RoG, GNN-RAG and others report this number as
  "Hits@1" although any position counts (RoG issue #11); SubgraphRAG footnote 2 says so too.
- **Hit@1** (true): the *first* prediction matches a gold answer.
- **precision / recall / F1**: one-to-one greedy matching of predictions (in order) to gold answers;
  precision = matched / #predictions (0 with no predictions), recall = matched / #gold ("answer
  recall"), F1 their harmonic mean. **Macro-F1** averages F1 over questions; **Micro-F1** pools the
  matched, predicted and gold counts over the whole set first.
- **Score_h** (SubgraphRAG App. C, hallucination-aware): for a question whose answer is in the KG,
  each correct answer +1, each wrong one −1, divided by the number of answers (no answer: 0); for a
  question whose answer is not in the KG, a refusal scores +1 and each answer −1 when its entity is in
  the retrieved evidence, −1.5 when not, again divided by the number of answers. The set score is
  (mean + 1.5) / 2.5 × 100, as in the reference code.

Matching (`MatchRules`, SubgraphRAG reference code by default, each rule switchable):
lowercase; drop punctuation; drop the articles a/an/the; collapse whitespace; a prediction matches
when the normalised gold answer is a *substring* of it (`substring=False`: exact equality);
`double_check` also accepts prediction ⊂ gold for when/where/year/language/sport/country questions;
`year_truncation` cuts gold dates `YYYY-MM-DD` to `YYYY` for when/what-year questions.
All set-level figures are percentages (×100).
"""

from __future__ import annotations

import re
import string
from dataclasses import asdict, dataclass, field
from typing import Iterable, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)
_DATE = re.compile(r"^(\d{4})-\d{2}(-\d{2})?")
_DOUBLE_CHECK_CUES = (
    "when",
    "what year",
    "which year",
    "where",
    "sport",
    "what countr",
    "language",
    "nba finals",
    "world series",
)
_YEAR_CUES = ("when", "what year", "which year")


@dataclass(frozen=True)
class MatchRules:
    lowercase: bool = True
    strip_punctuation: bool = True
    strip_articles: bool = True
    substring: bool = True
    double_check: bool = True
    year_truncation: bool = True

    @classmethod
    def strict(cls) -> "MatchRules":
        """Exact match after whitespace folding only."""
        return cls(False, False, False, False, False, False)

    @classmethod
    def parse(cls, spec: str) -> "MatchRules":
        """`subgraphrag` (default), `strict`, or a comma list like `subgraphrag,-substring`."""
        rules = asdict(cls())
        for part in (p.strip() for p in spec.split(",") if p.strip()):
            if part == "subgraphrag":
                rules = asdict(cls())
            elif part == "strict":
                rules = asdict(cls.strict())
            elif part[0] in "+-" and part[1:] in rules:
                rules[part[1:]] = part[0] == "+"
            else:
                raise ValueError(
                    f"unknown matching rule {part!r}; known: subgraphrag, strict, +/-{', +/-'.join(rules)}"
                )
        return cls(**rules)


def normalize(text: str, rules: MatchRules = MatchRules()) -> str:
    if rules.lowercase:
        text = text.lower()
    if rules.strip_punctuation:
        text = text.translate(_PUNCT)
    if rules.strip_articles:
        text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _cue(question: str, cues: Iterable[str]) -> bool:
    q = question.lower()
    return any(c in q for c in cues)


def match(pred: str, gold: str, question: str = "", rules: MatchRules = MatchRules()) -> bool:
    if rules.year_truncation and _cue(question, _YEAR_CUES) and (m := _DATE.match(gold.strip())):
        gold = m.group(1)
    p, g = normalize(pred, rules), normalize(gold, rules)
    if not p or not g:
        return False
    if not rules.substring:
        return p == g
    if g in p:
        return True
    return rules.double_check and _cue(question, _DOUBLE_CHECK_CUES) and p in g


@dataclass
class QuestionScore:
    hit: bool
    hit1: bool
    precision: float
    recall: float
    f1: float
    matched: int
    n_pred: int
    n_gold: int
    correct_preds: list[bool] = field(default_factory=list)
    score_h: float | None = None


def score_question(
    preds: Sequence[str],
    gold: Sequence[str],
    question: str = "",
    rules: MatchRules = MatchRules(),
    answer_in_kg: bool | None = None,
    evidence_entities: Iterable[str] = (),
) -> QuestionScore:
    """Scores of one question; `answer_in_kg`/`evidence_entities` feed Score_h (None: not scored)."""
    correct = [any(match(p, g, question, rules) for g in gold) for p in preds]
    used = [False] * len(gold)
    matched = 0
    for p in preds:  # one-to-one, greedy in prediction order
        for j, g in enumerate(gold):
            if not used[j] and match(p, g, question, rules):
                used[j] = True
                matched += 1
                break
    precision = matched / len(preds) if preds else 0.0
    recall = matched / len(gold) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    score = QuestionScore(
        hit=any(correct),
        hit1=bool(correct) and correct[0],
        precision=precision,
        recall=recall,
        f1=f1,
        matched=matched,
        n_pred=len(preds),
        n_gold=len(gold),
        correct_preds=correct,
    )
    if answer_in_kg is not None:
        score.score_h = hallucination_score(preds, correct, answer_in_kg, evidence_entities, rules)
    return score


def hallucination_score(
    preds: Sequence[str],
    correct: Sequence[bool],
    answer_in_kg: bool,
    evidence_entities: Iterable[str],
    rules: MatchRules = MatchRules(),
) -> float:
    """s_i / a_i of SubgraphRAG App. C (see the module docstring)."""
    if not preds:
        return 0.0 if answer_in_kg else 1.0
    if answer_in_kg:
        return sum(1.0 if c else -1.0 for c in correct) / len(preds)
    # Reference code: "in the retrieved results" = case-insensitive substring of an evidence entity.
    evidence = [normalize(e, rules) for e in evidence_entities]
    total = 0.0
    for p in preds:
        n = normalize(p, rules)
        total += -1.0 if n and any(n in e for e in evidence) else -1.5
    return total / len(preds)


def summarize(scores: Sequence[QuestionScore]) -> dict[str, float]:
    """Set-level metrics in percent; `n` is the number of questions."""
    n = len(scores)
    if n == 0:
        return {"n": 0}
    pred = sum(s.n_pred for s in scores)
    gold = sum(s.n_gold for s in scores)
    matched = sum(s.matched for s in scores)
    micro_p = matched / pred if pred else 0.0
    micro_r = matched / gold if gold else 0.0
    out = {
        "n": n,
        "hit": 100 * sum(s.hit for s in scores) / n,
        "hit1": 100 * sum(s.hit1 for s in scores) / n,
        "macro_f1": 100 * sum(s.f1 for s in scores) / n,
        "micro_f1": 100 * (2 * micro_p * micro_r / (micro_p + micro_r) if micro_p + micro_r else 0.0),
        "macro_precision": 100 * sum(s.precision for s in scores) / n,
        "answer_recall": 100 * sum(s.recall for s in scores) / n,
        "no_answer_rate": 100 * sum(s.n_pred == 0 for s in scores) / n,
    }
    h = [s.score_h for s in scores if s.score_h is not None]
    if h:
        out["score_h"] = 100 * (sum(h) / len(h) + 1.5) / 2.5
    return out
