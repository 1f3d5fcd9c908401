"""Two ways of re-scoring the grounded paths the shipped ranker answers from, each fitted on the training split
and measured on the val split (topics from the file, Hit@1 as `kgdb eval rrp`, with the questions it turns
right (+) and wrong (-)):

- answer kinds: `kgdb.rrp.constraints.AnswerTypeModel` (per wh-cue, the log-odds that an answer carrying
  a relation type of the graph is gold) fitted on every grounded answer of the training questions; a path
  whose answer scores more than MARGIN below the best-fitting answer of a path of probability at least 0.05
  loses its place (its score times 1e-6).
- words of the question against words of the path: a weight per (question word, relation-name word with its
  direction) pair, added to the ranker's log-probability and trained listwise on the training questions'
  grounded paths (positives: the paths of best answer F1), with weight decay WD.

    KGDB_NEO4J_URI=$CWQ_URI .venv/bin/python benchmarks/path_rescoring.py --questions $KGDB_DATA/cwq/questions.jsonl

Neither is part of answering: on the CWQ and WebQSP graphs neither turned more val questions right than
wrong (docs/experiments/2026-11-29-rescoring-and-retraining-the-ranker.md).
"""

from __future__ import annotations

import argparse
import math
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import torch

from kgdb.config import load_settings
from kgdb.cypher import Graph
from kgdb.cypher.answer_evidence import type_features
from kgdb.data.questions import read_questions
from kgdb.reading.constraints import parse_constraints
from kgdb.rrp.answering import answers_of
from kgdb.rrp.constraints import AnswerTypeModel
from kgdb.rrp.model_choice import relation_path_retriever
from kgdb.rrp.structural import gather_questions

MARGINS = (2.0, 5.0, 10.0, 20.0)
DECAYS = (0.001, 0.01, 0.1)
MIN_PROBABILITY = 0.05
_WORD = re.compile(r"[a-z]+")


def _paths(g):
    return g.joint or g.planned


def _excluded(g) -> set[str]:
    return set(g.found.ids) | g.cvt


def _rescored(g, score):
    """`g` with each answer path's score replaced by `score(path)`."""
    new = [replace(c, path=replace(c.path, score=score(c))) for c in _paths(g)]
    return replace(g, joint=new) if g.joint else replace(g, planned=new)


def _hit1(items, rescore=None) -> tuple[int, int, int]:
    """(right, turned right, turned wrong) over `items` [(question, gold, gathered)]."""
    right = plus = minus = 0
    for text, gold, g in items:
        if g is None:
            continue
        before = answers_of("planner", g, 0.5, 0.0)
        after = answers_of("planner", rescore(text, g), 0.5, 0.0) if rescore else before
        was, now = bool(before) and before[0] in gold, bool(after) and after[0] in gold
        right, plus, minus = right + now, plus + (now and not was), minus + (was and not now)
    return right, plus, minus


def _type_examples(items, feats):
    for text, gold, g in items:
        if g is not None:
            ends = sorted({c.path.answer for c in _paths(g)} - _excluded(g))
            yield parse_constraints(text).cue, [feats.get(a, frozenset()) for a in ends], [a in gold for a in ends]


def _kind_veto(model: AnswerTypeModel, feats, margin: float):
    def rescore(text, g):
        cue = parse_constraints(text).cue
        live = [c for c in _paths(g) if c.path.answer not in _excluded(g) and c.path.score >= MIN_PROBABILITY]
        if not live:
            return g
        fit = {c.path.answer: model.score(cue, feats.get(c.path.answer, frozenset())) for c in live}
        first = max(live, key=lambda c: c.path.score).path.answer
        best = max(fit.values())
        if fit[first] >= best - margin:
            return g
        kept = {a for a, v in fit.items() if v >= best - margin} | _excluded(g)
        return _rescored(g, lambda c: c.path.score if c.path.answer in kept else c.path.score * 1e-6)

    return rescore


def _question_words(text: str, g) -> list[str]:
    names = {w for t in g.found.ids for w in _WORD.findall(g.names.get(t, t).lower())}
    return sorted(set(_WORD.findall(text.lower())) - names)


def _path_words(c) -> list[str]:
    """The words of each step's relation name (its last part), marked with the step's direction."""
    out = set()
    for i, (_, head, relation, _) in enumerate(c.triples):
        mark = "+" if head == c.path.entities[i] else "-"
        last = relation.split(".")[-1]
        out |= {last + mark} | {w + mark for w in last.split("_") if w}
    return sorted(out)


def _pairs(text, g, c) -> list[tuple[str, str]]:
    return [(q, r) for q in _question_words(text, g) for r in _path_words(c)]


def _fit_pairs(items, decay: float, epochs: int = 60) -> dict:
    """Pair weights trained listwise over each training question's grounded paths (one group per relation path)."""
    groups = []
    for text, gold, g in items:
        if g is None or g.joint:
            continue
        by_path: dict[tuple, list] = {}
        for c in g.planned:
            if c.path.answer not in _excluded(g):
                entry = by_path.setdefault(tuple(_path_words(c)) + c.path.relations, [c, set()])
                entry[1].add(c.path.answer)
        f1 = [2 * len(a & gold) / (len(a) + len(gold)) for _, a in by_path.values()]
        if len(by_path) > 1 and max(f1) > 0:
            groups.append((text, g, [c for c, _ in by_path.values()], [x == max(f1) for x in f1]))
    count = Counter(p for text, g, cs, _ in groups for c in cs for p in set(_pairs(text, g, c)))
    vocab = {p: i for i, p in enumerate(sorted(p for p, n in count.items() if n >= 2))}
    data = [
        (
            [torch.tensor([vocab[p] for p in _pairs(text, g, c) if p in vocab], dtype=torch.long) for c in cs],
            torch.log(torch.tensor([c.path.score for c in cs]).clamp(min=1e-9)),
            torch.tensor(pos),
        )
        for text, g, cs, pos in groups
    ]
    torch.manual_seed(0)
    w = torch.zeros(len(vocab), requires_grad=True)
    opt = torch.optim.Adam([w], lr=0.05)
    for _ in range(epochs):
        opt.zero_grad()
        loss = sum(
            -torch.logsumexp(torch.log_softmax(logp + torch.stack([w[i].sum() for i in idx]), 0)[pos], 0)
            for idx, logp, pos in data
        )
        (loss / max(len(data), 1) + decay * (w**2).sum()).backward()
        opt.step()
    weights = w.detach()
    return {p: float(weights[i]) for p, i in vocab.items()}


def _word_pairs(weights: dict):
    def rescore(text, g):
        if g.joint:
            return g
        return _rescored(g, lambda c: c.path.score * math.exp(sum(weights.get(p, 0.0) for p in _pairs(text, g, c))))

    return rescore


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--checkpoint", default="kgdb/models/default/rrp-ranker-portable")
    args = ap.parse_args()
    qs = read_questions(args.questions)
    settings = load_settings()
    with Graph.connect(settings) as graph:
        r = relation_path_retriever(graph, settings, checkpoint=args.checkpoint, write=False)
        split = {}
        for name in ("train", "val"):
            records = qs.split(name)
            gathered = gather_questions(r, records)
            split[name] = [(q.text, it.gold, it.gathered) for q, it in zip(records, gathered)]
            print(f"{qs.dataset} {name}: {len(records)} questions gathered", flush=True)
        ends = sorted({c.path.answer for s in split.values() for _, _, g in s if g for c in _paths(g)})
        feats = {}
        for i in range(0, len(ends), 500):
            feats.update(type_features(graph, ends[i : i + 500]))
    train, val = split["train"], split["val"]
    base = _hit1(val)[0]
    print(f"val Hit@1 of the ranker: {100 * base / len(val):.2f} ({base} / {len(val)})")
    kinds = AnswerTypeModel.fit(_type_examples(train, feats))
    for margin in MARGINS:
        right, plus, minus = _hit1(val, _kind_veto(kinds, feats, margin))
        print(f"answer kinds, margin {margin:>4}: val {100 * right / len(val):.2f} (+{plus} -{minus})")
    for decay in DECAYS:
        right, plus, minus = _hit1(val, _word_pairs(_fit_pairs(train, decay)))
        print(f"word pairs, decay {decay:>5}: val {100 * right / len(val):.2f} (+{plus} -{minus})")


if __name__ == "__main__":
    main()
