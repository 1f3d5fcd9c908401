"""Score write-back: the top-K triples of one question as a retrieval run in the graph.

Shape: `(:Retrieval {run, qid, question, retriever, k, created})-[:TOPIC]->(:Entity)` and, per kept
triple, `(h)-[:SCORED {run, rel, score, rank}]->(t)` parallel to the original relationship; a run the answer
model judged also has `ret.confidence`, `ret.sure` and `(ret)-[:ANSWER {rank, confidence}]->(:Entity)`. The run
id keys everything (SCORED.run is indexed), so runs of different questions and retrievers coexist.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

import numpy as np

from kgdb.cypher import Graph
from kgdb.errors import KgdbError
from kgdb.ranking import top_k
from kgdb.subgraph import Subgraph

_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]+")


def new_run_id(retriever: str, qid: str | None) -> str:
    """`<retriever>-<qid>-<8 hex>`: readable in Browser, unique across concurrent writers."""
    parts = [_UNSAFE.sub("_", retriever), _UNSAFE.sub("_", qid or "q"), uuid.uuid4().hex[:8]]
    return "-".join(parts)


def eval_run_id(retriever: str, qid: str, evaluation: str) -> str:
    """`<retriever>-<qid>-<evaluation>`: the same id each time one evaluation asks one question, so a
    resumed evaluation replaces a run a crash left unrecorded rather than adding a second one."""
    return "-".join([_UNSAFE.sub("_", retriever), _UNSAFE.sub("_", qid), _UNSAFE.sub("_", evaluation)])


def write_scores(
    graph: Graph,
    sg: Subgraph,
    scores: np.ndarray,
    retriever: str,
    k: int,
    run: str | None = None,
) -> str:
    """Write the top-`k` triples of `sg` by `scores` as run `run` (new id if None); returns the run id.

    One statement per question: it (re)creates the Retrieval node, its TOPIC links and the SCORED
    edges (ranks 1..k). Writing an existing run id replaces that run.
    """
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if scores.shape[0] != sg.num_triples:
        raise KgdbError(f"got {scores.shape[0]} scores for a subgraph of {sg.num_triples} triples")
    if k < 1:
        raise KgdbError(f"k must be positive, got {k}")
    if not np.isfinite(scores).all():
        # a NaN has no rank: it would be stored as one and order nothing; the model (or its weights) is broken
        bad = int((~np.isfinite(scores)).sum())
        raise KgdbError(
            f"{retriever} gave {bad} non-finite score(s) (NaN or infinity) for {sg.qid or 'the question'}; "
            "nothing was written: check the checkpoint's weights"
        )
    run = run or new_run_id(retriever, sg.qid)
    keep = top_k(scores, k)
    ids = np.asarray(sg.entity_ids, dtype=object)
    rows = [
        {"eid": sg.edge_ids[i], "h": h, "rel": sg.relation_names[i], "t": t, "score": float(scores[i]), "rank": rank}
        for rank, (i, h, t) in enumerate(zip(keep.tolist(), ids[sg.head[keep]], ids[sg.tail[keep]]), start=1)
    ]
    row = graph.single(
        "write_scores",
        run=run,
        qid=sg.qid,
        question=sg.question,
        retriever=retriever,
        k=int(k),
        topics=[sg.entity_ids[i] for i in sg.topic.tolist()],
        rows=rows,
    )
    if row is None or row["written"] != len(rows):
        written = 0 if row is None else row["written"]
        raise KgdbError(
            f"run {run}: wrote {written} of {len(rows)} scored triples; the subgraph is stale "
            "(the graph changed since it was fetched): fetch it again"
        )
    return run


def write_answers(
    graph: Graph, run: str, answers: list[tuple[str, float | None]], confidence: float, sure: bool | None
) -> int:
    """Write a run's answers (entity id, its confidence; first answer first) and the run's confidence that the
    first is right, so Neo4j Browser shows them beside the scored evidence; returns the answers written."""
    rows = [{"id": e, "rank": rank, "confidence": c} for rank, (e, c) in enumerate(answers, start=1)]
    row = graph.single("write_answers", run=run, confidence=float(confidence), sure=sure, answers=rows)
    return 0 if row is None else int(row["written"])


@dataclass
class RunSummary:
    run: str
    qid: str | None
    retriever: str | None
    k: int | None
    created: str | None
    question: str | None
    triples: int


def list_runs(graph: Graph, qid: str | None = None, limit: int = 50) -> list[RunSummary]:
    return [RunSummary(**row) for row in graph.run("runs_list", qid=qid, limit=limit)]


def show_run(graph: Graph, run: str) -> dict:
    row = graph.single("runs_show", run=run)
    if row is None:
        raise KgdbError(f"no retrieval run {run!r} (see `kgdb runs list`)")
    return row


def prune_runs(
    graph: Graph,
    runs: list[str] | None = None,
    retriever: str | None = None,
    qid: str | None = None,
    before: str | None = None,
) -> tuple[int, int]:
    """Delete the given runs, or those matching the filters; returns (runs, scored edges) deleted."""
    if runs is None:
        runs = [r["run"] for r in graph.run("runs_older_than", retriever=retriever, qid=qid, before=before)]
    if not runs:
        return 0, 0
    row = graph.single("runs_prune", runs=runs) or {"runs": 0, "edges": 0}
    return int(row["runs"]), int(row["edges"] or 0)
