"""Training a registered retriever: its part of the shared loop (`kgdb.training.fit`).

SubgraphRAG's recipe (its reference code's defaults) is the default: one question per step, Adam lr 1e-3, model
selection on validation triple recall@100 with patience 10, fixed seed. The loss and the kind of
label come from the retriever (`Retriever.loss`, `Retriever.label_kind`), so a new retriever
trains here unchanged. A retriever that declares `batched_training` can take `batch_size`
questions per step, concatenated as one disjoint union (PyG `Batch`, node ids offset per
question), with the mean of the per-question losses. Per-node features that depend only on the
subgraph (`Retriever.node_feature_key`: SubgraphRAG's DDE) are computed once per cached subgraph
(`ensure_node_features`) and stored with it. After every epoch the whole state (weights,
optimiser, best weights, RNG) can be saved, so a killed run resumes at the next epoch with
identical results.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from kgdb.data.cache import CachedQuestion
from kgdb.models.base import Retriever, Targets, TensorTables, passed_count
from kgdb.models.features import batch_tensors, featurise
from kgdb.models.metrics import answer_recall_at, top_k, triple_recall_at
from kgdb.training import distributed
from kgdb.training.events import EpochCallbacks, TrainEvents
from kgdb.training.fit import STATE_FILE, EpochTotals, FitConfig, FitTask, ResumeMismatchError, fit
from kgdb.training.seeding import prepare_cpu, seed_everything

__all__ = [
    "STATE_FILE",
    "ResumeMismatchError",
    "TrainConfig",
    "ensure_node_features",
    "has_positive",
    "prepare_cpu",
    "seed_everything",
    "train",
    "validate",
]


@dataclass(frozen=True)
class TrainConfig:
    lr: float = 1e-3
    max_epochs: int = 50  # the reference code allows 10,000; patience stops far earlier
    patience: int = 10
    seed: int = 42
    select_k: int = 100  # validation triple recall@K used for model selection
    batch_size: int = 1  # questions per optimiser step (retrievers with `batched_training`)


@dataclass
class EpochLog:
    epoch: int
    loss: float
    val_triple_recall: float
    val_answer_recall: float
    seconds: float  # wall time of the training pass (validation excluded)
    cpu_seconds: float = 0.0  # process CPU time of the same pass
    val_seconds: float = 0.0  # wall time of the validation pass

    def describe(self) -> str:
        return (
            f"epoch {self.epoch}: loss {self.loss:.4f}, val triple R@100 {self.val_triple_recall:.4f}, "
            f"val answer R@100 {self.val_answer_recall:.4f}, {self.seconds:.1f} s ({self.cpu_seconds:.1f} s CPU; "
            f"validation {self.val_seconds:.1f} s)"
        )


@dataclass
class TrainResult:
    best_epoch: int
    best_val_triple_recall: float
    epochs: list[EpochLog] = field(default_factory=list)
    train_questions: int = 0
    skipped_no_path: int = 0  # training questions without a positive label of the retriever's kind
    resumed_from_epoch: int = 0
    features_computed: int = 0  # subgraphs whose per-node features (DDE) were computed by this run
    features_cached: int = 0  # subgraphs whose per-node features came from the cache

    def to_json(self) -> dict:
        return asdict(self)


def targets_of(item: CachedQuestion, device: torch.device | str) -> Targets:
    entities = np.zeros(len(item.entity_idx), dtype=np.float32)
    entities[item.answers] = 1.0
    rt = item.relation_targets
    return Targets(
        torch.from_numpy(item.labels.astype(np.float32)).to(device),
        torch.from_numpy(entities).to(device),
        None if rt is None else torch.from_numpy(np.stack([(rt & 1) > 0, (rt & 2) > 0], axis=1)).to(device),
    )


def has_positive(item: CachedQuestion, kind: str) -> bool:
    return bool(item.labels.any()) if kind == "triples" else len(item.answers) > 0


def ensure_node_features(model: Retriever, items: list[CachedQuestion], tables: TensorTables) -> tuple[int, int]:
    """Give every item the per-node features `model` declares (`node_feature_key`), computing only
    the missing ones; returns (computed, already there). The caller stores computed ones in the
    cache (`kgdb.data.cache.add_features`), so they are computed once per cached subgraph."""
    key = model.node_feature_key()
    if key is None:
        return 0, 0
    computed = 0
    with torch.no_grad():
        for it in items:
            if key not in it.features:
                it.features[key] = model.node_features(featurise(it, tables)).cpu().numpy().astype(np.float32)
                computed += 1
    return computed, len(items) - computed


@torch.no_grad()
def validate(model: Retriever, items: list[CachedQuestion], tables: TensorTables, k: int) -> tuple[float, float]:
    """Mean triple recall@k and answer recall@k over `items` (questions without labels skipped).
    A "paths" retriever is judged on the triples it passes on (its adaptive set), whatever k.
    Under DDP each process scores its share and the sums are added across processes."""
    ((triple, answer),) = validate_at(model, [featurise(it, tables) for it in items], items, tables, [k])
    return triple, answer


@torch.no_grad()
def validate_at(
    model: Retriever, xs: list, items: list[CachedQuestion], tables: TensorTables, ks: list[int]
) -> list[tuple[float, float]]:
    """`validate` at several K from one scoring pass per question: [(triple recall@k, answer recall@k)]."""
    model.eval()
    model.prepare(tables)
    rank, size = distributed.world()
    sums = [[0.0, 0, 0.0, 0] for _ in ks]
    for x, it in list(zip(xs, items))[rank::size]:
        scores = model(x)
        labels = torch.from_numpy(it.labels).to(scores.device)
        for j, k in enumerate(ks):
            if model.returns == "paths":
                k = passed_count(scores)
            r = triple_recall_at(scores, labels, k)
            if r is not None:
                sums[j][0] += r
                sums[j][1] += 1
            order = top_k(scores, k).cpu().numpy()
            a = answer_recall_at(order, it.head, it.tail, it.answers, it.n_answers_in_graph, k)
            if a is not None:
                sums[j][2] += a
                sums[j][3] += 1
    out = []
    for row in sums:
        t_sum, t_n, a_sum, a_n = distributed.all_sum(row)
        out.append((t_sum / t_n if t_n else 0.0, a_sum / a_n if a_n else 0.0))
    return out


class Objective(torch.nn.Module):
    """The training loss as a module's forward, which is what `distributed.wrap` wraps: DDP then sees
    every parameter the loss uses, including a path retriever's step modules that only its loss
    calls (RAPL's prefix and STOP layers run after `forward`)."""

    def __init__(self, model: Retriever):
        super().__init__()
        self.model = model

    def forward(self, x, targets) -> torch.Tensor:
        if isinstance(targets, list):  # several questions in one step
            return self.model.batch_loss(self.model(x), targets, x)
        return self.model.loss(self.model(x), targets)


class RetrieverTask(FitTask):
    """A registered retriever's part of `fit`: its loss on one question (or a disjoint union of
    several), validation triple recall@K with recall at K/10 breaking ties."""

    model: Retriever

    def __init__(
        self,
        model: Retriever,
        usable: list[CachedQuestion],
        val_items: list[CachedQuestion],
        tables: TensorTables,
        cfg: TrainConfig,
    ):
        self.kind, self.model, self.config = model.name, model, cfg
        self.val_items, self.tables = val_items, tables
        # Tensors are built once: a training epoch then never leaves the device.
        self.data = [(featurise(it, tables), targets_of(it, tables.device)) for it in usable]
        self.val_data = [featurise(it, tables) for it in val_items]

    def examples(self) -> int:
        return len(self.data)

    def objective(self) -> torch.nn.Module:
        return Objective(self.model)

    def loss(self, objective: torch.nn.Module, batch: list[int]) -> torch.Tensor:
        if len(batch) == 1:
            return objective(*self.data[batch[0]])
        return objective(batch_tensors([self.data[i][0] for i in batch]), [self.data[i][1] for i in batch])

    def validate(self) -> tuple[tuple, tuple[float, float]]:
        # Recall@100 saturates on easy sets (MetaQA 1-hop reaches 1.0 in the first epoch), so ties
        # are broken by recall at a tenth of K: the model that ranks the evidence highest wins
        # (one scoring pass gives both). A "paths" retriever is judged at its own passed size.
        k = self.config.select_k
        (triple, answer), (fine, _) = validate_at(
            self.model, self.val_data, self.val_items, self.tables, [k, max(1, k // 10)]
        )
        return (triple, answer if self.model.returns == "paths" else fine), (triple, answer)

    def log(self, epoch: int, totals: EpochTotals, metrics: tuple[float, float]) -> EpochLog:
        return EpochLog(epoch, totals.loss_per_step, *metrics, totals.seconds, totals.cpu_seconds, totals.val_seconds)


def train(
    model: Retriever,
    train_items: list[CachedQuestion],
    val_items: list[CachedQuestion],
    tables: TensorTables,
    cfg: TrainConfig,
    on_step: Callable[[float, int], None] | None = None,
    on_epoch: Callable[[EpochLog], None] | None = None,
    state_dir: Path | None = None,
    resume: bool = False,
    events: TrainEvents | None = None,
) -> tuple[Retriever, TrainResult]:
    """Train in place through `fit`; returns the model restored to its best validation epoch.

    With `state_dir`, the full training state is written there after every epoch; `resume`
    continues from it (the same data and config give the same result as an uninterrupted run).
    `on_step(loss, questions)` follows every optimiser step, `on_epoch(log)` every epoch (or
    `events`, which gets both).
    """
    if cfg.batch_size > 1 and not model.batched_training:
        raise ValueError(f"{model.name} trains one question per step; drop --batch-size")
    usable = [it for it in train_items if has_positive(it, model.label_kind)]
    computed, cached = ensure_node_features(model, usable, tables)
    v_computed, v_cached = ensure_node_features(model, val_items, tables)
    task = RetrieverTask(model, usable, val_items, tables, cfg)
    state_path = Path(state_dir) / STATE_FILE if state_dir else None
    outcome = fit(
        task,
        FitConfig(cfg.max_epochs, cfg.patience, cfg.seed, state_path, resume),
        EpochCallbacks(on_step, on_epoch, events),
    )
    best = next((e for e in outcome.epochs if e.epoch == outcome.best_epoch), None)
    result = TrainResult(
        best_epoch=outcome.best_epoch,
        best_val_triple_recall=best.val_triple_recall if best else -1.0,
        epochs=outcome.epochs,
        train_questions=len(usable),
        skipped_no_path=len(train_items) - len(usable),
        resumed_from_epoch=outcome.resumed_from_epoch,
        features_computed=computed + v_computed,
        features_cached=cached + v_cached,
    )
    return model, result


@dataclass
class WorkerJob:
    """What a DDP worker of `kgdb train --nproc N` trains from: everything comes from the parent's
    cache and tables, nothing from the database (it must pickle)."""

    cls: type
    model_cfg: Any
    dim: int
    train_items: list
    val_items: list
    entity: Any  # numpy [E, d]
    relation: Any  # numpy [R, d]
    fingerprint: str
    cfg: TrainConfig
    state_dir: Path | None
    resume: bool


class _RankZeroEpochs:
    """Epoch lines printed by rank 0 only (the workers' stdout is the terminal's)."""

    def __init__(self, rank: int):
        self.rank = rank

    def __call__(self, log) -> None:
        if self.rank == 0:
            print(log.describe(), flush=True)


def train_worker(job: WorkerJob, device: str = "cpu"):
    """One DDP worker: returns (best weights on the CPU, TrainResult)."""
    prepare_cpu(device, None)
    tables = TensorTables.from_numpy(job.entity, job.relation, job.fingerprint, device)
    seed_everything(job.cfg.seed)
    model = job.cls(job.model_cfg, job.dim).to(device)
    model, result = train(
        model,
        job.train_items,
        job.val_items,
        tables,
        job.cfg,
        on_epoch=_RankZeroEpochs(distributed.world()[0]),
        state_dir=job.state_dir,
        resume=job.resume,
    )
    return {k: v.detach().cpu() for k, v in model.state_dict().items()}, result
