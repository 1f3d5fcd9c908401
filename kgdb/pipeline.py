"""The retrieve pipeline: question -> topics (linked or given) -> subgraph from Neo4j -> tensors ->
retriever scores -> top-K -> write-back. Used by `kgdb retrieve`, `kgdb eval retrieval`,
`benchmarks/retrieve.py` and `kgdb ask`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.embeddings import get_embedder
from kgdb.errors import KgdbError
from kgdb.models import db
from kgdb.models.base import Retriever, TensorTables
from kgdb.models.checkpoints import (
    RETRIEVERS,
    Checkpoint,
    build_model,
    check_compatible,
    checkpoint_for_graph,
    find_checkpoint,
    load_model,
)
from kgdb.models.features import featurise
from kgdb.models.metrics import top_k
from kgdb.subgraph import Subgraph

STAGES = ("embed", "link", "fetch", "featurise", "score", "write")


@dataclass(frozen=True)
class ScoredTriple:
    rank: int
    head: str  # readable names
    relation: str
    tail: str
    score: float
    head_id: str
    tail_id: str
    index: int  # triple index in the subgraph


@dataclass
class RetrievalResult:
    question: str
    qid: str | None
    retriever: str
    k: int
    run: str | None  # None when write-back was off
    topics: list[str]  # entity ids the subgraph was grown from
    linked: list[db.LinkedEntity]  # linker candidates (empty when topics were given)
    subgraph: Subgraph
    scores: np.ndarray  # float32 [m], one per subgraph triple
    top: list[ScoredTriple]
    timings: dict[str, float] = field(default_factory=dict)  # milliseconds per stage

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "qid": self.qid,
            "retriever": self.retriever,
            "k": self.k,
            "run": self.run,
            "topics": self.topics,
            "linked": [asdict(e) for e in self.linked],
            "candidate_triples": self.subgraph.num_triples,
            "top": [asdict(t) for t in self.top],
            "timings_ms": {k: round(v, 3) for k, v in self.timings.items()},
        }


@dataclass(frozen=True)
class QuestionInput:
    text: str
    topics: list[str] | None = None  # names or ids; None = link from the text
    qid: str | None = None


class RetrievePipeline:
    """Holds the embedding tables, question encoder and retriever for one graph.

    Building it reads the tables (disk cache after the first time) and loads the checkpoint;
    `run()` is then one linking query (unless topics are given), one subgraph query and one
    write-back statement per question.
    """

    def __init__(
        self,
        graph: Graph,
        settings: Settings,
        retriever: str = "subgraphrag",
        checkpoint: str | None = None,
        k: int = 100,
        hops: int = 2,
        cap: int | None = None,
        write: bool = True,
        link_top: int = 1,
        threads: int | None = 1,
    ):
        if retriever not in RETRIEVERS:
            raise KgdbError(f"unknown --retriever {retriever!r}; choose one of {', '.join(RETRIEVERS)}")
        if k < 1:
            raise KgdbError(f"--k must be positive, got {k}")
        self.graph, self.settings = graph, settings
        self.k, self.hops, self.cap, self.write, self.link_top = k, hops, cap, write, link_top
        np_tables = db.load_tables(graph, settings.cache_dir)
        _, info = db.graph_fingerprint(graph)
        self.embedding_model = info.get("model") or settings.embedding_model
        self.device = settings.torch_device()
        if threads and self.device == "cpu":
            # Scoring one question is latency-bound small ops: extra intra-op threads only
            # spin-wait, which on a shared 2-core machine costs 10-100x at the p95.
            torch.set_num_threads(threads)
        self.tables = TensorTables.from_numpy(np_tables.entity, np_tables.relation, np_tables.fingerprint, self.device)
        self.embedder = get_embedder(self.embedding_model, settings.device, settings.embedding_batch_size)
        if self.embedder.dim != self.tables.dim:
            raise KgdbError(
                f"the graph's vectors have dimension {self.tables.dim} but {self.embedding_model} gives {self.embedder.dim}"
            )
        self.checkpoint: Checkpoint | None = None
        self.model: Retriever = self._load_model(retriever, checkpoint)
        self.model.prepare(self.tables)

    def _load_model(self, retriever: str, checkpoint: str | None) -> Retriever:
        if checkpoint:
            self.checkpoint = find_checkpoint(checkpoint, self.settings.checkpoints_dir)
        elif retriever == "subgraphrag":
            self.checkpoint = checkpoint_for_graph(self.settings.checkpoints_dir, retriever, self.tables.fingerprint)
        if self.checkpoint is None:
            return build_model({"retriever": retriever}).to(self.device).eval()
        if self.checkpoint.config.get("retriever") != retriever:
            raise KgdbError(
                f"checkpoint {self.checkpoint.name} holds a {self.checkpoint.config.get('retriever')} model, "
                f"not {retriever}"
            )
        check_compatible(self.checkpoint, self.embedding_model, self.tables.dim)
        return load_model(self.checkpoint, self.device)

    @property
    def retriever(self) -> str:
        return self.model.name

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode(texts)

    def run(self, question: str, topics: list[str] | None = None, qid: str | None = None, q_emb: np.ndarray | None = None) -> RetrievalResult:
        if not question or not question.strip():
            raise KgdbError("the question is empty")
        timings: dict[str, float] = {}
        t = time.perf_counter()
        if q_emb is None:
            q_emb = self.embed([question])[0]
        timings["embed"] = _ms(t)

        t = time.perf_counter()
        linked: list[db.LinkedEntity] = []
        if topics:
            topic_ids = db.resolve_topics(self.graph, topics)
        else:
            linked = db.link_entities(self.graph, question, q_emb, k=max(5, self.link_top))
            if not linked:
                raise KgdbError(f"no entity of the graph is mentioned in {question!r}; pass --topic NAME")
            topic_ids = [e.id for e in linked[: self.link_top]]
        timings["link"] = _ms(t)

        t = time.perf_counter()
        sg = db.fetch(self.graph, topic_ids, q_emb, hops=self.hops, cap=self.cap, question=question, qid=qid)
        timings["fetch"] = _ms(t)

        scores, order = self.score(sg, q_emb, timings)

        t = time.perf_counter()
        run = None
        if self.write and sg.num_triples:
            run = db.write_scores(self.graph, sg, scores, self.retriever, self.k)
        timings["write"] = _ms(t)

        ids = sg.entity_ids
        top = [
            ScoredTriple(rank, *sg.triple(i), float(scores[i]), ids[sg.head[i]], ids[sg.tail[i]], int(i))
            for rank, i in enumerate(order.tolist(), start=1)
        ]
        return RetrievalResult(question, qid, self.retriever, self.k, run, topic_ids, linked, sg, scores, top, timings)

    def score(self, sg: Subgraph, q_emb: np.ndarray, timings: dict[str, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Scores of every triple and the top-K order (best first)."""
        timings = {} if timings is None else timings
        t = time.perf_counter()
        x = featurise(sg, self.tables, q_emb)
        timings["featurise"] = _ms(t)
        t = time.perf_counter()
        with torch.no_grad():
            s = self.model.score(x) if sg.num_triples else torch.zeros(0)
            order = top_k(s, self.k)
        scores, order = s.float().cpu().numpy(), order.cpu().numpy()
        timings["score"] = _ms(t)
        return scores, order

    def run_batch(self, questions: list[QuestionInput]):
        """Yield one result (or the KgdbError) per question; question texts are embedded in one batch."""
        embs = self.embed([q.text for q in questions])
        for q, emb in zip(questions, embs):
            try:
                yield self.run(q.text, q.topics, q.qid, q_emb=emb)
            except KgdbError as exc:
                yield exc


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
