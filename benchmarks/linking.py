"""Entity linking from question text alone: recall@1 / recall@5 of the gold topic entity on WebQSP.

    KGDB_NEO4J_URI=$WEBQSP_URI .venv/bin/python benchmarks/linking.py

A question counts as a hit at k when any of its gold topic entities (`q_entity`) is among the top k
linked entities. Latency is per `link_entities` call (question embedding done beforehand, not counted).
`--split train|val` keeps the questions of one fixed split (`splits/`), so a change to the linker is
measured without touching test. `--answerability` also prints how often the topic `kgdb ask` retrieves
from is right: the linked candidates after the RRP path ranker's choice (`RankedPathPlanner.choose_topic`;
the graph's own ranker, else the shipped portable one), with that choice's latency.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import numpy as np
import typer

from kgdb.config import load_settings
from kgdb.cypher import Graph
from kgdb.cypher.linking import NoTopicError, link_entities, question_topics
from kgdb.embeddings import get_embedder
from kgdb.reading import read_question
from kgdb.rrp.model_choice import load_ranker, shipped_ranker

DATA = Path(os.environ.get("KGDB_DATA", "data"))
logging.getLogger("neo4j").setLevel(logging.ERROR)


def main(
    questions: Path = typer.Option(DATA / "webqsp" / "questions.jsonl", help="questions.jsonl"),
    limit: int = typer.Option(0, help="only the first N questions (0: all)"),
    split: str = typer.Option("all", help="train | val | test | all: the questions of one fixed split"),
    show_misses: int = typer.Option(0, help="print this many misses"),
    answerability: bool = typer.Option(
        False, help="also: the topic chosen by answerability, as `kgdb ask` retrieves from"
    ),
) -> None:
    settings = load_settings()
    rows = [json.loads(line) for line in questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    if split != "all":
        from kgdb.data.questions import split_of

        rows = [r for r in rows if split_of("webqsp", r["id"]) == split]
    rows = [r for r in rows if r["q_entity"]][: limit or None]
    embedder = get_embedder(settings.embedding_model, settings.device, settings.embedding_batch_size)
    vectors = embedder.encode([r["question"] for r in rows])
    hits1 = hits5 = chosen_hits = 0
    latency, misses, choice_latency = [], [], []
    with Graph.connect(settings) as graph:
        ranker = (load_ranker(graph, settings) or shipped_ranker(graph, settings)) if answerability else None
        for r, v in zip(rows, vectors):
            start = time.perf_counter()
            reading = read_question(r["question"])
            linked = link_entities(graph, reading, v, k=5, encode=embedder.encode)
            latency.append(time.perf_counter() - start)
            ids = [e.id for e in linked]
            gold = set(r["q_entity"])
            hits1 += bool(ids[:1] and ids[0] in gold)
            if ranker is not None:
                start = time.perf_counter()
                try:
                    found = ranker.choose_topic(
                        graph, reading, question_topics(graph, reading, v, encode=embedder.encode)
                    )
                    chosen_hits += found.ids[0] in gold
                except NoTopicError:
                    pass
                choice_latency.append(time.perf_counter() - start)
            hit5 = bool(gold & set(ids))
            hits5 += hit5
            if not hit5:
                misses.append((r["question"], r["q_entity"], [(e.name, e.mention) for e in linked[:3]]))
    n = len(rows)
    ms = np.asarray(latency) * 1000
    print(f"questions: {n} (uri {settings.neo4j_uri})")
    print(f"recall@1: {hits1}/{n} = {100 * hits1 / n:.1f}%")
    print(f"recall@5: {hits5}/{n} = {100 * hits5 / n:.1f}%   (target >= 85%)")
    print(f"latency ms: p50 {np.percentile(ms, 50):.1f}  p95 {np.percentile(ms, 95):.1f}  max {ms.max():.1f}")
    if ranker is not None:
        ms = np.asarray(choice_latency) * 1000
        print(
            f"topic right after linking by answerability: {chosen_hits}/{n} = {100 * chosen_hits / n:.1f}%   "
            f"(linking + choice ms: p50 {np.percentile(ms, 50):.1f}  p95 {np.percentile(ms, 95):.1f})"
        )
    for q, gold, got in misses[:show_misses]:
        print(f"miss: {q!r} gold={gold} got={got}")


if __name__ == "__main__":
    typer.run(main)
