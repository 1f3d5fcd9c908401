"""The RRP relation-path planner (the RRP paper, Eqs. 1-2) as a small trained model instead of a
fine-tuned LLM: a GRU decoder that, given the question, emits (relation, direction) steps and then
STOP, decoded with beam search. Trained with L_r1 = -(1/|Γ*|) Σ_{γ∈Γ*} log P(γ|q) over the
shortest relation paths Γ* the database labels (`kgdb.data.relation_paths`).

The question is read twice: the sentence embedding of the question with the topic names removed,
and a learned bag of hashed word uni- and bigrams (fastText-style), which tells templates such as
"directed by" from "directed" apart where a frozen sentence vector blurs them. Output logits are
tied to the relation text embeddings of the graph, so rare relations share what they say.
Token 0 is STOP; token 1 + 2*r is relation r forward, 2 + 2*r relation r backward.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Sequence

import torch
from torch import nn

from kgdb.scoring.path_tokens import STOP


@dataclass(frozen=True)
class PlannerConfig:
    hidden: int = 256
    word_dim: int = 128
    buckets: int = 1 << 16
    max_hops: int = 3
    dropout: float = 0.1

    def to_json(self) -> dict:
        return asdict(self)


class PathDecoder(nn.Module):
    """P(γ | q) for relation paths γ over a fixed relation vocabulary (`relation_emb`, [R, d])."""

    name = "rrp-planner"

    def __init__(self, config: PlannerConfig, relation_emb: torch.Tensor):
        super().__init__()
        self.cfg = config
        num_rel, dim = relation_emb.shape
        self.register_buffer("relation_emb", relation_emb.float().clone())
        self.words = nn.EmbeddingBag(config.buckets, config.word_dim, mode="mean")
        self.init = nn.Sequential(nn.Linear(dim + config.word_dim, config.hidden), nn.Tanh())
        self.rel_proj = nn.Linear(dim, config.hidden)
        self.dir_emb = nn.Embedding(2, config.hidden)
        self.special = nn.Embedding(2, config.hidden)  # 0: STOP (output), 1: start (input)
        self.gru = nn.GRUCell(config.hidden, config.hidden)
        self.out = nn.Linear(config.hidden, config.hidden)
        self.bias = nn.Parameter(torch.zeros(1 + 2 * num_rel))
        self.drop = nn.Dropout(config.dropout)

    @property
    def num_tokens(self) -> int:
        return int(self.bias.shape[0])

    def tokens(self) -> torch.Tensor:
        """[1 + 2R, hidden]: STOP, then each relation forward and backward."""
        rel = self.rel_proj(self.relation_emb)  # [R, h]
        both = torch.stack([rel + self.dir_emb.weight[0], rel + self.dir_emb.weight[1]], dim=1).reshape(
            -1, rel.shape[1]
        )
        return torch.cat([self.special.weight[:1], both], dim=0)

    def start(self, q_emb: torch.Tensor, words: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.init(torch.cat([q_emb, self.words(words, offsets)], dim=-1))

    def step(
        self, h: torch.Tensor, prev: torch.Tensor | None, table: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One decoder step: new state and logits over the next token (prev None = the first step)."""
        x = self.special.weight[1].expand(h.shape[0], -1) if prev is None else table[prev]
        h = self.gru(self.drop(x), h)
        return h, self.out(self.drop(h)) @ table.T + self.bias

    def log_prob(
        self,
        q_emb: torch.Tensor,
        words: torch.Tensor,
        offsets: torch.Tensor,
        paths: torch.Tensor,
        table: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """log P(path | q) per row; `paths` [B, T] tokens, each ending with STOP, padded with -1.
        `table`: `tokens()` computed once by a caller that does not train (inference)."""
        table = self.tokens() if table is None else table
        h = self.start(q_emb, words, offsets)
        total = torch.zeros(paths.shape[0], device=paths.device)
        prev = None
        for t in range(paths.shape[1]):
            h, logits = self.step(h, prev, table)
            logits = self._mask(logits, t)
            target = paths[:, t]
            live = target >= 0
            lp = torch.log_softmax(logits, dim=-1).gather(1, target.clamp(min=0)[:, None])[:, 0]
            total = total + torch.where(live, lp, torch.zeros_like(lp))
            prev = target.clamp(min=0)
        return total

    def _mask(self, logits: torch.Tensor, t: int) -> torch.Tensor:
        if t == 0:  # a relation path has at least one step
            logits = logits.clone()
            logits[:, STOP] = float("-inf")
        elif t >= self.cfg.max_hops:  # and at most max_hops
            keep = torch.full_like(logits, float("-inf"))
            keep[:, STOP] = 0.0
            logits = logits + keep
        return logits

    def loss(self, q_emb, words, offsets, paths, weights) -> torch.Tensor:
        """Eq. 2: -(1/|Γ*_q|) Σ log P(γ|q) per question (`weights` = 1/|Γ*_q| per row), summed."""
        return -(self.log_prob(q_emb, words, offsets, paths) * weights).sum()

    @torch.no_grad()
    def beam_search(
        self,
        q_emb: torch.Tensor,
        words: torch.Tensor,
        beam: int = 5,
        allowed: Callable[[list[tuple[int, ...]]], Sequence[Sequence[int]]] | None = None,
        table: torch.Tensor | None = None,
    ) -> list[tuple[tuple[int, ...], float]]:
        """The `beam` most probable complete relation paths of one question, as (tokens, log P).

        `allowed(prefixes)` (optional) names, for every live prefix of a decoding step at once, the
        tokens that may follow it, e.g. the relations that really leave the entities the prefix
        reaches (graph-constrained decoding, one database call per step); the probabilities stay
        those of the unconstrained model. `table`: `tokens()` computed once by the caller (it
        projects every relation of the vocabulary: most of the decoder's time on a large one)."""
        table = self.tokens() if table is None else table
        h = self.start(q_emb[None], words, torch.zeros(1, dtype=torch.long, device=words.device))
        live: list[tuple[tuple[int, ...], float]] = [((), 0.0)]
        states = h
        done: list[tuple[tuple[int, ...], float]] = []
        for t in range(self.cfg.max_hops + 1):
            prev = None if t == 0 else torch.tensor([p[-1] for p, _ in live], device=h.device)
            states, logits = self.step(states, prev, table)
            lp = torch.log_softmax(self._mask(logits, t), dim=-1)
            if allowed is not None:
                keep = torch.full_like(lp, float("-inf"))
                nexts = allowed([prefix for prefix, _ in live]) if t < self.cfg.max_hops else [[] for _ in live]
                for row, tokens in enumerate(nexts):
                    ok = [STOP] if t > 0 else []
                    ok += [tok for tok in tokens if 0 < tok < self.num_tokens]
                    if ok:
                        keep[row, ok] = 0.0
                lp = lp + keep
            lp = lp + torch.tensor([s for _, s in live], device=h.device)[:, None]
            flat = lp.flatten()
            k = min(beam * 2, int(torch.isfinite(flat).sum()))
            if k == 0:
                break
            top = torch.topk(flat, k)
            nxt: list[tuple[tuple[int, ...], float]] = []
            rows: list[int] = []
            for score, idx in zip(top.values.tolist(), top.indices.tolist()):
                row, tok = divmod(idx, self.num_tokens)
                if tok == STOP:
                    done.append((live[row][0], score))
                elif len(nxt) < beam:
                    nxt.append((live[row][0] + (tok,), score))
                    rows.append(row)
            if not nxt:
                break
            live, states = nxt, states[torch.tensor(rows, device=h.device)]
        return sorted(done, key=lambda d: -d[1])[:beam]

    def config(self) -> dict:
        return self.cfg.to_json()


def pack_questions(
    features: Sequence[Sequence[int]], device: torch.device | str = "cpu"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Flat word ids and offsets for `nn.EmbeddingBag`."""
    flat = [w for f in features for w in f]
    offsets = [0]
    for f in features[:-1]:
        offsets.append(offsets[-1] + len(f))
    return torch.tensor(flat, dtype=torch.long, device=device), torch.tensor(offsets, dtype=torch.long, device=device)
