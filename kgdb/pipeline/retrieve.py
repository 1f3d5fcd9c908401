"""A registered tensor retriever as a `QuestionRetriever`: topics (the one linking policy) ->
subgraph from Neo4j -> tensors -> scores -> top-K -> write-back.

torch is imported only when a torch module scores: a retriever with a numpy twin that applies
(`kgdb.scoring.twins`: cosine without a checkpoint, cosine-dde with one) runs on numpy, which keeps
a cold `kgdb ask` free of the torch import (seconds).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Protocol, cast

import numpy as np

from kgdb.blas import blas_threads
from kgdb.config import Settings
from kgdb.cypher import Graph, fetching
from kgdb.cypher.linking import question_topics, resolve_each, topic_names
from kgdb.cypher.writeback import write_scores
from kgdb.errors import InputError, KgdbError
from kgdb.limits import DEFAULT_CAP
from kgdb.models.checkpoints import Checkpoint, check_compatible, load_model
from kgdb.models.default import SHIPPED_FOLDER
from kgdb.pipeline.model_choice import GraphFacts, choose_retriever_model
from kgdb.pipeline.vectors import (
    EntityRowCache,
    EntityVectors,
    entity_vectors,
    trained_on_this_data,
    with_local_entities,
)
from kgdb.protocol import Retrieval, ScoredPath, ScoredTriple
from kgdb.ranking import top_k
from kgdb.reading import QuestionReading, Topics, read_question
from kgdb.scoring.twins import NumpyScorer, numpy_scorer
from kgdb.subgraph import Subgraph

if TYPE_CHECKING:
    from torch import Tensor

    from kgdb.models.base import Retriever, SubgraphTensors

log = logging.getLogger(__name__)

STAGES = ("embed", "link", "fetch", "featurise", "score", "write")


@dataclass(frozen=True)
class QuestionInput:
    text: str
    topics: list[str] | None = None  # names or ids; None = link from the text
    qid: str | None = None


class RetrievePipeline:
    """Holds the embedding tables, question encoder and retriever for one graph.

    Building it reads the relation table (disk cache after the first time) and loads the checkpoint;
    `retrieve()` is then one linking query (unless topics are given), one subgraph query, the
    subgraph's entity rows not cached yet (`kgdb.pipeline.vectors`: vectors a lazy load left out are
    filled on the way) and one write-back statement per question. `hops`/`cap` default to those the
    checkpoint was trained with, or to the cap chosen for it on validation (`fetch.inference_cap`),
    else 2 hops and the fetch's default cap. `checkpoint`: a `Checkpoint` already chosen
    (`kgdb.pipeline.model_choice`, as the answering policy and `kgdb retrieve` do), a name or
    folder, or None for the newest trained on this graph; a trainable retriever without one raises
    `kgdb.models.checkpoints.NoCheckpointError`.
    """

    def __init__(
        self,
        graph: Graph,
        settings: Settings,
        retriever: str = "subgraphrag",
        checkpoint: str | Checkpoint | None = None,
        k: int = 100,
        hops: int | None = None,
        cap: int | None = None,
        write: bool = True,
        link_top: int = 1,
        threads: int | None = 1,
        inference: dict | None = None,
        note: str | None = None,
    ):
        """`inference`: values of the model's `inference_settings` (e.g. RAPL's `max_triples`) that
        replace the checkpoint's. `note`: told with every retrieval (why a stand-in model answers)."""
        if k < 1:
            raise InputError(f"must be positive, got {k}", path="--k")
        self.graph, self.settings = graph, settings
        self.k, self.write, self.link_top, self.threads = k, write, link_top, threads
        self.notes: list[str] = [note] if note else []
        self.note = note
        if not isinstance(checkpoint, Checkpoint):  # the one checkpoint rule, before torch is imported
            checkpoint = choose_retriever_model(GraphFacts.of(graph), settings, retriever, checkpoint).checkpoint
        self.checkpoint: Checkpoint | None = checkpoint
        ckpt = checkpoint
        # Featurise + score hold this: the entity row cache grows and the model's projections follow
        # it, so threads sharing a pipeline (`eval qa --concurrency`) take turns; fetches stay parallel.
        self._scoring = threading.Lock()
        # a retriever with a numpy twin scores one question in numpy: no torch import
        self._numpy_score = numpy_scorer(retriever, ckpt.path if ckpt else None)
        self.inference: dict = {}
        if self._numpy_score is not None:
            if inference:
                raise InputError(f"{retriever} has no inference settings (got {', '.join(inference)})", path="--set")
            self._init_numpy(retriever, hops, cap)
            return
        import torch

        from kgdb.models import registry
        from kgdb.models.base import resolve_device

        self.device = resolve_device(settings.device)
        if threads and self.device == "cpu":
            # Scoring one question is latency-bound small ops: extra intra-op threads only
            # spin-wait, which on a shared 2-core machine costs 10-100x at the p95.
            torch.set_num_threads(threads)
        self._open_vectors()
        self.model: Retriever | None = registry.with_inference_settings(self._load_model(retriever), inference or {})
        self.inference = {k: getattr(self.model.cfg, k) for k in inference or {}}  # typed, for the results file
        self.rows = EntityRowCache(self.vectors, self.device)  # the entity rows questions touched, projected once
        self._fetch_settings(hops, cap)

    def _init_numpy(self, retriever: str, hops: int | None, cap: int | None) -> None:
        self.device = "cpu"
        self._open_vectors()
        self._check_checkpoint(retriever)
        self.model = None
        self._name = retriever
        self._fetch_settings(hops, cap)

    def _open_vectors(self) -> None:
        """The graph's entity rows on demand, its relation table and the question encoder."""
        self.vectors: EntityVectors
        self.vectors, self.embedding_model = entity_vectors(self.graph, self.settings)
        self.embedder = self.vectors.embedder
        if self.embedder.dim != self.vectors.dim:
            raise KgdbError(
                f"the graph's vectors have dimension {self.vectors.dim} but {self.embedding_model} gives {self.embedder.dim}"
            )

    def _fetch_settings(self, hops: int | None, cap: int | None) -> None:
        # Unless told otherwise, fetch subgraphs the way the checkpoint's training data was fetched, or
        # with the cap chosen for it on its validation split (`benchmarks/inference_cap.py --write`).
        fetch = (self.checkpoint.config.get("fetch") or {}) if self.checkpoint else {}
        self.hops = hops if hops is not None else fetch.get("hops") or 2
        self.cap = cap if cap is not None else fetch.get("inference_cap") or fetch.get("cap") or DEFAULT_CAP

    def _check_checkpoint(self, retriever: str) -> None:
        """Refuse a checkpoint of another retriever or embedding space; note one trained on another graph."""
        if self.checkpoint is None:
            return
        cfg = self.checkpoint.config
        if cfg.get("retriever") != retriever:
            raise InputError(
                f"checkpoint {self.checkpoint.name} holds a {cfg.get('retriever')} model, not {retriever}",
                path="--checkpoint",
            )
        check_compatible(self.checkpoint, self.embedding_model, self.vectors.dim)
        if trained_on_this_data(cfg, self.vectors.fingerprint, self.vectors.data_fingerprint) is False:
            note = (
                f"checkpoint {self.checkpoint.name} was trained on another graph "
                f"({cfg.get('dataset', '?')}, fingerprint {cfg.get('graph_fingerprint', '?')[:12]}), "
                f"not this one ({self.vectors.fingerprint[:12]})"
            )
            self.notes.append(note)
            if self.checkpoint.path.parent != SHIPPED_FOLDER:  # a shipped default is meant for other graphs
                log.warning(note)

    def _load_model(self, retriever: str) -> Retriever:
        from kgdb.models import registry

        if self.checkpoint is None:
            return registry.build(retriever, embedding_dim=self.vectors.dim).to(self.device).eval()
        self._check_checkpoint(retriever)
        return load_model(self.checkpoint, self.device)

    @property
    def name(self) -> str:
        return self._name if self.model is None else self.model.name

    retriever = name

    @property
    def _passes_paths(self) -> bool:
        """A "paths" retriever (RAPL): it passes the triples of its sampled paths, not the top K."""
        return self.model is not None and self.model.returns == "paths"

    def describe(self) -> dict:
        """What to record next to results: the method really used and where its weights came from."""
        ckpt = self.checkpoint
        return {
            "retriever": self.name,
            "checkpoint": ckpt.name if ckpt else None,
            "checkpoint_graph": (ckpt.config.get("graph_fingerprint") or "")[:12] if ckpt else None,
            "graph": self.vectors.fingerprint[:12],
            "hops": self.hops,
            "cap": self.cap,
            "k": self.k,
            "inference_settings": dict(self.inference),
            "notes": list(self.notes),
        }

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode(texts)

    def topics(self, reading: QuestionReading, q_emb: np.ndarray, topics: list[str] | None) -> Topics:
        return question_topics(
            self.graph,
            reading,
            q_emb,
            topics,
            top=self.link_top,
            entity_vectors=self.vectors.vectors,
            encode=self.embedder.encode,
        )

    def resolve(self, keys: list[str]) -> list[str]:
        """Entity ids of the given names/ids that the graph has (the policy for given topics)."""
        return list(dict.fromkeys(resolve_each(self.graph, keys).values()))

    def read(self, question: QuestionReading, topics: list[str] | None = None) -> QuestionReading:
        """The question read and linked, nothing fetched (`kgdb ask --explain`)."""
        found = self.topics(question, question.vector(self.embed), topics)
        return question.linked(found, topic_names(self.graph, found))

    def retrieve(
        self,
        question: str | QuestionReading,
        topics: list[str] | None = None,
        *,
        qid: str | None = None,
        q_emb: np.ndarray | None = None,
        run: str | None = None,
    ) -> Retrieval:
        """One question: topics (given or linked), fetch, score, keep the top K, write back (as run `run`,
        replacing it when it exists: a resumed evaluation never leaves a second run of one question)."""
        fetched = self._fetch(question, topics, qid, q_emb)
        with self._scoring:
            t = time.perf_counter()
            x = self._features([(fetched.subgraph, fetched.q_emb)])
            fetched.timings["featurise"] = _ms(t)
            t = time.perf_counter()
            scores, fetched.paths = self._score_paths(x)
            fetched.timings["score"] = _ms(t)
        return self._finish(fetched, scores[0], run)

    def run_batch(self, questions: list[QuestionInput], batch_size: int = 16) -> Iterator[Retrieval | KgdbError]:
        """Yield one result (or the KgdbError) per question, in order.

        Texts are embedded together; each question costs one fetch (and one write-back) round-trip;
        each group of `batch_size` subgraphs is scored in one forward pass over their disjoint union
        (featurise/score timings are the group's time divided by its size).
        """
        embs: np.ndarray | list[np.ndarray] = self.embed([q.text for q in questions]) if questions else []
        for start in range(0, len(questions), batch_size):
            group: list[_Fetched | KgdbError] = []
            for q, emb in zip(questions[start : start + batch_size], embs[start : start + batch_size]):
                try:
                    group.append(self._fetch(q.text, q.topics, q.qid, emb))
                except KgdbError as exc:
                    group.append(exc)
            ok = [f for f in group if isinstance(f, _Fetched)]
            if ok:
                with self._scoring:
                    t = time.perf_counter()
                    x = self._features([(f.subgraph, f.q_emb) for f in ok])
                    featurise_ms = _ms(t) / len(ok)
                    t = time.perf_counter()
                    all_scores, all_paths = self._score_paths(x)
                    score_ms = _ms(t) / len(ok)
                for f, scores, paths in zip(ok, all_scores, all_paths):
                    f.timings.update(featurise=featurise_ms, score=score_ms)
                    f.scores, f.paths = scores, [paths]
            for item in group:
                if isinstance(item, KgdbError):
                    yield item
                    continue
                try:
                    yield self._finish(item, cast(np.ndarray, item.scores))  # scored above with its group
                except KgdbError as exc:
                    yield exc

    def _fetch(
        self, question: str | QuestionReading, topics: list[str] | None, qid: str | None, q_emb: np.ndarray | None
    ) -> "_Fetched":
        reading = question if isinstance(question, QuestionReading) else read_question(question)
        question = reading.text  # shown and stored with the run; the encoder reads it
        if not question or not question.strip():
            raise InputError("the question is empty", path="QUESTION")
        timings: dict[str, float] = {}
        t = time.perf_counter()
        if q_emb is None:
            q_emb = reading.vector(self.embed)
        timings["embed"] = _ms(t)
        t = time.perf_counter()
        found = self.topics(reading, q_emb, topics)
        timings["link"] = _ms(t)
        t = time.perf_counter()
        sg = fetching.fetch(
            self.graph,
            found.ids,
            q_emb,
            hops=self.hops,
            cap=self.cap,
            question=question,
            qid=qid,
            **self.settings.fetch_bounds,
        )
        timings["fetch"] = _ms(t)
        return _Fetched(question, qid, q_emb, found, sg, timings, reading)

    def _features(self, parts: list[tuple[Subgraph, np.ndarray]]):
        """What `_score` takes for (subgraph, question vector) pairs: one batched `SubgraphTensors`
        (torch), or (subgraph, question, entity rows) triples (numpy). Either way the subgraphs'
        entities index compact rows (`EntityRowCache`, `EntityVectors.compact`), filled on use."""
        for _, q in parts:
            if np.shape(q) != (self.vectors.dim,):
                raise KgdbError(
                    f"question embedding has shape {np.shape(q)} but the graph's embedding tables have dimension "
                    f"{self.vectors.dim}: embed questions with the model the graph was loaded with"
                )
        subgraphs = [sg for sg, _ in parts]
        if self.model is None:
            rows, local = self.vectors.compact([sg.entity_idx for sg in subgraphs])
            return [(sg, q, rows) for sg, (_, q) in zip(with_local_entities(subgraphs, local), parts)]
        from kgdb.models.features import batch_tensors, featurise

        local = self.rows.local([sg.entity_idx for sg in subgraphs])
        tables = self.rows.tables
        self.model.prepare(tables)  # projects only the rows new since the last question
        return batch_tensors(
            [featurise(sg, tables, q) for sg, (_, q) in zip(with_local_entities(subgraphs, local), parts)]
        )

    def _score(self, x) -> list[np.ndarray]:
        """Scores of a (possibly batched) featurised subgraph, split per question."""
        if self.model is None:
            rel = self.vectors.tables.relation
            twin = cast(NumpyScorer, self._numpy_score)  # no torch model: the numpy twin scores
            with blas_threads(self.threads or None):
                return [twin(rows, rel, sg, q) for sg, q, rows in x]
        import torch

        with torch.no_grad():
            s = self.model.score(x) if x.num_triples else torch.zeros(0, device=x.head.device)
        scores = s.float().cpu().numpy()
        off = x.triple_offsets or [0, len(scores)]
        return [scores[a:b] for a, b in zip(off[:-1], off[1:])]

    def _score_paths(self, x) -> tuple[list[np.ndarray], list]:
        """`_score`, and for a "paths" retriever also each question's sampled paths."""
        if not self._passes_paths or not x.num_triples:
            scores = self._score(x)
            return scores, [[] for _ in scores]
        s, paths = cast(_PathRetriever, self.model).paths(x)  # _passes_paths: a "paths" retriever
        flat = s.float().cpu().numpy()
        off = x.triple_offsets or [0, len(flat)]
        return [flat[a:b] for a, b in zip(off[:-1], off[1:])], paths

    def score(self, sg: Subgraph, q_emb: np.ndarray) -> np.ndarray:
        """Scores of every triple of one fetched subgraph (no write-back)."""
        return self._score(self._features([(sg, q_emb)]))[0]

    def _finish(self, f: "_Fetched", scores: np.ndarray, run_id: str | None = None) -> Retrieval:
        sg = f.subgraph
        # A path retriever passes the triples on its kept paths (an adaptive number), not K.
        k = self.k
        if self._passes_paths:
            from kgdb.models.base import passed_count  # torch is loaded already: the model is a torch module

            k = max(passed_count(scores), 1)
        order = top_k(scores, k)
        t = time.perf_counter()
        run = None
        if self.write and sg.num_triples:
            run = write_scores(self.graph, sg, scores, self.name, k, run=run_id)
        f.timings["write"] = _ms(t)
        ids = sg.entity_ids
        top = [
            ScoredTriple(rank, *sg.triple(i), float(scores[i]), ids[sg.head[i]], ids[sg.tail[i]], int(i))
            for rank, i in enumerate(order.tolist(), start=1)
        ]
        notes = [n for n in [self.note, f.topics.note()] if n]
        names = dict(zip(sg.entity_ids, sg.entity_names))
        return Retrieval(
            question=f.question,
            qid=f.qid,
            retriever=self.name,
            k=k,
            topics=f.topics.ids,
            triples=top,
            paths=_scored_paths(sg, f.paths[0] if f.paths else [], self.name),
            run=run,
            linked=f.topics.linked,
            names=names,
            cvt={sg.entity_ids[i] for i in np.flatnonzero(sg.is_cvt).tolist()},
            timings=f.timings,
            notes=notes,
            missing_topics=list(f.topics.missing),
            subgraph=sg,
            scores=scores,
            reading=f.reading.linked(f.topics, {i: names.get(i, i) for i in f.topics.ids}),
        )


class _PathRetriever(Protocol):
    """A retriever whose `returns` is "paths" (RAPL): it also samples each question's paths."""

    def paths(self, x: SubgraphTensors) -> tuple[Tensor, list]: ...


@dataclass
class _Fetched:
    question: str
    qid: str | None
    q_emb: np.ndarray
    topics: Topics
    subgraph: Subgraph
    timings: dict[str, float]
    reading: QuestionReading
    scores: np.ndarray | None = None
    paths: list | None = None  # per question of the scored group: a "paths" retriever's paths


def _scored_paths(sg: Subgraph, paths, source: str) -> list[ScoredPath]:
    """A path retriever's paths (local triple indices and directions) as entity ids and names."""
    out = []
    for p in paths:
        nodes = [int(sg.head[p.triples[0]] if p.directions[0] > 0 else sg.tail[p.triples[0]])]
        for t, d in zip(p.triples, p.directions):
            nodes.append(int(sg.tail[t] if d > 0 else sg.head[t]))
        out.append(
            ScoredPath(
                score=p.probability,
                entities=tuple(sg.entity_ids[i] for i in nodes),
                relations=tuple(sg.relation_names[t] for t in p.triples),
                directions=tuple(p.directions),
                names=tuple(sg.entity_names[i] or sg.entity_ids[i] for i in nodes),
                source=source,
            )
        )
    return sorted(out, key=lambda p: -p.score)


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
