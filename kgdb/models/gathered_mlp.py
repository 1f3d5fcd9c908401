"""score_i = w · relu(sum of gathered table rows) + b, in cache-sized chunks of rows, forward and backward.

SubgraphRAG's first layer is linear in its concatenated input, so its pre-activation for a triple
is a sum of rows of small projected tables (per entity, relation, DDE vector, question). Written
with autograd ops, every step of that sum, the ReLU and their gradients materialise an [m, H]
tensor (m triples, H = 1024: 200 MB each at 50,000 triples), and training time goes to memory
traffic. Here each chunk of rows is summed by `embedding_bag` (one fused gather-and-sum),
activated and reduced in a buffer that stays in the CPU cache; the backward pass recomputes the
chunk (cheaper than storing it), masks the gradient with one `threshold_backward` and scatters it
into the tables with `index_add_`. The result equals the autograd composition (tests compare
both, values and gradients); the backward is deterministic (sequential on the CPU).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

CHUNK = 512  # rows per chunk: a [512, 1024] float32 block (2 MiB) stays in L2


def _sum_rows(groups: list[tuple[Tensor, Tensor]], start: int, end: int) -> Tensor:
    a: Tensor | None = None
    for table, index in groups:
        part = F.embedding_bag(index[start:end], table, mode="sum")
        a = part if a is None else a.add_(part)
    if a is None:
        raise ValueError("no (table, index) groups to sum")
    return a


def _forward(groups: list[tuple[Tensor, Tensor]], w: Tensor, b: Tensor, chunk: int) -> Tensor:
    m = int(groups[0][1].shape[0])
    scores = torch.empty(m, device=w.device, dtype=w.dtype)
    for start in range(0, m, chunk):
        end = min(start + chunk, m)
        torch.mv(_sum_rows(groups, start, end).relu_(), w, out=scores[start:end])
    return scores + b


class _GatheredMLP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, w: Tensor, b: Tensor, chunk: int, indices: list[Tensor], *tables: Tensor) -> Tensor:
        ctx.save_for_backward(w, *tables)
        ctx.indices, ctx.chunk, ctx.b_shape = indices, chunk, b.shape
        return _forward(list(zip(tables, indices)), w, b, chunk)

    @staticmethod
    def backward(ctx, grad: Tensor):
        w, *tables = ctx.saved_tensors
        indices, chunk = ctx.indices, ctx.chunk
        groups = list(zip(tables, indices))
        needs = ctx.needs_input_grad
        grads = [torch.zeros_like(t) if needs[4 + g] else None for g, t in enumerate(tables)]
        columns = [index.T.contiguous() for index in indices]  # [K, m]: contiguous per chunk for index_add_
        grad = grad.contiguous()
        m = int(indices[0].shape[0])
        gw = torch.zeros_like(w)
        for start in range(0, m, chunk):
            end = min(start + chunk, m)
            g = grad[start:end]
            a = _sum_rows(groups, start, end).relu_()
            gw.addmv_(a.T, g)  # d score / d w = relu(a)
            ga = torch.ops.aten.threshold_backward(torch.outer(g, w), a, 0.0)  # relu'(a): 0 at a <= 0, as autograd
            for gi, cols in enumerate(columns):
                grad_i = grads[gi]
                if grad_i is not None:
                    for col in cols:
                        grad_i.index_add_(0, col[start:end], ga)
        gb = grad.sum().reshape(ctx.b_shape) if needs[1] else None
        return (gw if needs[0] else None, gb, None, None, *grads)


def gathered_mlp(groups: list[tuple[Tensor, Tensor]], w: Tensor, b: Tensor, chunk: int = CHUNK) -> Tensor:
    """[m] scores: `w · relu(sum over groups (table, index) of sum_k table[index[:, k]]) + b`.

    `table` is [r, H] and `index` int64 [m, K] (K rows of that table summed per output row; put
    several small tables in one group by concatenating them, offsetting the indices); `w` [H], `b`
    a one-element tensor. Differentiable in `w`, `b` and every table."""
    groups = [(t.contiguous(), i.contiguous()) for t, i in groups]
    chunk = max(1, chunk)
    if int(groups[0][1].shape[0]) == 0:
        return w.new_zeros(0) + b.sum() * 0  # keeps the graph for an empty subgraph
    if torch.is_grad_enabled() and (w.requires_grad or b.requires_grad or any(t.requires_grad for t, _ in groups)):
        tables, indices = zip(*groups)
        return _GatheredMLP.apply(w, b, chunk, list(indices), *tables)
    return _forward(groups, w, b, chunk)


class _StackedProjections(torch.autograd.Function):
    @staticmethod
    def forward(ctx, *pairs: Tensor) -> Tensor:
        xs, ws = pairs[0::2], pairs[1::2]
        out = torch.empty(sum(x.shape[0] for x in xs), ws[0].shape[0], device=ws[0].device, dtype=ws[0].dtype)
        start = 0
        for x, w in zip(xs, ws):
            torch.mm(x, w.T, out=out[start : start + x.shape[0]])
            start += x.shape[0]
        ctx.save_for_backward(*pairs)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        pairs = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grads: list[Tensor | None] = []
        start = 0
        for i in range(0, len(pairs), 2):
            x, w = pairs[i], pairs[i + 1]
            g = grad[start : start + x.shape[0]]
            start += x.shape[0]
            grads.append(g @ w if needs[i] else None)
            grads.append(g.T @ x if needs[i + 1] else None)
        return tuple(grads)


def stacked_projections(pairs: list[tuple[Tensor, Tensor]]) -> Tensor:
    """`torch.cat([x @ w.T for x, w in pairs])` written straight into one table (no copy of the
    [rows, H] blocks, which for a batch of large subgraphs is tens of MB per step), with a
    gradient for every `w` and for the `x` that need one (the table rows of the graph need none)."""
    flat = [t for pair in pairs for t in pair]
    if torch.is_grad_enabled() and any(t.requires_grad for t in flat):
        return _StackedProjections.apply(*flat)
    return torch.cat([x @ w.T for x, w in pairs])
