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
from kgdb.models.features import batch_tensors, featurise
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
    write-back statement per question. `hops`/`cap` default to those the checkpoint was trained
    with (else 2 hops and the fetch's default cap).
    """

    def __init__(
        self,
        graph: Graph,
        settings: Settings,
        retriever: str = "subgraphrag",
        checkpoint: str | None = None,
        k: int = 100,
        hops: int | None = None,
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
        # Unless told otherwise, fetch subgraphs the way the checkpoint's training data was fetched.
        fetch = (self.checkpoint.config.get("fetch") or {}) if self.checkpoint else {}
        self.hops = hops or fetch.get("hops") or 2
        self.cap = cap or fetch.get("cap")

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
        """One question: link (unless `topics`), fetch, score, keep the top K, write back."""
        fetched = self._fetch(question, topics, qid, q_emb)
        t = time.perf_counter()
        x = featurise(fetched.subgraph, self.tables, fetched.q_emb)
        fetched.timings["featurise"] = _ms(t)
        t = time.perf_counter()
        scores = self._score(x)[0]
        fetched.timings["score"] = _ms(t)
        return self._finish(fetched, scores)

    def run_batch(self, questions: list[QuestionInput], batch_size: int = 16):
        """Yield one result (or the KgdbError) per question, in order.

        Texts are embedded together; each question costs one fetch (and one write-back) round-trip;
        each group of `batch_size` subgraphs is scored in one forward pass over their disjoint union
        (featurise/score timings are the group's time divided by its size).
        """
        embs = self.embed([q.text for q in questions]) if questions else []
        for start in range(0, len(questions), batch_size):
            group: list[_Fetched | KgdbError] = []
            for q, emb in zip(questions[start : start + batch_size], embs[start : start + batch_size]):
                try:
                    group.append(self._fetch(q.text, q.topics, q.qid, emb))
                except KgdbError as exc:
                    group.append(exc)
            ok = [f for f in group if isinstance(f, _Fetched)]
            if ok:
                t = time.perf_counter()
                x = batch_tensors([featurise(f.subgraph, self.tables, f.q_emb) for f in ok])
                featurise_ms = _ms(t) / len(ok)
                t = time.perf_counter()
                all_scores = self._score(x)
                score_ms = _ms(t) / len(ok)
                for f, scores in zip(ok, all_scores):
                    f.timings.update(featurise=featurise_ms, score=score_ms)
                    f.scores = scores
            for f in group:
                if isinstance(f, KgdbError):
                    yield f
                    continue
                try:
                    yield self._finish(f, f.scores)
                except KgdbError as exc:
                    yield exc

    def _fetch(self, question: str, topics: list[str] | None, qid: str | None, q_emb: np.ndarray | None) -> "_Fetched":
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
        return _Fetched(question, qid, q_emb, topic_ids, linked, sg, timings)

    def _score(self, x) -> list[np.ndarray]:
        """Scores of a (possibly batched) featurised subgraph, split per question."""
        with torch.no_grad():
            s = self.model.score(x) if x.num_triples else torch.zeros(0, device=x.head.device)
        s = s.float().cpu().numpy()
        off = x.triple_offsets or [0, len(s)]
        return [s[a:b] for a, b in zip(off[:-1], off[1:])]

    def score(self, sg: Subgraph, q_emb: np.ndarray) -> np.ndarray:
        """Scores of every triple of one fetched subgraph (no write-back)."""
        return self._score(featurise(sg, self.tables, q_emb))[0]

    def _finish(self, f: "_Fetched", scores: np.ndarray) -> RetrievalResult:
        sg = f.subgraph
        order = db.top_k(scores, self.k)
        t = time.perf_counter()
        run = None
        if self.write and sg.num_triples:
            run = db.write_scores(self.graph, sg, scores, self.retriever, self.k)
        f.timings["write"] = _ms(t)
        ids = sg.entity_ids
        top = [
            ScoredTriple(rank, *sg.triple(i), float(scores[i]), ids[sg.head[i]], ids[sg.tail[i]], int(i))
            for rank, i in enumerate(order.tolist(), start=1)
        ]
        return RetrievalResult(f.question, f.qid, self.retriever, self.k, run, f.topic_ids, f.linked, sg, scores, top, f.timings)


@dataclass
class _Fetched:
    question: str
    qid: str | None
    q_emb: np.ndarray
    topic_ids: list[str]
    linked: list
    subgraph: Subgraph
    timings: dict[str, float]
    scores: np.ndarray | None = None


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
