"""score_i = w · relu(sum_k table_k[index_k[i]]) + b, in cache-sized chunks of rows, forward and backward.

SubgraphRAG's first layer is linear in its concatenated input, so its pre-activation for a triple
is a sum of rows of small projected tables (per entity, relation, DDE vector, question). Written
with autograd ops, every step of that sum, the ReLU and their gradients materialise an [m, H]
tensor (m triples, H = 1024: 200 MB each at 50,000 triples), and training time goes to memory
traffic. Here each chunk of rows is summed, activated and reduced in a buffer that stays in the
CPU cache; the backward pass recomputes the chunk (cheaper than storing it) and scatters the
gradient into the tables with `index_add_`. The result equals the autograd composition (tests
compare both, values and gradients); the backward is deterministic (sequential on the CPU).
"""

from __future__ import annotations

import torch
from torch import Tensor

CHUNK = 512  # rows per chunk: a [512, 1024] float32 block (2 MiB) stays in L2


def _sum_rows(tables: list[Tensor], indices: list[Tensor], start: int, end: int, buf: Tensor, tmp: Tensor) -> Tensor:
    a, t = buf[: end - start], tmp[: end - start]
    torch.index_select(tables[0], 0, indices[0][start:end], out=a)
    for table, idx in zip(tables[1:], indices[1:]):
        torch.index_select(table, 0, idx[start:end], out=t)
        a += t
    return a


def _forward(tables: list[Tensor], indices: list[Tensor], w: Tensor, b: Tensor, chunk: int) -> Tensor:
    m = int(indices[0].shape[0])
    H = tables[0].shape[1]
    scores = torch.empty(m, device=w.device, dtype=w.dtype)
    size = min(chunk, max(m, 1))
    buf = torch.empty(size, H, device=w.device, dtype=w.dtype)
    tmp = torch.empty_like(buf)
    for start in range(0, m, size):
        end = min(start + size, m)
        a = _sum_rows(tables, indices, start, end, buf, tmp)
        a.relu_()
        torch.mv(a, w, out=scores[start:end])
    return scores + b


class _GatheredMLP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, w: Tensor, b: Tensor, chunk: int, indices: list[Tensor], *tables: Tensor) -> Tensor:
        ctx.save_for_backward(w, *tables)
        ctx.indices, ctx.chunk, ctx.b_shape = indices, chunk, b.shape
        return _forward(list(tables), indices, w, b, chunk)

    @staticmethod
    def backward(ctx, grad: Tensor):
        w, *tables = ctx.saved_tensors
        indices, chunk = ctx.indices, ctx.chunk
        needs = ctx.needs_input_grad
        grads = [torch.zeros_like(t) if needs[4 + k] else None for k, t in enumerate(tables)]
        grad = grad.contiguous()
        m = int(indices[0].shape[0])
        H = tables[0].shape[1]
        gw = torch.zeros_like(w)
        size = min(chunk, max(m, 1))
        buf = torch.empty(size, H, device=w.device, dtype=w.dtype)
        tmp = torch.empty_like(buf)
        for start in range(0, m, size):
            end = min(start + size, m)
            g = grad[start:end]
            a = _sum_rows(tables, indices, start, end, buf, tmp)
            a.relu_()
            gw.addmv_(a.T, g)  # d score / d w = relu(a)
            ga = tmp[: end - start]
            torch.outer(g, w, out=ga)
            ga.mul_(a > 0)  # relu'(a); 0 at a = 0, as autograd's relu
            for k, idx in enumerate(indices):
                if grads[k] is not None:
                    grads[k].index_add_(0, idx[start:end], ga)
        gb = grad.sum().reshape(ctx.b_shape) if needs[1] else None
        return (gw if needs[0] else None, gb, None, None, *grads)


def gathered_mlp(tables: list[Tensor], indices: list[Tensor], w: Tensor, b: Tensor, chunk: int = CHUNK) -> Tensor:
    """[m] scores: `w · relu(sum_k tables[k][indices[k]]) + b`; `tables[k]` is [r_k, H], `indices[k]`
    int64 [m], `w` [H], `b` a one-element tensor. Differentiable in `w`, `b` and every table."""
    tables = [t.contiguous() for t in tables]
    if torch.is_grad_enabled() and (w.requires_grad or b.requires_grad or any(t.requires_grad for t in tables)):
        return _GatheredMLP.apply(w, b, chunk, list(indices), *tables)
    return _forward(tables, list(indices), w, b, chunk)
