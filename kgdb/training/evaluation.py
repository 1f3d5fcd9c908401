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
from typing import TYPE_CHECKING, Callable, Protocol

import numpy as np
import torch

from kgdb.data.cache import CachedQuestion
from kgdb.data.questions import QuestionRecord
from kgdb.models.metrics import KS, RecallAccumulator, answer_recall_at, top_k, triple_recall_at

if TYPE_CHECKING:
    from kgdb.models.base import Retriever
    from kgdb.models.checkpoints import Checkpoint
    from kgdb.protocol import Retrieval


class ScoringPipeline(Protocol):
    """What an evaluation reads of the live pipeline it is handed (`kgdb.pipeline.RetrievePipeline`): this
    module sits below the seam and never imports it."""

    name: str
    model: Retriever | None
    checkpoint: Checkpoint | None

    def retrieve(
        self,
        question: str,
        topics: list[str] | None = None,
        *,
        qid: str | None = None,
        q_emb: np.ndarray | None = None,
        run: str | None = None,
    ) -> Retrieval: ...


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
    pipeline: ScoringPipeline,
    questions: list[QuestionRecord],
    cached: list[CachedQuestion],
    *,
    dataset: str,
    split: str,
    on_progress: Callable[[int], None] = lambda _: None,
    done: dict[str, dict] | None = None,
    on_record: Callable[[dict], None] = lambda _: None,
    run_id: Callable[[str], str] | None = None,
    fetch_failed: bool = False,
) -> EvalReport:
    """Recall and timings of `pipeline` on `questions`. Resumable: `done` holds the per-question records
    of an interrupted run (they are not asked again); each new record goes to `on_record` as soon as it
    exists. `run_id(qid)` names the write-back run, so a question asked again replaces its run.
    `fetch_failed`: the split's fetch had failures, so a question without a cached subgraph is not a
    "no topic" fact but a failure: it is counted, never recorded, and asked again on resume. A database
    error ends the run (raised) with every record made so far already handed to `on_record`."""
    by_id = {it.qid: it for it in cached}
    records = dict(done or {})
    failed = 0
    for q in questions:
        if q.id not in records:
            rec = question_result(pipeline, q, by_id.get(q.id), run_id(q.id) if run_id else None, fetch_failed)
            if rec is None:
                failed += 1
            else:
                records[q.id] = rec
                on_record(rec)
        on_progress(1)
    report = report_from_records(
        [records[q.id] for q in questions if q.id in records], pipeline, dataset, split, len(questions)
    )
    if fetch_failed:
        report.skipped["fetch_failed"] = failed
    return report


def question_result(
    pipeline: ScoringPipeline,
    q: QuestionRecord,
    item: CachedQuestion | None,
    run: str | None,
    fetch_failed: bool = False,
) -> dict | None:
    """One question's record: its recalls by metric, stage timings and run, or why it was skipped
    (None: its subgraph could not be fetched this time)."""
    if item is None:
        return None if fetch_failed else {"qid": q.id, "skipped": "no_topic_in_graph"}
    result = pipeline.retrieve(q.text, q.topics, qid=q.id, q_emb=item.question_embedding, run=run)
    sg = result.subgraph
    if sg.num_triples != item.num_triples or not np.array_equal(sg.entity_idx, item.entity_idx):
        return {"qid": q.id, "skipped": "subgraph_changed", "run": result.run}
    scores = torch.from_numpy(result.scores)
    order = top_k(scores, max(KS)).numpy()
    labels = torch.from_numpy(item.labels)
    metrics: dict[str, float | None] = {}
    for k in KS:
        metrics[f"triple_recall@{k}"] = triple_recall_at(scores, labels, k)
        metrics[f"answer_recall@{k}"] = answer_recall_at(
            order, item.head, item.tail, item.answers, item.n_answers_in_graph, k
        )
    if pipeline.model is not None and pipeline.model.returns == "paths":
        # a path retriever passes an adaptive number of triples (result.k): recall at that size
        k = result.k
        metrics["triple_recall@passed"] = triple_recall_at(scores, labels, k)
        metrics["answer_recall@passed"] = answer_recall_at(
            order, item.head, item.tail, item.answers, item.n_answers_in_graph, k
        )
        metrics["triples_passed"] = float(k)
    return {
        "qid": q.id,
        "bucket": _hop_bucket(item.hop),
        "metrics": metrics,
        "run": result.run,
        "timings": {s: result.timings.get(s, 0.0) for s in TIMED},
        "no_sp_triples": not bool(item.labels.any()),
        "no_answer_in_graph": item.n_answers_in_graph == 0,
    }


def report_from_records(
    records: list[dict], pipeline: ScoringPipeline, dataset: str, split: str, questions: int
) -> EvalReport:
    """The report of a set of per-question records (of this run and of the runs it resumed)."""
    acc = RecallAccumulator()
    stage_ms: dict[str, list[float]] = {s: [] for s in TIMED}
    stage_ms["total"] = []
    skipped = {"no_topic_in_graph": 0, "subgraph_changed": 0, "no_sp_triples": 0, "no_answer_in_graph": 0}
    runs: list[str] = []
    evaluated = 0
    for rec in records:
        if rec.get("skipped"):
            skipped[rec["skipped"]] = skipped.get(rec["skipped"], 0) + 1
            continue
        evaluated += 1
        if rec.get("run"):
            runs.append(rec["run"])
        for s in TIMED:
            stage_ms[s].append(rec["timings"].get(s, 0.0))
        stage_ms["total"].append(sum(rec["timings"].get(s, 0.0) for s in TIMED))
        skipped["no_sp_triples"] += bool(rec["no_sp_triples"])
        skipped["no_answer_in_graph"] += bool(rec["no_answer_in_graph"])
        for metric, value in rec["metrics"].items():
            acc.add(rec["bucket"], metric, value)
    timings = {
        s: {
            "p50": float(np.percentile(v, 50)) if v else 0.0,
            "p95": float(np.percentile(v, 95)) if v else 0.0,
            "mean": float(np.mean(v)) if v else 0.0,
        }
        for s, v in stage_ms.items()
    }
    ckpt = pipeline.checkpoint.name if pipeline.checkpoint else None
    return EvalReport(pipeline.name, ckpt, dataset, split, questions, evaluated, acc.summary(), skipped, timings, runs)
