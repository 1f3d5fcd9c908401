"""Fetching for retrieval and training: subgraphs with a fallback cap, and labelled training items.

Everything here runs named queries through `kgdb.cypher` and returns numpy arrays (never torch):
`fetch` (a question's subgraph, retried with a smaller cap when the server runs out of
transaction memory) and `fetch_labelled` (the database half of the training cache: subgraph,
shortest-path labels and gold answers per question).
"""

from __future__ import annotations

import time
from typing import Callable, Unpack

import numpy as np
from neo4j.exceptions import Neo4jError

from kgdb.config import FetchBounds
from kgdb.cypher import Graph
from kgdb.cypher.linking import existing_entities
from kgdb.cypher.retrieval import DEFAULT_CAP, fetch_subgraph
from kgdb.data.cache import CachedQuestion
from kgdb.data.labels import answer_hops, label_subgraph
from kgdb.data.questions import QuestionRecord
from kgdb.errors import KgdbError, TransactionMemoryError
from kgdb.subgraph import Subgraph

MIN_CAP = 10


def fetch(
    graph: Graph,
    topics: list[str],
    q_emb: np.ndarray,
    *,
    hops: int,
    cap: int | None,
    question: str,
    qid: str | None,
    **bounds: Unpack[FetchBounds],
) -> Subgraph:
    """`fetch_subgraph`, retried with a 4x smaller cap when a transaction still exceeds the server's
    memory limit; `meta["cap"]` says which cap produced the subgraph. The last failure is a clear
    error naming the settings to change."""
    cap = DEFAULT_CAP if cap is None else cap
    while True:
        try:
            return fetch_subgraph(graph, topics, q_emb, hops=hops, cap=cap, question=question, qid=qid, **bounds)
        except TransactionMemoryError:
            if cap <= MIN_CAP:
                raise
            cap = max(MIN_CAP, cap // 4)


def fetch_labelled(
    graph: Graph,
    questions: list[QuestionRecord],
    question_embeddings: np.ndarray,
    *,
    hops: int,
    cap: int | None,
    on_progress: Callable[[int], None] = lambda _: None,
    **bounds: Unpack[FetchBounds],
) -> tuple[list[CachedQuestion], dict[str, int], list[str]]:
    """Fetch and label the subgraph of each question from its gold topics (missing ones dropped,
    counted in `dropped_topics`), one round-trip set per question."""
    counts = {"no_topic_in_graph": 0, "fetch_failed": 0, "dropped_topics": 0}
    errors: list[str] = []
    items = []
    for i, q in enumerate(questions):
        topics = existing_entities(graph, q.topics)
        counts["dropped_topics"] += len(set(q.topics)) - len(topics) if topics else 0
        if not topics:
            counts["no_topic_in_graph"] += 1
            on_progress(1)
            continue
        answers_in_graph = existing_entities(graph, q.answers)
        t0 = time.perf_counter()
        try:
            sg = fetch(graph, topics, question_embeddings[i], hops=hops, cap=cap, question=q.text, qid=q.id, **bounds)
        except (KgdbError, Neo4jError) as exc:
            counts["fetch_failed"] += 1
            errors.append(f"{q.id}: {str(exc)[:200]}")
            on_progress(1)
            continue
        fetch_ms = (time.perf_counter() - t0) * 1000
        labels = label_subgraph(sg, answers_in_graph) if answers_in_graph else np.zeros(sg.num_triples, dtype=bool)
        local = {eid: j for j, eid in enumerate(sg.entity_ids)}
        answers = np.array(sorted(local[a] for a in set(answers_in_graph) if a in local), dtype=np.int64)
        head = np.asarray(sg.head, dtype=np.int64)
        tail = np.asarray(sg.tail, dtype=np.int64)
        topic = np.asarray(sg.topic, dtype=np.int64)
        hop = q.hop if q.hop else answer_hops(sg.num_nodes, head, tail, topic, answers)
        items.append(
            CachedQuestion(
                qid=q.id,
                question=q.text,
                head=head,
                relation=np.asarray(sg.relation, dtype=np.int64),
                tail=tail,
                entity_idx=np.asarray(sg.entity_idx, dtype=np.int64),
                is_cvt=np.asarray(sg.is_cvt, dtype=bool),
                topic=topic,
                labels=np.asarray(labels, dtype=bool),
                answers=answers,
                n_answers_in_graph=len(set(answers_in_graph)),
                question_embedding=np.asarray(question_embeddings[i], dtype=np.float32),
                hop=int(hop),
                fetch_ms=fetch_ms,
            )
        )
        on_progress(1)
    return items, counts, errors
