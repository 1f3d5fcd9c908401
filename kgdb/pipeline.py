"""The seam: the one module where the database side (`kgdb.cypher`, numpy) meets the torch side
(`kgdb.models`, `kgdb.training`). Everything above it (QA, CLI, Python API) talks to retrieval
through here.

- `RetrievePipeline`: a registered tensor retriever as a `QuestionRetriever`: topics (the one
  linking policy) -> subgraph from Neo4j -> tensors -> scores -> top-K -> write-back.
- `prepare_split`: the labelled subgraphs of a question split, fetched once and cached on disk.
- `load_tensor_tables`: the graph's embedding tables as tensors.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.cypher import fetching
from kgdb.cypher.linking import Topics, question_topics, resolve_each
from kgdb.cypher.tables import graph_fingerprint, load_tables
from kgdb.cypher.writeback import write_scores
from kgdb.data.cache import CachedSplit, cache_key, file_digest, load_cache, save_cache
from kgdb.data.questions import QuestionRecord
from kgdb.embeddings import get_embedder
from kgdb.errors import InputError, KgdbError
from kgdb.models import registry
from kgdb.models.base import Retriever, TensorTables, resolve_device
from kgdb.models.checkpoints import Checkpoint, check_compatible, checkpoint_for_graph, find_checkpoint, load_model
from kgdb.models.features import batch_tensors, featurise
from kgdb.protocol import Retrieval, ScoredTriple
from kgdb.ranking import top_k
from kgdb.subgraph import Subgraph

log = logging.getLogger(__name__)

STAGES = ("embed", "link", "fetch", "featurise", "score", "write")


@dataclass(frozen=True)
class QuestionInput:
    text: str
    topics: list[str] | None = None  # names or ids; None = link from the text
    qid: str | None = None


def load_tensor_tables(graph: Graph, settings: Settings) -> tuple[TensorTables, str]:
    """The graph's embedding tables on the configured device, and the model that embedded them."""
    np_tables = load_tables(graph, settings.cache_dir)
    _, info = graph_fingerprint(graph)
    model = info.get("model") or settings.embedding_model
    tables = TensorTables.from_numpy(np_tables.entity, np_tables.relation, np_tables.fingerprint, resolve_device(settings.device))
    return tables, model


class RetrievePipeline:
    """Holds the embedding tables, question encoder and retriever for one graph.

    Building it reads the tables (disk cache after the first time) and loads the checkpoint;
    `retrieve()` is then one linking query (unless topics are given), one subgraph query and one
    write-back statement per question. `hops`/`cap` default to those the checkpoint was trained
    with (else 2 hops and the fetch's default cap). A trainable retriever without a checkpoint
    raises `kgdb.models.checkpoints.NoCheckpointError`.
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
        if k < 1:
            raise InputError(f"must be positive, got {k}", path="--k")
        cls = registry.get(retriever)
        self.graph, self.settings = graph, settings
        self.k, self.write, self.link_top = k, write, link_top
        self.device = resolve_device(settings.device)
        if threads and self.device == "cpu":
            # Scoring one question is latency-bound small ops: extra intra-op threads only
            # spin-wait, which on a shared 2-core machine costs 10-100x at the p95.
            torch.set_num_threads(threads)
        self.tables, self.embedding_model = load_tensor_tables(graph, settings)
        self.embedder = get_embedder(self.embedding_model, settings.device, settings.embedding_batch_size)
        if self.embedder.dim != self.tables.dim:
            raise KgdbError(
                f"the graph's vectors have dimension {self.tables.dim} but {self.embedding_model} gives {self.embedder.dim}"
            )
        self.notes: list[str] = []
        self.checkpoint: Checkpoint | None = None
        if checkpoint:
            self.checkpoint = find_checkpoint(checkpoint, settings.checkpoints_dir)
        elif cls.trainable:
            self.checkpoint = checkpoint_for_graph(settings.checkpoints_dir, retriever, self.tables.fingerprint)
        self.model: Retriever = self._load_model(retriever)
        self.model.prepare(self.tables)
        # Unless told otherwise, fetch subgraphs the way the checkpoint's training data was fetched.
        fetch = (self.checkpoint.config.get("fetch") or {}) if self.checkpoint else {}
        self.hops = hops or fetch.get("hops") or 2
        self.cap = cap or fetch.get("cap")

    def _load_model(self, retriever: str) -> Retriever:
        if self.checkpoint is None:
            return registry.build(retriever, embedding_dim=self.tables.dim).to(self.device).eval()
        cfg = self.checkpoint.config
        if cfg.get("retriever") != retriever:
            raise InputError(
                f"checkpoint {self.checkpoint.name} holds a {cfg.get('retriever')} model, not {retriever}", path="--checkpoint"
            )
        check_compatible(self.checkpoint, self.embedding_model, self.tables.dim)
        trained_on = cfg.get("graph_fingerprint")
        if trained_on and trained_on != self.tables.fingerprint:
            note = (
                f"checkpoint {self.checkpoint.name} was trained on another graph "
                f"({cfg.get('dataset', '?')}, fingerprint {trained_on[:12]}), not this one ({self.tables.fingerprint[:12]})"
            )
            self.notes.append(note)
            log.warning(note)
        return load_model(self.checkpoint, self.device)

    @property
    def name(self) -> str:
        return self.model.name

    retriever = name

    def describe(self) -> dict:
        """What to record next to results: the method really used and where its weights came from."""
        ckpt = self.checkpoint
        return {
            "retriever": self.name,
            "checkpoint": ckpt.name if ckpt else None,
            "checkpoint_graph": (ckpt.config.get("graph_fingerprint") or "")[:12] if ckpt else None,
            "graph": self.tables.fingerprint[:12],
            "hops": self.hops,
            "cap": self.cap,
            "k": self.k,
            "notes": list(self.notes),
        }

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode(texts)

    def topics(self, question: str, q_emb: np.ndarray, topics: list[str] | None) -> Topics:
        return question_topics(self.graph, question, q_emb, topics, top=self.link_top)

    def resolve(self, keys: list[str]) -> list[str]:
        """Entity ids of the given names/ids that the graph has (the policy for given topics)."""
        return list(dict.fromkeys(resolve_each(self.graph, keys).values()))

    def retrieve(
        self, question: str, topics: list[str] | None = None, *, qid: str | None = None, q_emb: np.ndarray | None = None
    ) -> Retrieval:
        """One question: topics (given or linked), fetch, score, keep the top K, write back."""
        fetched = self._fetch(question, topics, qid, q_emb)
        t = time.perf_counter()
        x = featurise(fetched.subgraph, self.tables, fetched.q_emb)
        fetched.timings["featurise"] = _ms(t)
        t = time.perf_counter()
        scores = self._score(x)[0]
        fetched.timings["score"] = _ms(t)
        return self._finish(fetched, scores)

    def run_batch(self, questions: list[QuestionInput], batch_size: int = 16) -> Iterator[Retrieval | KgdbError]:
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
            raise InputError("the question is empty", path="QUESTION")
        timings: dict[str, float] = {}
        t = time.perf_counter()
        if q_emb is None:
            q_emb = self.embed([question])[0]
        timings["embed"] = _ms(t)
        t = time.perf_counter()
        found = self.topics(question, q_emb, topics)
        timings["link"] = _ms(t)
        t = time.perf_counter()
        sg = fetching.fetch(
            self.graph, found.ids, q_emb, hops=self.hops, cap=self.cap, question=question, qid=qid,
            chunk=self.settings.fetch_chunk, max_triples=self.settings.fetch_max_triples,
        )
        timings["fetch"] = _ms(t)
        return _Fetched(question, qid, q_emb, found, sg, timings)

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

    def _finish(self, f: "_Fetched", scores: np.ndarray) -> Retrieval:
        sg = f.subgraph
        order = top_k(scores, self.k)
        t = time.perf_counter()
        run = None
        if self.write and sg.num_triples:
            run = write_scores(self.graph, sg, scores, self.name, self.k)
        f.timings["write"] = _ms(t)
        ids = sg.entity_ids
        top = [
            ScoredTriple(rank, *sg.triple(i), float(scores[i]), ids[sg.head[i]], ids[sg.tail[i]], int(i))
            for rank, i in enumerate(order.tolist(), start=1)
        ]
        notes = [n for n in [f.topics.note()] if n]
        return Retrieval(
            question=f.question,
            qid=f.qid,
            retriever=self.name,
            k=self.k,
            topics=f.topics.ids,
            triples=top,
            run=run,
            linked=f.topics.linked,
            names=dict(zip(sg.entity_ids, sg.entity_names)),
            cvt={sg.entity_ids[i] for i in np.flatnonzero(sg.is_cvt).tolist()},
            timings=f.timings,
            notes=notes,
            missing_topics=list(f.topics.missing),
            subgraph=sg,
            scores=scores,
        )


@dataclass
class _Fetched:
    question: str
    qid: str | None
    q_emb: np.ndarray
    topics: Topics
    subgraph: Subgraph
    timings: dict[str, float]
    scores: np.ndarray | None = None


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


# ---- labelled splits for training and evaluation ----------------------------------------------


def prepare_split(
    graph: Graph,
    *,
    cache_dir: Path,
    dataset: str,
    split: str,
    source: Path,
    questions: list[QuestionRecord],
    embed: Callable[[list[str]], np.ndarray],
    graph_fingerprint: str,
    embedding_model: str,
    hops: int,
    cap: int | None,
    on_start: Callable[[int], None] = lambda total: None,
    on_progress: Callable[[int], None] = lambda _: None,
    chunk: int | None = None,
    max_triples: int | None = None,
) -> CachedSplit:
    """Load the split's labelled subgraphs from disk, or fetch them once and store them."""
    from kgdb.limits import FETCH_CHUNK, FETCH_MAX_TRIPLES

    chunk, max_triples = chunk or FETCH_CHUNK, max_triples or FETCH_MAX_TRIPLES
    # The triple budget changes a subgraph only when it truncates one; keys made before it existed stay valid.
    budget = {} if max_triples == FETCH_MAX_TRIPLES else {"max_triples": max_triples}
    key = cache_key(
        **budget,
        graph=graph_fingerprint,
        model=embedding_model,
        hops=hops,
        cap=cap,
        source=file_digest(source),
        dataset=dataset,
        split=split,
        qids=[q.id for q in questions],
    )
    path = Path(cache_dir) / "subgraphs" / f"{dataset}-{split}-{key[:16]}.npz"
    items = load_cache(path)
    if items is not None:
        meta = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        return CachedSplit(items, path, True, meta.get("counts", {}))
    on_start(len(questions))
    embeddings = embed([q.text for q in questions])
    items, counts, errors = fetching.fetch_labelled(
        graph, questions, embeddings, hops=hops, cap=cap, on_progress=on_progress, chunk=chunk, max_triples=max_triples
    )
    counts["no_sp_triples"] = sum(1 for it in items if not it.labels.any())
    if not errors:  # a transient server failure must not be frozen into the cache
        save_cache(path, items, {"key": key, "dataset": dataset, "split": split, "hops": hops, "cap": cap, "counts": counts})
    return CachedSplit(items, path, False, counts, errors)


# ---- training on a graph ------------------------------------------------------------------------


@dataclass
class SplitReport:
    dataset: str
    split: str
    split_data: CachedSplit


def train_retriever(
    graph: Graph,
    settings: Settings,
    retriever: str,
    questions: Path,
    *,
    name: str | None = None,
    hops: int = 2,
    cap: int | None = None,
    max_epochs: int = 50,
    patience: int = 10,
    lr: float = 1e-3,
    seed: int = 42,
    settings_overrides: dict | None = None,
    max_train: int | None = None,
    max_val: int | None = None,
    resume: bool = False,
    threads: int | None = None,
    on_split: Callable[[SplitReport], None] = lambda report: None,
    on_fetch_start: Callable[[str, int], None] = lambda split, total: None,
    on_fetch: Callable[[int], None] = lambda n: None,
    on_start: Callable[[dict], None] = lambda info: None,
    on_step: Callable[[float], None] = lambda loss: None,
    on_epoch: Callable[[object], None] = lambda log: None,
):
    """Train a registered retriever on `questions`' train split, select on its val split, and save
    a checkpoint (config saved beside the weights). Returns `(Checkpoint, TrainResult)`."""
    from kgdb.cypher.tables import graph_fingerprint as fingerprint_of
    from kgdb.data.questions import read_questions
    from kgdb.models.checkpoints import save_checkpoint
    from kgdb.training.trainer import TrainConfig, has_positive, seed_everything, train

    cls = registry.get(retriever)
    if not cls.trainable:
        raise InputError(f"{retriever} has nothing to train (no weights); use it directly with --retriever {retriever}", path="RETRIEVER")
    model_cfg = registry.make_config(cls, settings_overrides or {})
    if threads and resolve_device(settings.device) == "cpu":
        torch.set_num_threads(threads)
    cfg = TrainConfig(lr=lr, max_epochs=max_epochs, patience=patience, seed=seed)
    qs = read_questions(questions)
    fingerprint, info = fingerprint_of(graph)
    model_name = info.get("model") or settings.embedding_model
    embedder = get_embedder(model_name, settings.device, settings.embedding_batch_size)
    t0 = time.perf_counter()
    splits = {}
    for split, limit in (("train", max_train), ("val", max_val)):
        records = qs.split(split)
        if limit is not None:
            records = records[:limit]  # splits are in file order, so a prefix is a fixed subsample
        splits[split] = prepare_split(
            graph, cache_dir=settings.cache_dir, dataset=qs.dataset, split=split, source=questions, questions=records,
            embed=embedder.encode, graph_fingerprint=fingerprint, embedding_model=model_name, hops=hops, cap=cap,
            on_start=lambda total, split=split: on_fetch_start(split, total), on_progress=on_fetch,
            chunk=settings.fetch_chunk, max_triples=settings.fetch_max_triples,
        )
        on_split(SplitReport(qs.dataset, split, splits[split]))
    tables, _ = load_tensor_tables(graph, settings)
    data_seconds = time.perf_counter() - t0
    tr, va = splits["train"], splits["val"]
    usable = sum(1 for it in tr.items if has_positive(it, cls.label_kind))
    if usable == 0 or not va.items:
        raise KgdbError(f"nothing to train on: {usable} training questions with a {cls.label_kind} label, {len(va.items)} validation questions")
    device = str(tables.device)
    out = settings.checkpoints_dir / (name or f"{retriever}-{qs.dataset}")
    on_start({"retriever": retriever, "usable": usable, "skipped": len(tr.items) - usable, "val": len(va.items),
              "device": device, "label_kind": cls.label_kind, "out": out, "max_epochs": cfg.max_epochs})
    seed_everything(seed)
    model = cls(model_cfg, tables.dim).to(device)
    try:
        model, result = train(model, tr.items, va.items, tables, cfg, on_step=on_step, on_epoch=on_epoch, state_dir=out, resume=resume)
    except ValueError as exc:
        raise InputError(str(exc), path="--resume") from exc
    epoch_seconds = [e.seconds for e in result.epochs]
    save_checkpoint(
        model,
        out,
        {
            "embedding_model": model_name,
            "embedding_dim": tables.dim,
            "graph_fingerprint": fingerprint,
            "dataset": qs.dataset,
            "questions": str(questions),
            "fetch": {"hops": hops, "cap": cap},
            "train": {**cfg.__dict__, "max_train": max_train, "max_val": max_val, "device": device, "threads": threads},
            "data_cache": {"train": str(tr.path), "val": str(va.path), "train_from_disk": tr.from_disk},
            "data_seconds": round(data_seconds, 2),
            "result": result.to_json(),
            "metrics": {
                "best_epoch": result.best_epoch,
                "val_triple_recall@100": result.best_val_triple_recall,
                "val_answer_recall@100": next((e.val_answer_recall for e in result.epochs if e.epoch == result.best_epoch), None),
                "epoch_seconds_mean": sum(epoch_seconds) / max(len(epoch_seconds), 1),
                "epoch_cpu_seconds_mean": sum(e.cpu_seconds for e in result.epochs) / max(len(result.epochs), 1),
            },
        },
    )
    return find_checkpoint(str(out), settings.checkpoints_dir), result


# ---- relation paths: plan, ground in Cypher, score ----------------------------------------------


@dataclass(frozen=True)
class PlannedPath:
    relations: tuple[str, ...]
    score: float
    directions: tuple[int, ...] = ()  # +1 / -1 per relation; empty = either direction


def _walk(anchor: str, triples) -> tuple[list[str], list[int]]:
    """Entity sequence and step directions of a grounded path (triples are (eid, head, rel, tail))."""
    nodes, dirs = [anchor], []
    for _, head, _, tail in triples:
        forward = head == nodes[-1]
        nodes.append(tail if forward else head)
        dirs.append(1 if forward else -1)
    return nodes, dirs


class CosinePathPlanner:
    """Beam search over relation sequences leaving the topic entities, scored by the cosine of the
    question (topic names removed) and the relation-path text. Untrained: the baseline a trained
    planner (RRP) replaces through the same `plan()` call."""

    name = "cosine"

    def __init__(self, embedder, *, max_hops: int = 2, beam: int = 5, ground_cap: int = 200):
        self.embedder, self.max_hops, self.beam, self.ground_cap = embedder, max_hops, beam, ground_cap

    def plan(self, graph: Graph, question: str, topics: list[str], topic_names: list[str]) -> list[PlannedPath]:
        from kgdb.cypher.paths import ground_relation_path, relations_around
        from kgdb.embeddings import relation_text
        from kgdb.cypher.linking import strip_mentions

        q = self.embedder.encode([strip_mentions(question, topic_names)])[0]
        frontier: list[tuple[tuple[str, ...], list[str]]] = [((), list(topics))]
        kept: list[PlannedPath] = []
        for _ in range(self.max_hops):
            steps = [(rels + (rel,)) for rels, ends in frontier for rel in sorted({r for r, _ in relations_around(graph, ends)})]
            steps = list(dict.fromkeys(steps))
            if not steps:
                break
            sims = self.embedder.encode([" ; ".join(relation_text(r) for r in rels) for rels in steps]) @ q
            order = np.argsort(-sims, kind="stable")[: self.beam]
            kept += [PlannedPath(steps[i], float(sims[i])) for i in order]
            frontier = []
            for i in order:
                ends = {_walk(a, path)[0][-1] for a in topics for path in ground_relation_path(graph, a, list(steps[i]), cap=self.ground_cap)}
                frontier.append((steps[i], sorted(ends)))
        return sorted(kept, key=lambda p: (-p.score, len(p.relations), p.relations))[: self.beam]


class RelationPathRetriever:
    """A `QuestionRetriever` that plans relation paths, grounds each in Cypher hop by hop
    (`ground_step.cypher`: typed relationships, both directions, parallel edges kept, a bounded
    frontier) and returns the reasoning paths, their triples and the entities they reach.

    The planner is any object with `plan(graph, question, topics, topic_names) -> [PlannedPath]`;
    the default is the untrained `CosinePathPlanner`.
    """

    name = "relation-paths"

    def __init__(
        self, graph: Graph, settings: Settings, *, planner=None, k: int = 100, write: bool = True, ground_cap: int = 200, walks: bool = False
    ):
        from kgdb.cypher.tables import graph_fingerprint as fingerprint_of

        self.graph, self.settings, self.k, self.write, self.ground_cap = graph, settings, k, write, ground_cap
        self.walks = walks  # ground as walks (entities may repeat), the planner's label semantics
        _, info = fingerprint_of(graph)
        self.embedding_model = info.get("model") or settings.embedding_model
        self.embedder = get_embedder(self.embedding_model, settings.device, settings.embedding_batch_size)
        self.planner = planner or CosinePathPlanner(self.embedder)
        self.notes: list[str] = []

    def describe(self) -> dict:
        ckpt = getattr(self.planner, "checkpoint", None)
        return {
            "retriever": self.name,
            "planner": getattr(self.planner, "name", type(self.planner).__name__),
            "checkpoint": ckpt.name if ckpt else None,
            "planner_decoding": ("constrained" if self.planner.constrained else "free") if hasattr(self.planner, "constrained") else None,
            "grounding": "walks" if self.walks else "simple paths",
            "k": self.k,
            "notes": list(self.notes),
        }

    def retrieve(
        self, question: str, topics: list[str] | None = None, *, qid: str | None = None, q_emb: np.ndarray | None = None
    ) -> Retrieval:
        from kgdb.cypher.paths import UnknownRelationError, entity_names, ground_relation_path
        from kgdb.protocol import ScoredEntity, ScoredPath

        if not question or not question.strip():
            raise InputError("the question is empty", path="QUESTION")
        timings: dict[str, float] = {}
        t = time.perf_counter()
        q_emb = self.embedder.encode([question])[0] if q_emb is None else q_emb
        found = question_topics(self.graph, question, q_emb, topics)
        names = {i: n for i, (n, _) in entity_names(self.graph, found.ids).items()}
        timings["link"] = _ms(t)
        t = time.perf_counter()
        plans = self.planner.plan(self.graph, question, found.ids, [names.get(i, i) for i in found.ids])
        timings["plan"] = _ms(t)
        t = time.perf_counter()
        paths: list[ScoredPath] = []
        triples: dict[str, tuple[float, tuple]] = {}  # elementId -> (best path score, triple)
        notes: list[str] = []
        for plan in plans:
            for anchor in found.ids:
                try:
                    grounding = ground_relation_path(
                        self.graph, anchor, list(plan.relations), cap=self.ground_cap, directions=list(plan.directions) or None,
                        walks=self.walks,
                    )
                except UnknownRelationError as exc:
                    notes.append(f"planned path skipped: {exc}")
                    break
                for grounded in grounding:
                    nodes, dirs = _walk(anchor, grounded)
                    paths.append(ScoredPath(plan.score, tuple(nodes), plan.relations, tuple(dirs), source=getattr(self.planner, "name", "")))
                    for triple in grounded:
                        if triple[0] not in triples or triples[triple[0]][0] < plan.score:
                            triples[triple[0]] = (plan.score, triple)
        timings["ground"] = _ms(t)
        info = entity_names(self.graph, [e for p in paths for e in p.entities] + found.ids)
        names = {i: n for i, (n, _) in info.items()}
        cvt = {i for i, (_, is_cvt) in info.items() if is_cvt}
        paths = [ScoredPath(p.score, p.entities, p.relations, p.directions, tuple(names.get(e, e) for e in p.entities), p.source) for p in paths]
        paths.sort(key=lambda p: (-p.score, len(p.relations), p.entities))
        ordered = sorted(triples.values(), key=lambda st: (-st[0], st[1][0]))[: self.k]
        top = [
            ScoredTriple(rank, names.get(h, h), r, names.get(tl, tl), score, h, tl, -1)
            for rank, (score, (_, h, r, tl)) in enumerate(ordered, start=1)
        ]
        best: dict[str, float] = {}
        for p in paths:
            if p.answer not in found.ids and p.answer not in cvt:
                best[p.answer] = max(best.get(p.answer, -1.0), p.score)
        entities = [ScoredEntity(e, names.get(e, e), sc) for e, sc in sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))]
        run = None
        t = time.perf_counter()
        if self.write and ordered:
            run = write_scores(self.graph, _as_subgraph(question, qid, found.ids, [st[1] for st in ordered]),
                               np.array([st[0] for st in ordered]), self.name, self.k)
        timings["write"] = _ms(t)
        return Retrieval(
            question=question, qid=qid, retriever=self.name, k=self.k, topics=found.ids, triples=top, paths=paths,
            entities=entities, run=run, linked=found.linked, names=names, cvt=cvt, timings=timings,
            notes=[n for n in [found.note(), *dict.fromkeys(notes)] if n], missing_topics=list(found.missing),
        )


def _as_subgraph(question: str, qid: str | None, topics: list[str], triples: list[tuple]) -> Subgraph:
    """The grounded triples as a `Subgraph`, the shape write-back takes."""
    ids = list(dict.fromkeys([*topics, *(x for _, h, _, t in triples for x in (h, t))]))
    pos = {e: i for i, e in enumerate(ids)}
    n = len(ids)
    return Subgraph(
        entity_ids=ids, entity_names=ids, entity_idx=np.zeros(n, np.int64), is_cvt=np.zeros(n, bool),
        head=np.array([pos[h] for _, h, _, _ in triples], np.int64), relation=np.zeros(len(triples), np.int64),
        tail=np.array([pos[t] for _, _, _, t in triples], np.int64), relation_names=[r for _, _, r, _ in triples],
        edge_ids=[e for e, _, _, _ in triples], topic=np.array([pos[t] for t in topics], np.int64), question=question, qid=qid,
    )


# ---- the trained relation-path planner (RRP §IV-A) ----------------------------------------------

PLANNER = "rrp-planner"


class TrainedPathPlanner:
    """`plan()` with a trained `kgdb.models.planner.PathPlanner`: beam search over (relation,
    direction) steps given the question (topic names removed); scores are path probabilities."""

    name = PLANNER

    def __init__(
        self, model, relation_names: list[str], embedder, *, beam: int = 3, checkpoint: Checkpoint | None = None,
        constrained: bool = True, frontier_cap: int = 200,
    ):
        self.model, self.relation_names, self.embedder, self.beam = model.eval(), relation_names, embedder, beam
        self.checkpoint, self.constrained, self.frontier_cap = checkpoint, constrained, frontier_cap
        self.relation_index = {r: i for i, r in enumerate(relation_names)}

    def _allowed(self, graph: Graph, topics: list[str]):
        """Graph-constrained decoding: after a prefix, only the (relation, direction) steps that leave
        the entities the prefix reaches (one `relations_around` and one `relation_step` per prefix)."""
        from kgdb.cypher.paths import relation_step, relations_around
        from kgdb.models.planner import step_of, token_of

        reached: dict[tuple[int, ...], list[str]] = {(): list(topics)}

        def ends_of(prefix: tuple[int, ...]) -> list[str]:
            if prefix not in reached:
                before = ends_of(prefix[:-1])
                r, d = step_of(prefix[-1])
                reached[prefix] = relation_step(graph, before, self.relation_names[r], d, cap=self.frontier_cap) if before else []
            return reached[prefix]

        def allowed(prefix: tuple[int, ...]) -> list[int]:
            ends = ends_of(prefix)
            if not ends:
                return []
            return [token_of(self.relation_index[r], d) for r, d in relations_around(graph, ends) if r in self.relation_index]

        return allowed

    def plan(self, graph: Graph, question: str, topics: list[str], topic_names: list[str]) -> list[PlannedPath]:
        from kgdb.cypher.linking import strip_mentions
        from kgdb.models.planner import step_of, text_features

        text = strip_mentions(question, topic_names)
        q = torch.from_numpy(self.embedder.encode([text])[0])
        words = torch.tensor(text_features(text, self.model.cfg.buckets))
        out = []
        allowed = self._allowed(graph, topics) if self.constrained else None
        for tokens, logp in self.model.beam_search(q, words, self.beam, allowed):
            steps = [step_of(t) for t in tokens]
            out.append(PlannedPath(tuple(self.relation_names[r] for r, _ in steps), float(np.exp(logp)), tuple(d for _, d in steps)))
        return out


def load_planner(graph: Graph, settings: Settings, checkpoint: str | None = None, *, beam: int = 3, constrained: bool = True) -> TrainedPathPlanner:
    """The named planner checkpoint, else the newest trained on this graph (`NoCheckpointError`)."""
    from safetensors.torch import load_file

    from kgdb.cypher.tables import graph_fingerprint as fingerprint_of
    from kgdb.models.checkpoints import WEIGHTS
    from kgdb.models.planner import PathPlanner, PlannerConfig

    fingerprint, info = fingerprint_of(graph)
    ckpt = find_checkpoint(checkpoint, settings.checkpoints_dir) if checkpoint else checkpoint_for_graph(settings.checkpoints_dir, PLANNER, fingerprint)
    cfg = ckpt.config
    if cfg.get("retriever") != PLANNER:
        raise InputError(f"checkpoint {ckpt.name} holds a {cfg.get('retriever')} model, not a relation-path planner", path="--checkpoint")
    check_compatible(ckpt, info.get("model") or settings.embedding_model, int(cfg.get("embedding_dim") or 0))
    state = load_file(str(ckpt.path / WEIGHTS), device="cpu")
    model = PathPlanner(PlannerConfig(**cfg["model"]), state["relation_emb"])
    model.load_state_dict(state)
    embedder = get_embedder(cfg.get("embedding_model") or settings.embedding_model, settings.device, settings.embedding_batch_size)
    return TrainedPathPlanner(model, list(cfg["relation_names"]), embedder, beam=beam, checkpoint=ckpt, constrained=constrained)


def relation_path_retriever(
    graph: Graph, settings: Settings, *, checkpoint: str | None = None, k: int = 100, write: bool = True, beam: int = 3,
    ground_cap: int = 200, constrained: bool = True, walks: bool = True,
) -> "RelationPathRetriever":
    """`RelationPathRetriever` with the trained planner for this graph (`NoCheckpointError` when none);
    `constrained`: decode only relation steps that exist from the entities reached so far; `walks`:
    ground as walks (entities may repeat), as the planner's labels are computed."""
    planner = load_planner(graph, settings, checkpoint, beam=beam, constrained=constrained)
    retriever = RelationPathRetriever(graph, settings, planner=planner, k=k, write=write, ground_cap=ground_cap, walks=walks)
    fingerprint = graph_fingerprint(graph)[0]
    trained_on = planner.checkpoint.config.get("graph_fingerprint") if planner.checkpoint else None
    if trained_on and trained_on != fingerprint:
        retriever.notes.append(f"planner {planner.checkpoint.name} was trained on another graph ({trained_on[:12]}), not this one ({fingerprint[:12]})")
    return retriever


def planner_examples(
    graph: Graph, records: list[QuestionRecord], arrays, embed, buckets: int, max_hops: int, relation_index: dict[str, int], best_f1: bool = True
):
    """Labelled planner examples of a split: Eq. 2's Γ* per question (exact hop count when the
    question file states it, else the shortest up to `max_hops`; with `best_f1` only those whose
    reached entities match the answers best), as decoder tokens."""
    from kgdb.cypher.linking import strip_mentions
    from kgdb.cypher.paths import entity_names
    from kgdb.data.relation_paths import shortest_relation_paths
    from kgdb.models.planner import text_features, token_of
    from kgdb.training.planner import PlannerExample

    names = {i: n for i, (n, _) in entity_names(graph, [t for q in records for t in q.topics]).items()}
    texts = [strip_mentions(q.text, [names.get(t, t) for t in q.topics]) for q in records]
    embs = embed(texts)
    out, counts = [], {"no_path": 0, "paths": 0}
    for q, text, emb in zip(records, texts, embs):
        paths = shortest_relation_paths(
            arrays, q.topics, q.answers, max_hops=max_hops, exact_hops=q.hop if q.hop and q.hop <= max_hops else None, best_f1=best_f1
        )
        tokens = [tuple(token_of(relation_index[r], d) for r, d in p) for p in paths]
        counts["no_path"] += not tokens
        counts["paths"] += len(tokens)
        out.append(PlannerExample(q.id, np.asarray(emb, np.float32), text_features(text, buckets), tokens))
    return out, counts


def train_planner(
    graph: Graph,
    settings: Settings,
    questions: list[Path],
    *,
    name: str | None = None,
    max_hops: int = 3,
    best_f1: bool = True,
    max_epochs: int = 30,
    patience: int = 4,
    lr: float = 1e-3,
    batch_size: int = 64,
    seed: int = 42,
    threads: int | None = None,
    on_labels: Callable[[str, int, dict], None] = lambda split, n, counts: None,
    on_epoch: Callable[[object], None] = lambda log: None,
):
    """Train the relation-path planner on the train split of every question file together, select on
    their val splits, save `<checkpoints_dir>/<name>/model.safetensors` + `config.json`.

    Labels are computed in numpy on the whole graph's triples (one paged read), so they are not
    limited by a fetched subgraph's radius (MetaQA 3-hop). Returns `(Checkpoint, PlannerResult)`."""
    from safetensors.torch import save_file

    from kgdb.config import dump_json
    from kgdb.cypher.paths import graph_triples
    from kgdb.cypher.tables import graph_fingerprint as fingerprint_of
    from kgdb.data.questions import read_questions
    from kgdb.data.relation_paths import TripleArrays
    from kgdb.models.checkpoints import CONFIG, WEIGHTS
    from kgdb.models.planner import PathPlanner, PlannerConfig
    from kgdb.training.planner import PlannerTrainConfig, train_planner_model
    from kgdb.training.trainer import seed_everything

    if threads and resolve_device(settings.device) == "cpu":
        torch.set_num_threads(threads)
    t0 = time.perf_counter()
    sets = [read_questions(p) for p in questions]
    fingerprint, info = fingerprint_of(graph)
    tables, model_name = load_tensor_tables(graph, settings)
    rel_names = load_tables(graph, settings.cache_dir).relation_names
    relation_index = {r: i for i, r in enumerate(rel_names)}
    arrays = TripleArrays.from_triples(graph_triples(graph), rel_names)
    embedder = get_embedder(model_name, settings.device, settings.embedding_batch_size)
    model_cfg = PlannerConfig(max_hops=max_hops)
    examples = {}
    for split in ("train", "val"):
        records = [q for qs in sets for q in qs.split(split)]
        examples[split], counts = planner_examples(graph, records, arrays, embedder.encode, model_cfg.buckets, max_hops, relation_index, best_f1)
        on_labels(split, len(records), counts)
    data_seconds = time.perf_counter() - t0
    if not any(ex.paths for ex in examples["train"]) or not examples["val"]:
        raise KgdbError("nothing to train on: no training question has a relation path from a topic to an answer")
    cfg = PlannerTrainConfig(lr=lr, batch_size=batch_size, max_epochs=max_epochs, patience=patience, seed=seed)
    seed_everything(seed)
    model = PathPlanner(model_cfg, tables.relation.detach().cpu())
    model, result = train_planner_model(model, examples["train"], examples["val"], cfg, on_epoch=on_epoch)
    datasets = "+".join(qs.dataset for qs in sets)
    out = settings.checkpoints_dir / (name or f"{PLANNER}-{datasets}")
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}, str(out / WEIGHTS), metadata={"retriever": PLANNER})
    dump_json(
        {
            "retriever": PLANNER,
            "model": model_cfg.to_json(),
            "relation_names": rel_names,
            "embedding_model": model_name,
            "embedding_dim": tables.dim,
            "graph_fingerprint": fingerprint,
            "dataset": datasets,
            "questions": [str(p) for p in questions],
            "train": {**cfg.__dict__, "threads": threads},
            "labels": {"max_hops": max_hops, "best_f1": best_f1,
                       "rule": "shortest relation paths topic->answer (exact hop count when the file states it)"},
            "data_seconds": round(data_seconds, 2),
            "result": result.to_json(),
            "metrics": {"best_epoch": result.best_epoch, "val_path_hit@1": result.best_val_hit1},
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
        out / CONFIG,
    )
    return find_checkpoint(str(out), settings.checkpoints_dir), result
