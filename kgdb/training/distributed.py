"""Data-parallel training over processes with PyTorch DDP: gloo on the CPU, NCCL on CUDA.

`kgdb train NAME --nproc N` prepares the cached splits and embedding tables once in the parent
(the only process that talks to the database), then starts N workers on this machine. Each worker
takes every N-th question of the epoch's shared permutation, DDP averages the gradients, and
validation is split the same way and summed across workers, so every worker makes the same
early-stopping decision. Only rank 0 writes the training state and returns the model.

With one process none of this is active and the trainer is the plain single-process loop.
"""

from __future__ import annotations

import gc
import os
import socket
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn


def world() -> tuple[int, int]:
    """(rank, number of processes); (0, 1) outside a process group."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def shard(order: Sequence[int], rank: int, size: int) -> list[int]:
    """This rank's share of `order`, every rank the same length (DDP needs as many backward passes
    on each rank): the shortest shares take their first items again."""
    order = list(order)
    if size == 1:
        return order
    steps = -(-len(order) // size)
    padded = (order * (1 + size * steps // max(len(order), 1)))[: size * steps]
    return padded[rank::size]


def wrap(model: nn.Module) -> nn.Module:
    """The module to call for training steps: DDP in a process group, else the model itself."""
    if world()[1] == 1:
        return model
    device_ids = [model_device(model).index] if model_device(model).type == "cuda" else None
    # Retrievers leave parameters unused on some questions (the CVT vector on a graph without CVTs).
    return nn.parallel.DistributedDataParallel(model, device_ids=device_ids, find_unused_parameters=True)


def model_device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def all_sum(values: Sequence[float]) -> list[float]:
    """Element-wise sum over ranks (identity with one process)."""
    if world()[1] == 1:
        return list(values)
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    t = torch.tensor(list(values), dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.cpu().tolist()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, size: int, port: int, fn: Callable[..., Any], args: tuple, out: str) -> None:
    cuda = torch.cuda.is_available() and torch.cuda.device_count() >= size
    backend = "nccl" if cuda else "gloo"
    if cuda:
        torch.cuda.set_device(rank)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=size)
    try:
        result = fn(*args, device=f"cuda:{rank}" if cuda else "cpu")
        if rank == 0:
            torch.save(result, out)
    finally:
        # A DDP wrapper left in a reference cycle outlives the group, and its reducer thread then
        # aborts the process at exit ("terminate called without an active exception", about one
        # run in five): collect it while the group still exists.
        gc.collect()
        dist.destroy_process_group()


def run(fn: Callable[..., Any], args: tuple, nproc: int) -> Any:
    """Run `fn(*args, device=...)` in `nproc` processes of one process group; rank 0's return value.

    `fn` and `args` must pickle (a module-level function; numpy arrays, dataclasses)."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="kgdb-ddp-") as tmp:
        out = str(Path(tmp) / "rank0.pt")
        # Worker threads: share the cores instead of each process taking all of them.
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // nproc)))
        mp.spawn(_worker, args=(nproc, _free_port(), fn, args, out), nprocs=nproc, join=True)
        return torch.load(out, weights_only=False)
