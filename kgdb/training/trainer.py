"""The training loop every registered retriever shares.

SubgraphRAG's recipe (spec §10) is the default: one question per step, Adam lr 1e-3, model
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

import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from kgdb.data.cache import CachedQuestion
from kgdb.models.base import Retriever, Targets, TensorTables, passed_count
from kgdb.models.features import batch_tensors, featurise
from kgdb.models.metrics import answer_recall_at, top_k, triple_recall_at
from kgdb.training import distributed

STATE_FILE = "train-state.pt"


class ResumeMismatchError(ValueError):
    """`--resume` met a saved training state written by another configuration."""


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


def prepare_cpu(device: str, threads: int | None) -> None:
    """Before a training run's first tensor, on a CPU: its torch threads (when given) and subnormal floats
    flushed to zero. Subnormals (the far tail of a softmax over hundreds of candidates, tiny optimiser
    moments) are slow on CPUs: the RRP ranker's five-file recipe went from 5 s to 15 s an epoch as they
    accumulated; flushed, every epoch took 3.6-3.8 s and the trained weights were bitwise the same (docs/rrp.md,
    "RRP on any graph"). The flag is per thread and worker threads copy it when they start, hence first."""
    from kgdb.models.base import resolve_device

    if resolve_device(device) == "cpu":
        if threads:
            torch.set_num_threads(threads)
        torch.set_flush_denormal(True)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)


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
    (triple, answer), = validate_at(model, [featurise(it, tables) for it in items], items, tables, [k])
    return triple, answer


@torch.no_grad()
def validate_at(model: Retriever, xs: list, items: list[CachedQuestion], tables: TensorTables, ks: list[int]) -> list[tuple[float, float]]:
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


def batches(order: list[int], size: int) -> list[list[int]]:
    """Consecutive runs of `size` questions of an epoch's order (the last may be shorter)."""
    return [order[i : i + size] for i in range(0, len(order), size)]


def train(
    model: Retriever,
    train_items: list[CachedQuestion],
    val_items: list[CachedQuestion],
    tables: TensorTables,
    cfg: TrainConfig,
    on_step: Callable[[float, int], None] = lambda loss, questions: None,
    on_epoch: Callable[[EpochLog], None] = lambda log: None,
    state_dir: Path | None = None,
    resume: bool = False,
) -> tuple[Retriever, TrainResult]:
    """Train in place; returns the model restored to its best validation epoch.

    With `state_dir`, the full training state is written there after every epoch; `resume`
    continues from it (the same data and config give the same result as an uninterrupted run).
    Inside a DDP process group (`kgdb.training.distributed`) each process takes every N-th question
    of the shared epoch order and gradients are averaged; rank 0 alone writes the state.
    `on_step(loss, questions)` follows every optimiser step.
    """
    seed_everything(cfg.seed)
    if cfg.batch_size > 1 and not model.batched_training:
        raise ValueError(f"{model.name} trains one question per step; drop --batch-size")
    kind = model.label_kind
    usable = [it for it in train_items if has_positive(it, kind)]
    computed, cached = ensure_node_features(model, usable, tables)
    v_computed, v_cached = ensure_node_features(model, val_items, tables)
    result = TrainResult(best_epoch=0, best_val_triple_recall=-1.0, train_questions=len(usable))
    result.skipped_no_path = len(train_items) - len(usable)
    device = tables.device
    # Tensors are built once: a training epoch then never leaves the device.
    data = [(featurise(it, tables), targets_of(it, device)) for it in usable]
    val_data = [featurise(it, tables) for it in val_items]
    rank, size = distributed.world()
    step = distributed.wrap(Objective(model))
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    order_rng = np.random.default_rng(cfg.seed)
    best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    bad_epochs = 0
    best_key = (-1.0, -1.0)
    start_epoch = 1
    state_path = Path(state_dir) / STATE_FILE if state_dir else None
    if resume and state_path is not None and state_path.is_file():
        saved = torch.load(state_path, map_location=device, weights_only=False)
        # States written before a setting existed hold its default (batch_size 1). The stopping
        # settings may change: a run can be extended, or ended at its last saved epoch.
        def trajectory(c: dict) -> dict:
            return {k: v for k, v in {**asdict(TrainConfig()), **c}.items() if k not in ("max_epochs", "patience")}

        if trajectory(saved["config"]) != trajectory(asdict(cfg)) or saved["retriever"] != model.name:
            raise ResumeMismatchError(f"{state_path} was written by another training configuration; drop --resume or use another --name")
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        best_state, best_key, bad_epochs = saved["best_state"], tuple(saved["best_key"]), saved["bad_epochs"]
        order_rng.bit_generator.state = saved["order_rng"]
        torch.set_rng_state(saved["torch_rng"])
        result = TrainResult(**{**saved["result"], "epochs": [EpochLog(**e) for e in saved["result"]["epochs"]]})
        result.resumed_from_epoch = saved["epoch"]
        start_epoch = saved["epoch"] + 1
        if bad_epochs >= cfg.patience:
            start_epoch = cfg.max_epochs + 1  # the saved run had already stopped early
    result.features_computed, result.features_cached = computed + v_computed, cached + v_cached
    for epoch in range(start_epoch, cfg.max_epochs + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        model.train()
        total = 0.0
        steps = batches(distributed.shard(order_rng.permutation(len(data)).tolist(), rank, size), cfg.batch_size)
        for batch in steps:
            if len(batch) == 1:
                loss = step(*data[batch[0]])
            else:
                loss = step(batch_tensors([data[i][0] for i in batch]), [data[i][1] for i in batch])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            value = float(loss.detach())
            total += value
            on_step(value, len(batch))
        seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
        t1 = time.perf_counter()
        # Recall@100 saturates on easy sets (MetaQA 1-hop reaches 1.0 in the first epoch), so ties
        # are broken by recall at a tenth of K: the model that ranks the evidence highest wins
        # (one scoring pass gives both). A "paths" retriever is judged at its own passed size.
        (val_triple, val_answer), (fine, _) = validate_at(model, val_data, val_items, tables, [cfg.select_k, max(1, cfg.select_k // 10)])
        if model.returns == "paths":
            fine = val_answer
        total, count = distributed.all_sum([total, len(steps)])
        log = EpochLog(epoch, total / max(count, 1), val_triple, val_answer, seconds, cpu_seconds, time.perf_counter() - t1)
        result.epochs.append(log)
        on_epoch(log)
        if (val_triple, fine) > best_key:
            best_key = (val_triple, fine)
            result.best_val_triple_recall, result.best_epoch = val_triple, epoch
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            bad_epochs = 0
        else:
            bad_epochs += 1
        if state_path is not None and rank == 0:
            _save_state(state_path, model, opt, cfg, epoch, best_state, best_key, bad_epochs, order_rng, result)
        if bad_epochs >= cfg.patience:
            break
    model.load_state_dict(best_state)
    model.eval()
    return model, result


def _save_state(path: Path, model, opt, cfg, epoch, best_state, best_key, bad_epochs, order_rng, result) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(
        {
            "retriever": model.name,
            "config": asdict(cfg),
            "epoch": epoch,
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "best_state": best_state,
            "best_key": list(best_key),
            "bad_epochs": bad_epochs,
            "order_rng": order_rng.bit_generator.state,
            "torch_rng": torch.get_rng_state(),
            "result": result.to_json(),
        },
        tmp,
    )
    tmp.replace(path)  # a kill during the write leaves the previous epoch's state intact
