"""SubgraphRAG triple scorer: MLP on [z_q || z_h || z_r || z_t || z_tau] (Li et al., ICLR 2025).

Hyper-parameters follow SubgraphRAG's reference code: 2 DDE rounds each way, hidden 1024, ReLU,
one shared learned vector for unnamed CVT entities.

Speed: the first layer is linear in the concatenation, so W1 [z_q||z_h||z_r||z_t||s_h||s_t]
= W_q z_q + (W_h z_h + W_sh s_h) + W_r z_r + (W_t z_t + W_st s_t). Each part is computed once
per question / entity / relation and gathered per triple, instead of a [m, 4d+20] x [4d+20, 1024]
matmul (about 16 GFLOP for 5,000 triples at d=384). At inference `prepare(tables)` projects the
entity and relation tables once, so scoring is gathers + adds + ReLU + one mat-vec, done in
cache-sized chunks of triples. The entity table may grow between questions (the seam keeps the rows
its questions touched, `kgdb.pipeline.vectors.EntityRowCache`): `prepare` then projects only the
new rows. Training uses the same split: entities are projected once per distinct entity of a
(batched) subgraph, and the per-triple sum, ReLU and output layer run in
`kgdb.models.gathered_mlp`, whose backward recomputes each chunk in cache instead of keeping
[m, 1024] activations. The DDE comes from the training cache (`node_features`, computed once per
subgraph). `forward_naive` keeps the textbook form for tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from kgdb.bounds import bounded
from kgdb.models.base import Retriever, SubgraphTensors, TensorTables
from kgdb.models.dde import dde, dde_dim, distinct_rows, triple_encoding
from kgdb.models.gathered_mlp import gathered_mlp, stacked_projections


@dataclass(frozen=True)
class SubgraphRAGConfig:
    hidden: int = bounded(1024, ge=1)
    dde_rounds: int = bounded(2, ge=0)
    dde_reverse_rounds: int = bounded(2, ge=0)


class SubgraphRAG(Retriever):
    name = "subgraphrag"
    Config = SubgraphRAGConfig
    trainable = True
    label_kind = "triples"
    description = "DDE + MLP triple scorer (SubgraphRAG, ICLR 2025); trained on shortest-path triples"
    batched_training = True  # forward and the per-triple BCE take a disjoint union of questions
    chunk = 512  # triples per chunk (training and inference): a [512, 1024] float block stays in L2 cache

    def __init__(self, config: SubgraphRAGConfig | None = None, embedding_dim: int = 384):
        super().__init__(config, embedding_dim)
        config = self.cfg
        d = embedding_dim
        self.dde_width = dde_dim(config.dde_rounds, config.dde_reverse_rounds)
        self.cvt_embedding = nn.Parameter(torch.zeros(1, d))
        self.hidden = nn.Linear(4 * d + 2 * self.dde_width, config.hidden)
        self.out = nn.Linear(config.hidden, 1)
        nn.init.normal_(self.cvt_embedding, std=d**-0.5)
        # (entity storage, parameter version, rows projected): what `prepare` has projected
        self._prepared: tuple[int, int, int] | None = None
        self._ent_proj: tuple[Tensor, Tensor] | None = None  # (as head, as tail)
        self._rel_proj: Tensor | None = None

    # Column blocks of the first layer, in input order [q, h, r, t, s_h, s_t].
    def _blocks(self) -> tuple[Tensor, ...]:
        d, w = self.embedding_dim, self.dde_width
        W = self.hidden.weight
        return (
            W[:, :d],
            W[:, d : 2 * d],
            W[:, 2 * d : 3 * d],
            W[:, 3 * d : 4 * d],
            W[:, 4 * d : 4 * d + w],
            W[:, 4 * d + w :],
        )

    def entity_text(self, x: SubgraphTensors) -> Tensor:
        """[n, d] entity embeddings with CVT nodes replaced by the shared learned vector."""
        z = x.entity_embedding()
        return torch.where(x.cvt_mask.unsqueeze(1), self.cvt_embedding, z)

    def node_feature_key(self) -> str:
        return f"dde-{self.cfg.dde_rounds}-{self.cfg.dde_reverse_rounds}"

    def node_features(self, x: SubgraphTensors) -> Tensor:
        """The DDE of every node, [n, dde width]: computed once per subgraph and kept in the training cache."""
        return dde(x.head, x.tail, x.topic_mask, self.cfg.dde_rounds, self.cfg.dde_reverse_rounds)

    def features(self, x: SubgraphTensors) -> Tensor:
        """The DDE, from the cache when the tensors carry it (training), else computed (one question)."""
        cached = x.features.get(self.node_feature_key())
        return cached if cached is not None else self.node_features(x)

    def forward_naive(self, x: SubgraphTensors) -> Tensor:
        """Textbook form: one [4d+2w] input row per triple. Reference for tests only."""
        z = self.entity_text(x)
        s = self.features(x)
        inp = torch.cat(
            [
                x.question.index_select(0, x.triple_question()),
                z.index_select(0, x.head),
                x.relation_embedding(),
                z.index_select(0, x.tail),
                triple_encoding(s, x.head, x.tail),
            ],
            dim=1,
        )
        return self.out(torch.relu(self.hidden(inp))).squeeze(1)

    def forward(self, x: SubgraphTensors) -> Tensor:
        if not self.training and self._is_prepared(x.tables):
            return self._forward_prepared(x)
        return self._forward_factored(x)

    def _dde_terms(self, x: SubgraphTensors, Wq: Tensor, Wsh: Tensor, Wst: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """First-layer terms of the distinct (DDE vector, question) pairs: (head side with the question
        term and bias folded in [k, H], tail side [k, H], row of each node [n])."""
        s = torch.cat([self.features(x), x.node_batch.unsqueeze(1).to(torch.float32)], dim=1)
        distinct, which = distinct_rows(s)
        q = x.question @ Wq.T + self.hidden.bias  # [B, H]
        dde_h = torch.addmm(q.index_select(0, distinct[:, -1].long()), distinct[:, :-1], Wsh.T)
        dde_t = distinct[:, :-1] @ Wst.T
        return dde_h, dde_t, which

    def _forward_factored(self, x: SubgraphTensors) -> Tensor:
        """Same function as `forward_naive`, the first layer split into per-entity, per-relation and
        per-(DDE vector, question) projections that each triple sums (training, and scoring without
        `prepare`); the per-triple part runs in `gathered_mlp`.

        The [u, d] x [d, H] entity projections and their gradients are what training spends most
        time on, so they cover only the entities at each end of some triple, once each however
        many nodes of a batch share them (and the CVT vector once); graph table rows need no
        gradient, only the weights and the CVT vector do."""
        Wq, Wh, Wr, Wt, Wsh, Wst = self._blocks()
        ents_h, head_row = self._entity_rows(x, x.head)
        ents_t, tail_row = self._entity_rows(x, x.tail)
        rels, rel_of = torch.unique(x.relation, return_inverse=True)
        dde_rows, which = distinct_rows(self.features(x))
        E, cvt = x.tables.entity, self.cvt_embedding
        ones = torch.ones(x.num_questions, 1, device=x.question.device)
        # One table of every term, so each triple's six rows are one fused gather-and-sum; the
        # question row carries the bias (an input column of ones).
        parts = [
            (E.index_select(0, ents_h), Wh),
            (cvt, Wh),
            (E.index_select(0, ents_t), Wt),
            (cvt, Wt),
            (x.tables.relation.index_select(0, rels), Wr),
            (dde_rows, Wsh),
            (dde_rows, Wst),
            (torch.cat([x.question, ones], dim=1), torch.cat([Wq, self.hidden.bias.unsqueeze(1)], dim=1)),
        ]
        table = stacked_projections(parts)
        starts = [0]
        for inp, _ in parts[:-1]:
            starts.append(starts[-1] + inp.shape[0])
        h, t = x.head, x.tail
        index = torch.stack(
            [
                head_row,
                starts[2] + tail_row,
                starts[4] + rel_of,
                starts[5] + which.index_select(0, h),
                starts[6] + which.index_select(0, t),
                starts[7] + x.triple_question(),
            ],
            dim=1,
        )
        return gathered_mlp([(table, index)], self.out.weight.squeeze(0), self.out.bias, self.chunk)

    @staticmethod
    def _entity_rows(x: SubgraphTensors, ends: Tensor) -> tuple[Tensor, Tensor]:
        """(distinct named `Entity.idx` at this end of the triples; each triple's row among them,
        the CVT nodes' row being the one after the last)."""
        nodes = torch.unique(ends)
        named = nodes[~x.cvt_mask.index_select(0, nodes)]
        ents, ent_of = torch.unique(x.entity_idx.index_select(0, named), return_inverse=True)
        row = torch.full_like(x.entity_idx, ents.shape[0])
        row[named] = ent_of
        return ents, row.index_select(0, ends)

    # ---- inference with whole-table projections -------------------------------------------------
    def _version(self) -> int:  # type: ignore[override]  # shadows nn.Module's state_dict version number
        return sum(p._version for p in self.parameters())

    @staticmethod
    def _storage(tables: TensorTables) -> tuple[int, int]:
        """(address, capacity in rows) of the memory behind the entity table: a table that grows
        in place (rows appended to a larger buffer) keeps both, a new table changes the address."""
        ent = tables.entity
        row_bytes = max(ent.shape[1] * ent.element_size(), 1)
        return (
            ent.untyped_storage().data_ptr(),
            int(ent.untyped_storage().nbytes() // row_bytes - ent.storage_offset() // max(ent.shape[1], 1)),
        )

    def _is_prepared(self, tables: TensorTables) -> bool:
        p = self._prepared
        return p is not None and p[:2] == (self._storage(tables)[0], self._version()) and p[2] >= tables.entity.shape[0]

    @torch.no_grad()
    def prepare(self, tables: TensorTables, chunk: int = 8192) -> None:
        """Project every entity (as head and as tail) and every relation once for fast scoring.

        The projection buffers have one row per row of the entity table's memory (its capacity) plus
        a last row for the shared CVT vector, so CVT nodes are a remapped index; rows appended to the
        table in place since the last call are the only ones projected.
        """
        if self._is_prepared(tables):
            return
        Wq, Wh, Wr, Wt, Wsh, Wst = self._blocks()
        ptr, capacity = self._storage(tables)
        n = tables.entity.shape[0]
        p = self._prepared
        start = p[2] if p is not None and p[:2] == (ptr, self._version()) else 0
        if start == 0:
            heads = torch.empty(capacity + 1, self.cfg.hidden, device=tables.entity.device)
            tails = torch.empty_like(heads)
            cvt = self.cvt_embedding.detach()
            torch.matmul(cvt, Wh.T, out=heads[capacity:])
            torch.matmul(cvt, Wt.T, out=tails[capacity:])
            self._ent_proj = (heads, tails)
            self._rel_proj = tables.relation @ Wr.T
        if self._ent_proj is None:
            raise RuntimeError("no entity projections to extend")
        heads, tails = self._ent_proj
        for lo in range(start, n, chunk):
            hi = min(lo + chunk, n)
            part = tables.entity[lo:hi]
            torch.matmul(part, Wh.T, out=heads[lo:hi])
            torch.matmul(part, Wt.T, out=tails[lo:hi])
        self._prepared = (ptr, self._version(), n)

    def train(self, mode: bool = True) -> "SubgraphRAG":
        if mode:  # parameters will change: drop the projection cache
            self._prepared, self._ent_proj, self._rel_proj = None, None, None
        return super().train(mode)

    def _forward_prepared(self, x: SubgraphTensors) -> Tensor:
        """Rows of the whole-table projections and of this question's DDE terms, summed per triple
        by `gathered_mlp` (chunks in cache, no autograd).

        DDE vectors take few distinct values (they encode distances to the topics), so their
        first-layer terms are computed once per distinct (vector, question), with the question
        term folded in; a batch of questions therefore costs no more per triple than one.
        """
        Wq, Wh, Wr, Wt, Wsh, Wst = self._blocks()
        if self._ent_proj is None or self._rel_proj is None:
            raise RuntimeError("no whole-table projections: call prepare() first")
        heads, tails = self._ent_proj
        dde_h, dde_t, which = self._dde_terms(x, Wq, Wsh, Wst)
        row = torch.where(x.cvt_mask, heads.shape[0] - 1, x.entity_idx)
        dde = torch.stack([which.index_select(0, x.head), dde_h.shape[0] + which.index_select(0, x.tail)], dim=1)
        return gathered_mlp(
            [
                (heads, row.index_select(0, x.head).unsqueeze(1)),
                (tails, row.index_select(0, x.tail).unsqueeze(1)),
                (self._rel_proj, x.relation.unsqueeze(1)),
                (torch.cat([dde_h, dde_t]), dde),
            ],
            self.out.weight.squeeze(0),
            self.out.bias,
            self.chunk,
        )
