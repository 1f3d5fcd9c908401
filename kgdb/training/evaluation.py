"""Retrieval evaluation: answer-entity and shortest-path-triple recall@K (K in 50/100/200), per hop,
with the per-stage timing of the live pipeline (fetch, featurise, score, write-back).

Labels, gold answers and hop counts come from the split cache (`kgdb.data.cache`), so they are
computed once per split; each question is then run through the retrieval pipeline for real (one
subgraph query and one write-back per question) with its gold topic entities, as SubgraphRAG
evaluates with given topics (the pipeline is passed in: this module never touches the database). The live subgraph must equal the cached one (the fetch is
deterministic); a mismatch is counted and that question scored against fresh arrays is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from kgdb.data.cache import CachedQuestion
from kgdb.data.questions import QuestionRecord
from kgdb.models.metrics import KS, RecallAccumulator, answer_recall_at, top_k, triple_recall_at

TIMED = ("fetch", "featurise", "score", "write")


@dataclass
class EvalReport:
    retriever: str
    checkpoint: str | None
    dataset: str
    split: str
    questions: int
    evaluated: int
    recall: dict  # bucket -> metric -> {mean, n}
    skipped: dict[str, int]
    timings_ms: dict[str, dict[str, float]]  # stage -> {p50, p95, mean}
    runs: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return self.__dict__.copy()


def _hop_bucket(hop: int) -> str:
    return "0-hop|unreachable" if hop <= 0 else (f"{hop}-hop" if hop < 3 else ">=3-hop")


def evaluate(
    pipeline,
    questions: list[QuestionRecord],
    cached: list[CachedQuestion],
    *,
    dataset: str,
    split: str,
    on_progress: Callable[[int], None] = lambda _: None,
) -> EvalReport:
    acc = RecallAccumulator()
    by_id = {it.qid: it for it in cached}
    stage_ms: dict[str, list[float]] = {s: [] for s in TIMED}
    stage_ms["total"] = []
    skipped = {"no_topic_in_graph": 0, "subgraph_changed": 0, "no_sp_triples": 0, "no_answer_in_graph": 0}
    runs: list[str] = []
    evaluated = 0
    for q in questions:
        item = by_id.get(q.id)
        if item is None:
            skipped["no_topic_in_graph"] += 1
            on_progress(1)
            continue
        result = pipeline.retrieve(q.text, q.topics, qid=q.id, q_emb=item.question_embedding)
        sg = result.subgraph
        if sg.num_triples != item.num_triples or not np.array_equal(sg.entity_idx, item.entity_idx):
            skipped["subgraph_changed"] += 1
            on_progress(1)
            continue
        evaluated += 1
        if result.run:
            runs.append(result.run)
        for s in TIMED:
            stage_ms[s].append(result.timings.get(s, 0.0))
        stage_ms["total"].append(sum(result.timings.get(s, 0.0) for s in TIMED))
        scores = torch.from_numpy(result.scores)
        order = top_k(scores, max(KS)).numpy()
        bucket = _hop_bucket(item.hop)
        labels = torch.from_numpy(item.labels)
        if not item.labels.any():
            skipped["no_sp_triples"] += 1
        if item.n_answers_in_graph == 0:
            skipped["no_answer_in_graph"] += 1
        for k in KS:
            acc.add(bucket, f"triple_recall@{k}", triple_recall_at(scores, labels, k))
            acc.add(bucket, f"answer_recall@{k}", answer_recall_at(order, item.head, item.tail, item.answers, item.n_answers_in_graph, k))
        if getattr(getattr(pipeline, "model", None), "returns", None) == "paths":
            # a path retriever passes an adaptive number of triples (result.k): recall at that size
            k = result.k
            acc.add(bucket, "triple_recall@passed", triple_recall_at(scores, labels, k))
            acc.add(bucket, "answer_recall@passed", answer_recall_at(order, item.head, item.tail, item.answers, item.n_answers_in_graph, k))
            acc.add(bucket, "triples_passed", float(k))
        on_progress(1)
    timings = {
        s: {
            "p50": float(np.percentile(v, 50)) if v else 0.0,
            "p95": float(np.percentile(v, 95)) if v else 0.0,
            "mean": float(np.mean(v)) if v else 0.0,
        }
        for s, v in stage_ms.items()
    }
    ckpt = pipeline.checkpoint.name if pipeline.checkpoint else None
    return EvalReport(pipeline.name, ckpt, dataset, split, len(questions), evaluated, acc.summary(), skipped, timings, runs)
