"""The RRP path ranker: scores every relation path enumerated around a question's topics
(`kgdb.cypher.path_candidates`) instead of decoding a few with a beam, so a reachable right path is
always a candidate and only its rank is learned. On WebQSP the GRU planner's beam missed the
labelled path for a third of the val misses and misranked it for most others.

A portable ranker (`RankerConfig.for_any_graph`) drops what ties it to one graph: it reads the
connected graph's relation text table, so one checkpoint trained on several graphs together ships
with kgdb for graphs that have no trained RRP model (on WebQSP val the dropped parts added nothing).

A candidate's score is an MLP over (a) the question (sentence embedding with the topic names removed
+ a learned bag of hashed word n-grams, as the planner reads it) times the path (relation text
embeddings, a learned vector per (relation, direction), and the hop position), for the mean of the
hops and the last hop (the answer's type), and (b) dense features the seam computes (the planner's
log P(γ|q), question-relation cosines, length, how many entities the path reaches, CVT ends).
Trained with a listwise softmax over each question's candidates, the positives being the candidates
whose reached entities match the answers best (`kgdb.rrp.training.path_ranker`).
Token ids as the planner's: 1 + 2*r forward, 2 + 2*r backward, 0 = padding.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from kgdb.rrp.scoring import RankerConfig


class PathRanker(nn.Module):
    """Scores of candidate relation paths; `relation_emb` [R, d] is the graph's relation text table."""

    name: ClassVar[str] = "rrp-ranker"
    # as the registered retrievers: `kgdb.models.registry.make_config` types `--set` values
    Config: ClassVar[type[RankerConfig]] = RankerConfig
    relation_emb: torch.Tensor  # a buffer

    def __init__(self, config: RankerConfig, relation_emb: torch.Tensor):
        super().__init__()
        self.cfg = config
        num_rel, dim = relation_emb.shape
        h = config.hidden
        self.register_buffer("relation_emb", relation_emb.float().clone(), persistent=not config.portable)
        self.words = nn.EmbeddingBag(config.buckets, config.word_dim, mode="mean")
        self.question = nn.Linear(dim + config.word_dim, h)
        self.rel_proj = nn.Linear(dim, h)
        self.token = (
            None if config.portable else nn.Embedding(1 + 2 * num_rel, h, padding_idx=0)
        )  # learned per (relation, direction)
        if self.token is not None:
            nn.init.zeros_(self.token.weight)
        self.direction = nn.Embedding(2, h)
        self.hop = nn.Embedding(config.max_hops, h)
        self.mlp = nn.Sequential(
            nn.Linear(2 * h + config.dense, h), nn.ReLU(), nn.Dropout(config.dropout), nn.Linear(h, 1)
        )
        self.drop = nn.Dropout(config.dropout)

    @property
    def num_tokens(self) -> int:
        return 1 + 2 * int(self.relation_emb.shape[0])

    def forward(
        self,
        q_emb: torch.Tensor,
        words: torch.Tensor,
        offsets: torch.Tensor,
        tokens: torch.Tensor,
        dense: torch.Tensor,
        owner: torch.Tensor,
    ) -> torch.Tensor:
        """Scores [N] of N candidates: `tokens` [N, H] (0-padded), `dense` [N, F], `owner` [N] the
        question row (of `q_emb` [B, d] and the word bags) each candidate belongs to."""
        if tokens.dim() != 2 or tokens.shape[1] > self.cfg.max_hops or dense.shape != (tokens.shape[0], self.cfg.dense):
            raise ValueError(
                f"tokens {tuple(tokens.shape)} / dense {tuple(dense.shape)} do not fit a ranker of "
                f"{self.cfg.max_hops} hops and {self.cfg.dense} dense features"
            )
        if tokens.numel() and int(tokens.max()) >= self.num_tokens:
            raise ValueError(f"token {int(tokens.max())} is outside the relation vocabulary ({self.num_tokens} tokens)")
        q = torch.tanh(self.question(self.drop(torch.cat([q_emb, self.words(words, offsets)], dim=-1))))[
            owner
        ]  # [N, h]
        live = tokens > 0
        rel = ((tokens - 1).clamp(min=0)) // 2
        hop_vec = torch.tanh(
            self.rel_proj(self.relation_emb[rel])
            + self.direction((tokens - 1).clamp(min=0) % 2)
            + self.hop.weight[: tokens.shape[1]][None]
            + (0 if self.token is None else self.token(tokens))
        )  # [N, H, h]
        hop_vec = hop_vec * live[..., None]
        mean = hop_vec.sum(1) / live.sum(1, keepdim=True).clamp(min=1)
        last = hop_vec[torch.arange(tokens.shape[0], device=tokens.device), (live.sum(1) - 1).clamp(min=0)]
        return self.mlp(torch.cat([q * mean, q * last, dense], dim=-1))[:, 0]

    @staticmethod
    def loss(scores: torch.Tensor, owner: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
        """Listwise: -log Σ_{positives} softmax(scores within the question), summed over questions.
        Every question must have at least one positive candidate."""
        from torch_geometric.utils import scatter, softmax  # here, not at import: answering never needs torch-geometric

        p = softmax(scores, owner)
        mass = scatter(p * positive.float(), owner, dim=0, reduce="sum")
        return -torch.log(mass.clamp(min=1e-12)).sum()

    def config(self) -> dict:
        return self.cfg.to_json()
