"""Training on a graph: the data from the database (through the cache), the model and loop from
the torch side, the checkpoint beside its config."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.data.cache import CachedSplit
from kgdb.data.questions import QuestionRecord
from kgdb.embeddings import get_embedder
from kgdb.errors import InputError, KgdbError
from kgdb.limits import DEFAULT_CAP
from kgdb.models import registry
from kgdb.models.base import resolve_device
from kgdb.models.checkpoints import find_checkpoint
from kgdb.pipeline.planners import PLANNER, save_relation_model
from kgdb.pipeline.vectors import entity_vectors, with_local_entities
from kgdb.pipeline.splits import LABEL_SOURCES, SHORTEST, prepare_split


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
    labels: str = SHORTEST,
    relation_targets: bool = False,
    nproc: int = 1,
    batch_size: int = 1,
    on_split: Callable[[SplitReport], None] = lambda report: None,
    on_fetch_start: Callable[[str, int], None] = lambda split, total: None,
    on_fetch: Callable[[int], None] = lambda n: None,
    on_start: Callable[[dict], None] = lambda info: None,
    on_step: Callable[[float, int], None] = lambda loss, questions: None,
    on_features: Callable[[int, int], None] = lambda computed, cached: None,
    on_epoch: Callable[[object], None] = lambda log: None,
):
    """Train a registered retriever on `questions`' train split, select on its val split, and save
    a checkpoint (config saved beside the weights). Returns `(Checkpoint, TrainResult)`.

    `labels` picks the training split's positives: "shortest" or the `kgdb label` method whose
    stored selections to use (questions without them keep shortest-path labels). Validation always
    uses shortest-path labels, so val triple recall (the selection metric) means one thing.
    `relation_targets`: carry the training split's stored R_* (`kgdb label --method rapl-relations`)
    into the retriever's loss (RAPL's Eq. 8); only for retrievers with `uses_relation_targets`.
    Per-node features the retriever declares (SubgraphRAG's DDE) are computed here for the subgraphs
    whose cache file lacks them and added to it (`on_features(computed, from cache)`)."""
    from kgdb.cypher.tables import graph_fingerprint as fingerprint_of
    from kgdb.data.questions import read_questions
    from kgdb.models.checkpoints import save_checkpoint
    from kgdb.data.cache import add_features
    from kgdb.training.trainer import ResumeMismatchError, TrainConfig, ensure_node_features, has_positive, prepare_cpu, seed_everything, train

    cap = DEFAULT_CAP if cap is None else cap  # the config records the cap really fetched with, whatever the default becomes
    cls = registry.get(retriever)
    if labels not in LABEL_SOURCES:
        raise InputError(f"unknown label source {labels!r}; choose one of {', '.join(LABEL_SOURCES)}", path="--labels")
    if relation_targets and not cls.uses_relation_targets:
        raise InputError(f"{retriever}'s loss has no use for relation targets (RAPL's Eq. 8); drop --relation-targets", path="--relation-targets")
    if batch_size > 1 and not cls.batched_training:
        raise InputError(f"{retriever} trains one question per step; drop --batch-size", path="--batch-size")
    if not cls.trainable:
        raise InputError(f"{retriever} has nothing to train (no weights); use it directly with --retriever {retriever}", path="RETRIEVER")
    model_cfg = registry.make_config(cls, settings_overrides or {})
    prepare_cpu(settings.device, threads)
    cfg = TrainConfig(lr=lr, max_epochs=max_epochs, patience=patience, seed=seed, batch_size=batch_size)
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
            **settings.fetch_bounds, labels=labels if split == "train" else SHORTEST,
            relation_targets=relation_targets and split == "train",
        )
        on_split(SplitReport(qs.dataset, split, splits[split]))
    tr, va = splits["train"], splits["val"]
    # One compact table of the entities the two splits touch (vectors a lazy load left out are
    # filled here); the items' entity_idx are renumbered into its rows.
    vectors, _ = entity_vectors(graph, settings, embedder)
    tables, local = vectors.tensor_tables([it.entity_idx for it in tr.items + va.items], resolve_device(settings.device))
    train_items = with_local_entities(tr.items, local[: len(tr.items)])
    val_items = with_local_entities(va.items, local[len(tr.items) :])
    data_seconds = time.perf_counter() - t0
    usable = sum(1 for it in tr.items if has_positive(it, cls.label_kind))
    if usable == 0 or not va.items:
        raise KgdbError(f"nothing to train on: {usable} training questions with a {cls.label_kind} label, {len(va.items)} validation questions")
    device = str(tables.device)
    out = settings.checkpoints_dir / (name or f"{retriever}-{qs.dataset}")
    seed_everything(seed)
    model = cls(model_cfg, tables.dim).to(device)
    computed = cached = 0
    for part, local_items in ((tr, train_items), (va, val_items)):
        c, h = ensure_node_features(model, local_items, tables)
        computed, cached = computed + c, cached + h
        for cached_item, local_item in zip(part.items, local_items):  # the cache keeps graph-wide entity rows
            cached_item.features.update(local_item.features)
        if c and not part.errors:  # stored beside the subgraphs: the next run reads them
            add_features(part.path, part.items)
    on_features(computed, cached)
    on_start({"retriever": retriever, "usable": usable, "skipped": len(tr.items) - usable, "val": len(va.items),
              "device": device, "label_kind": cls.label_kind, "out": out, "max_epochs": cfg.max_epochs})
    try:
        if nproc > 1:
            # The workers train from this process's cache and tables; none of them opens the database.
            from kgdb.training import distributed

            entity, relation = tables.entity.cpu().numpy(), tables.relation.cpu().numpy()
            state, result = distributed.run(
                distributed.train_worker,
                (cls, model_cfg, tables.dim, train_items, val_items, entity, relation, tables.fingerprint, cfg, out, resume), nproc,
            )
            model.load_state_dict(state)
            model.eval()
        else:
            model, result = train(model, train_items, val_items, tables, cfg, on_step=on_step, on_epoch=on_epoch, state_dir=out, resume=resume)
    except ResumeMismatchError as exc:  # other ValueErrors are bugs and keep their traceback
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
            "labels": {"source": labels, **tr.label_counts} if labels != SHORTEST else {"source": SHORTEST},
            "relation_targets": tr.relation_counts or None,
            "train": {**cfg.__dict__, "max_train": max_train, "max_val": max_val, "device": device, "threads": threads, "nproc": nproc},
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


@dataclass
class RelationVocabulary:
    """What the relation-path models (planner, structural reasoner) train from: the graph's relation
    embedding table, its relation names, all its triples as arrays (labels are computed on the whole
    graph, not a fetched subgraph) and the question encoder."""

    fingerprint: str
    tables: object  # kgdb.models.base.TensorTables: the relation table (no entity rows)
    model_name: str
    relation_names: list[str]
    relation_index: dict[str, int]
    arrays: object  # kgdb.data.relation_paths.TripleArrays
    embedder: object


def relation_vocabulary(graph: Graph, settings: Settings) -> RelationVocabulary:
    from kgdb.cypher.paths import graph_triples
    from kgdb.data.relation_paths import TripleArrays

    vectors, model_name = entity_vectors(graph, settings)
    names = vectors.tables.relation_names
    return RelationVocabulary(
        vectors.fingerprint, vectors.relation_tables(resolve_device(settings.device)), model_name, names,
        {r: i for i, r in enumerate(names)}, TripleArrays.from_triples(graph_triples(graph), names), vectors.embedder,
    )


def question_texts(graph: Graph, records: list[QuestionRecord], embed) -> tuple[list[str], np.ndarray, set[str]]:
    """What the relation-path models read of each question: its text without the gold topics' names
    and that text's sentence embedding (`embed(texts)`); and the topics that are entities of the graph."""
    from kgdb.cypher.linking import strip_mentions
    from kgdb.cypher.paths import entity_names

    names = {i: e.name for i, e in entity_names(graph, [t for q in records for t in q.topics]).items()}
    texts = [strip_mentions(q.text, [names.get(t, t) for t in q.topics]) for q in records]
    return texts, embed(texts), set(names)


def labelled_questions(graph: Graph, records: list[QuestionRecord], arrays, embed, max_hops: int, best_f1: bool = True):
    """Per question: (record, text without the topic names, its embedding, Eq. 2's Γ*): the shortest
    relation paths from a topic to the answers (exact hop count when the question file states it,
    else up to `max_hops`; with `best_f1` only those whose reached entities match the answers best).
    The planner and the structural reasoner learn from the same labels."""
    from kgdb.data.relation_paths import shortest_relation_paths

    texts, embs, _ = question_texts(graph, records, embed)
    for q, text, emb in zip(records, texts, embs):
        paths = shortest_relation_paths(
            arrays, q.topics, q.answers, max_hops=max_hops, exact_hops=q.hop if q.hop and q.hop <= max_hops else None, best_f1=best_f1
        )
        yield q, text, np.asarray(emb, np.float32), paths


def planner_examples(
    graph: Graph, records: list[QuestionRecord], arrays, embed, buckets: int, max_hops: int, relation_index: dict[str, int], best_f1: bool = True
):
    """Labelled planner examples of a split (`labelled_questions`), as decoder tokens."""
    from kgdb.models.path_tokens import text_features, token_of
    from kgdb.training.planner import PlannerExample

    out, counts = [], {"no_path": 0, "paths": 0}
    for q, text, emb, paths in labelled_questions(graph, records, arrays, embed, max_hops, best_f1):
        tokens = [tuple(token_of(relation_index[r], d) for r, d in p) for p in paths]
        counts["no_path"] += not tokens
        counts["paths"] += len(tokens)
        out.append(PlannerExample(q.id, emb, text_features(text, buckets), tokens))
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
    from kgdb.data.questions import read_questions
    from kgdb.models.planner import PathPlanner, PlannerConfig
    from kgdb.training.planner import PlannerTrainConfig, train_planner_model
    from kgdb.training.trainer import prepare_cpu, seed_everything

    prepare_cpu(settings.device, threads)
    t0 = time.perf_counter()
    sets = [read_questions(p) for p in questions]
    vocab = relation_vocabulary(graph, settings)
    fingerprint, tables, model_name, rel_names = vocab.fingerprint, vocab.tables, vocab.model_name, vocab.relation_names
    relation_index, arrays, embedder = vocab.relation_index, vocab.arrays, vocab.embedder
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
    save_relation_model(
        out, model, PLANNER,
        {
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
    )
    return find_checkpoint(str(out), settings.checkpoints_dir), result
