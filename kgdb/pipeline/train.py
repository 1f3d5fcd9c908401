"""Training on a graph: the data from the database (through the cache), the model and loop from
the torch side, the checkpoint beside its config."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.data.cache import CachedQuestion, CachedSplit
from kgdb.errors import InputError, KgdbError
from kgdb.limits import DEFAULT_CAP
from kgdb.models import registry
from kgdb.models.base import TensorTables, resolve_device
from kgdb.models.checkpoints import find_checkpoint
from kgdb.pipeline.splits import LABEL_SOURCES, SHORTEST, QuestionFile
from kgdb.pipeline.trainable import RetrieverOptions, parse_pairs
from kgdb.pipeline.vectors import data_fingerprint, entity_vectors, with_local_entities
from kgdb.training.events import TrainEvents


@dataclass
class SplitReport:
    dataset: str
    split: str
    split_data: CachedSplit


@dataclass
class RetrieverData:
    """A retriever's training data: the splits' labelled subgraphs (cached), their entity rows as one
    compact table, and where they came from."""

    dataset: str
    fingerprint: str
    graph_data: str  # kgdb.pipeline.vectors.data_fingerprint: the same data reloaded matches it
    model_name: str
    train: CachedSplit
    val: CachedSplit
    tables: TensorTables
    train_items: list[CachedQuestion]
    val_items: list[CachedQuestion]
    seconds: float


def _retriever_config(cls, retriever: str, opts: RetrieverOptions):
    """The retriever's typed config, after refusing the options it has no use for."""
    if opts.labels not in LABEL_SOURCES:
        raise InputError(
            f"unknown label source {opts.labels!r}; choose one of {', '.join(LABEL_SOURCES)}", path="--labels"
        )
    if opts.relation_targets and not cls.uses_relation_targets:
        raise InputError(
            f"{retriever}'s loss has no use for relation targets (RAPL's Eq. 8); drop --relation-targets",
            path="--relation-targets",
        )
    if opts.batch_size > 1 and not cls.batched_training:
        raise InputError(f"{retriever} trains one question per step; drop --batch-size", path="--batch-size")
    if not cls.trainable:
        raise InputError(
            f"{retriever} has nothing to train (no weights); use it directly with --retriever {retriever}",
            path="RETRIEVER",
        )
    return registry.make_config(cls, parse_pairs(opts.model_settings))


def _retriever_data(
    graph: Graph, settings: Settings, questions: Path, opts: RetrieverOptions, events: TrainEvents
) -> RetrieverData:
    cap = (
        DEFAULT_CAP if opts.cap is None else opts.cap
    )  # the config records the cap really fetched with, whatever the default becomes
    source = QuestionFile.read(graph, settings, questions)
    qs = source.questions
    t0 = time.perf_counter()
    splits = {}
    for split, limit in (("train", opts.max_train), ("val", opts.max_val)):
        records = qs.split(split)
        if limit is not None:
            records = records[:limit]  # splits are in file order, so a prefix is a fixed subsample

        def on_start(total: int, split: str = split) -> None:
            events.phase(f"fetch+label {split}", total)

        splits[split] = source.prepare(
            graph,
            settings,
            split,
            records,
            hops=opts.hops or 2,
            cap=cap,
            on_start=on_start,
            on_progress=events.advance,
            labels=opts.labels if split == "train" else SHORTEST,
            relation_targets=opts.relation_targets and split == "train",
        )
        events.split(SplitReport(qs.dataset, split, splits[split]))
    tr, va = splits["train"], splits["val"]
    # One compact table of the entities the two splits touch (vectors a lazy load left out are
    # filled here); the items' entity_idx are renumbered into its rows.
    vectors, _ = entity_vectors(graph, settings, source.embedder)
    tables, local = vectors.tensor_tables(
        [it.entity_idx for it in tr.items + va.items], resolve_device(settings.device)
    )
    return RetrieverData(
        qs.dataset,
        source.fingerprint,
        data_fingerprint(source.info),
        source.model,
        tr,
        va,
        tables,
        with_local_entities(tr.items, local[: len(tr.items)]),
        with_local_entities(va.items, local[len(tr.items) :]),
        time.perf_counter() - t0,
    )


def _add_node_features(model, data: RetrieverData, events: TrainEvents) -> None:
    """Per-node features the retriever declares, computed for the subgraphs whose cache lacks them
    and stored beside the subgraphs: the next run reads them."""
    from kgdb.data.cache import add_features
    from kgdb.training.trainer import ensure_node_features

    computed = cached = 0
    for part, local_items in ((data.train, data.train_items), (data.val, data.val_items)):
        c, h = ensure_node_features(model, local_items, data.tables)
        computed, cached = computed + c, cached + h
        for cached_item, local_item in zip(part.items, local_items):  # the cache keeps graph-wide entity rows
            cached_item.features.update(local_item.features)
        if c and not part.errors:
            add_features(part.path, part.items)
    if computed or cached:
        events.message(
            f"per-node features ({model.name}): computed for {computed} subgraphs and added to the cache, "
            f"read from the cache for {cached}"
        )


def _fit_retriever(
    cls, model_cfg, model, data: RetrieverData, cfg, out: Path, opts: RetrieverOptions, events: TrainEvents
):
    from kgdb.training.trainer import ResumeMismatchError, train

    try:
        if opts.nproc <= 1:
            return train(
                model,
                data.train_items,
                data.val_items,
                data.tables,
                cfg,
                state_dir=out,
                resume=opts.resume,
                events=events,
            )
        # The workers train from this process's cache and tables; none of them opens the database.
        from kgdb.training import distributed
        from kgdb.training.trainer import WorkerJob, train_worker

        tables = data.tables
        entity, relation = tables.entity.cpu().numpy(), tables.relation.cpu().numpy()
        job = WorkerJob(
            cls,
            model_cfg,
            tables.dim,
            data.train_items,
            data.val_items,
            entity,
            relation,
            tables.fingerprint,
            cfg,
            out,
            opts.resume,
        )
        state, result = distributed.run(train_worker, (job,), opts.nproc)
        model.load_state_dict(state)
        return model.eval(), result
    except ResumeMismatchError as exc:  # other ValueErrors are bugs and keep their traceback
        raise InputError(str(exc), path="--resume") from exc


def _retriever_checkpoint_config(
    data: RetrieverData, questions: Path, cfg, opts: RetrieverOptions, device: str, result
) -> dict:
    seconds = [e.seconds for e in result.epochs]
    tr = data.train
    return {
        "embedding_model": data.model_name,
        "embedding_dim": data.tables.dim,
        "graph_fingerprint": data.fingerprint,
        "graph_data": data.graph_data,
        "dataset": data.dataset,
        "questions": str(questions),
        "fetch": {"hops": opts.hops or 2, "cap": DEFAULT_CAP if opts.cap is None else opts.cap},
        "labels": {"source": opts.labels, **tr.label_counts} if opts.labels != SHORTEST else {"source": SHORTEST},
        "relation_targets": tr.relation_counts or None,
        "train": {
            **cfg.__dict__,
            "max_train": opts.max_train,
            "max_val": opts.max_val,
            "device": device,
            "threads": opts.thread_count(),
            "nproc": opts.nproc,
        },
        "data_cache": {"train": str(tr.path), "val": str(data.val.path), "train_from_disk": tr.from_disk},
        "data_seconds": round(data.seconds, 2),
        "result": result.to_json(),
        "metrics": {
            "best_epoch": result.best_epoch,
            "val_triple_recall@100": result.best_val_triple_recall,
            "val_answer_recall@100": next(
                (e.val_answer_recall for e in result.epochs if e.epoch == result.best_epoch), None
            ),
            "epoch_seconds_mean": sum(seconds) / max(len(seconds), 1),
            "epoch_cpu_seconds_mean": sum(e.cpu_seconds for e in result.epochs) / max(len(result.epochs), 1),
        },
    }


def train_retriever(
    graph: Graph,
    settings: Settings,
    retriever: str,
    questions: Path,
    options: RetrieverOptions | None = None,
    events: TrainEvents | None = None,
):
    """Train a registered retriever on `questions`' train split, select on its val split, and save
    a checkpoint (config saved beside the weights). Returns `(Checkpoint, TrainResult)`.

    `options` are `kgdb train RETRIEVER`'s (`RetrieverOptions`; default: all defaults). `labels` picks
    the training split's positives: "shortest" or the `kgdb label` method whose stored selections to
    use (questions without them keep shortest-path labels). Validation always uses shortest-path
    labels, so val triple recall (the selection metric) means one thing. `relation_targets`: carry
    the training split's stored R_* (`kgdb label --method rapl-relations`) into the retriever's loss
    (RAPL's Eq. 8). Per-node features the retriever declares (SubgraphRAG's DDE) are computed here
    for the subgraphs whose cache file lacks them and added to it."""
    from kgdb.models.checkpoints import save_checkpoint
    from kgdb.training.trainer import TrainConfig, has_positive, prepare_cpu, seed_everything

    opts = options or RetrieverOptions()
    events = events or TrainEvents()
    cls = registry.get(retriever)
    model_cfg = _retriever_config(cls, retriever, opts)
    prepare_cpu(settings.device, opts.thread_count())
    cfg = TrainConfig(
        lr=opts.lr, max_epochs=opts.max_epochs, patience=opts.patience, seed=opts.seed, batch_size=opts.batch_size
    )
    data = _retriever_data(graph, settings, questions, opts, events)
    usable = sum(1 for it in data.train.items if has_positive(it, cls.label_kind))
    if usable == 0 or not data.val.items:
        raise KgdbError(
            f"nothing to train on: {usable} training questions with a {cls.label_kind} label, "
            f"{len(data.val.items)} validation questions"
        )
    device = str(data.tables.device)
    out = settings.checkpoints_dir / (opts.name or f"{retriever}-{data.dataset}")
    seed_everything(opts.seed)
    model = cls(model_cfg, data.tables.dim).to(device)
    _add_node_features(model, data, events)
    events.message(
        f"training {retriever} on {usable} questions "
        f"({len(data.train.items) - usable} without a {cls.label_kind} label "
        f"skipped), validating on {len(data.val.items)}, device {device}, {opts.thread_count()} thread(s); "
        f"state saved each epoch in {out}"
    )
    model, result = _fit_retriever(cls, model_cfg, model, data, cfg, out, opts, events)
    save_checkpoint(model, out, _retriever_checkpoint_config(data, questions, cfg, opts, device, result))
    return find_checkpoint(str(out), settings.checkpoints_dir), result
