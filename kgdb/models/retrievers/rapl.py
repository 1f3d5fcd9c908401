"""RAPL path retriever on the directed line graph (Yao et al. 2025, RAPL).

Triples are nodes of the line graph of the fetched subgraph, taken in both directions (triple i
and its inverse m + i, `kgdb.models.line_graph`), so a path may follow a relation against its
arrow as the shortest-path labels do. Per question:

- node input phi(h, r, t): projections of the head, relation and tail text embeddings (CVT nodes
  share one learned vector), plus the question's projection and eight scalars (cosine of the
  question with h, r and t; topic and CVT flags of h and t; inverse flag). Only text embeddings
  enter, never graph ids, so a checkpoint carries to any graph embedded with the same model;
- two 2-layer GCNs (W_agg over line-graph neighbours + W_self), one on the line graph and one on
  its edge-reversed copy (the look-ahead), averaged: z_i (the paper's path encoder);
- question triple: <z_q, z_v> over the triples leaving a topic, trained with Eq. 9's averaged
  positive / negative log-sigmoid loss (positives = first triples of the target paths, plus with
  `--relation-targets` Eq. 8's augmentation: the triples leaving a topic by a relation of the
  question's stored R_*, `Targets.relation_targets`);
- step-wise extension: a softmax over the line-graph successors of the previous triple plus a
  STOP node g([sum of the prefix, z_q]) (Eq. 5/6). Where the paper scores candidates with z_q
  alone, the query here is z_q + W_p(sum of the prefix), so the step depends on the path so far;
- inference (§3.6): K question triples sampled with replacement, `paths_per_sample` walks each,
  ending at STOP or after `max_len` triples; the M most probable *distinct* walks are kept. The
  paper keeps the top-M walks and then deduplicates; a trained model samples its best paths many
  times over, so that kept 5-6 distinct triples per WebQSP question here (val answer recall 0.59)
  where deduplicating first and keeping M distinct paths gives the adaptive sizes of the paper's
  Table 1 (M is chosen on the val split). Immediate reversal (a triple then its own inverse) is
  never proposed.

Target paths are topic -> answer paths made only of the labelled triples the cache holds
(shortest-path labels today, LLM-selected ones when a label source provides them), shortest
first, at most `max_targets` per question; one is drawn at random per training step (§2).

Outputs: `paths(x)` gives the per-triple scores and each question's deduplicated paths. A triple on
a kept path scores 1.5 + (best probability of a path through it) / 2, a sibling added by completion
(`complete`) 1.25 + sigmoid(<z_q, z>) / 4, every other triple sigmoid(<z_q, z>) < 1, so the passed
(adaptive, at most `max_triples`) set is exactly the triples scoring above 1 and any top-K ranking
still works.

Sizes differ from the paper for the CPU budget: hidden 128 instead of 512 (documented in the
checkpoint config).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from kgdb.bounds import bounded
from kgdb.models.base import PATH_FLOOR, Retriever, SubgraphTensors, Targets
from kgdb.models.line_graph import augment, gcn_aggregate, successors

N_FLAGS = 8


@dataclass(frozen=True)
class RAPLConfig:
    hidden: int = bounded(128, ge=1)
    dropout: float = bounded(0.2, ge=0, lt=1)
    max_len: int = bounded(4, ge=1)  # triples per path (2-hop WebQSP through a CVT node is 2; MetaQA 3-hop is 3)
    samples: int = bounded(200, ge=1)  # K: question triples sampled with replacement (K, M chosen on WebQSP val)
    paths_per_sample: int = bounded(5, ge=1)
    top_m: int = bounded(120, ge=1)  # M: distinct walks kept, most probable first
    max_targets: int = bounded(32, ge=1)  # target paths kept per training question
    temperature: float = bounded(1.0, gt=0)  # inference softmax temperature (> 1: more diverse paths, more triples)
    seed: int = bounded(0, ge=0)  # inference sampling seed (a question's retrieval is reproducible)
    max_triples: int = bounded(0, ge=0)  # most triples passed per question (0: no budget); the order: `_within_budget`
    complete: bool = False  # add the triples a kept path's relations reach from the same entities (siblings)


@dataclass
class LinePath:
    """One sampled path of one question: local triple indices and +1/-1 directions."""

    probability: float
    triples: tuple[int, ...]
    directions: tuple[int, ...]


@dataclass
class Encoded:
    """Line-graph node embeddings of a (batched) subgraph, kept for the loss and the walks."""

    x: SubgraphTensors
    src: Tensor  # [2m] augmented heads
    dst: Tensor  # [2m] augmented tails
    question_of: Tensor  # [2m]
    z: Tensor  # [2m, H]
    zq: Tensor  # [B, H]
    first: Tensor  # [2m] question-triple logits <z_q, z_v>


class GCNEncoder(nn.Module):
    """Eq. 3: h' = sigma(sum_j A'_ij h_j W_agg + h_i W_self), two layers, on one line graph."""

    def __init__(self, hidden: int, layers: int, dropout: float, reverse: bool):
        super().__init__()
        self.agg = nn.ModuleList(nn.Linear(hidden, hidden, bias=False) for _ in range(layers))
        self.self_ = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(layers))
        self.dropout, self.reverse = dropout, reverse

    def forward(self, h: Tensor, src: Tensor, dst: Tensor, n: int) -> Tensor:
        for i, (agg, own) in enumerate(zip(self.agg, self.self_)):
            h = agg(gcn_aggregate(h, src, dst, n, reverse=self.reverse)) + own(h)
            if i < len(self.agg) - 1:
                h = F.dropout(torch.relu(h), self.dropout, self.training)
        return h


class RAPL(Retriever):
    name = "rapl"
    Config = RAPLConfig
    trainable = True
    label_kind = "triples"
    returns = "paths"
    uses_relation_targets = True
    inference_settings = ("samples", "paths_per_sample", "top_m", "temperature", "seed", "max_triples", "complete")
    description = "line-graph GCN path retriever with STOP node and look-ahead (RAPL, 2025); adaptive number of triples"

    def __init__(self, config: RAPLConfig | None = None, embedding_dim: int = 384):
        super().__init__(config, embedding_dim)
        c, d, h = self.cfg, embedding_dim, self.cfg.hidden
        self.cvt_embedding = nn.Parameter(torch.randn(1, d) * d**-0.5)
        self.w_src = nn.Linear(d, h, bias=False)
        self.w_dst = nn.Linear(d, h, bias=False)
        self.w_rel = nn.Linear(d, h, bias=False)
        self.w_q_in = nn.Linear(d, h, bias=False)
        self.w_flags = nn.Linear(N_FLAGS, h)
        self.forward_encoder = GCNEncoder(h, 2, c.dropout, reverse=False)
        self.backward_encoder = GCNEncoder(h, 2, c.dropout, reverse=True)  # look-ahead (Eq. 10)
        self.question = nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, h))
        self.prefix = nn.Linear(h, h)
        self.stop = nn.Sequential(nn.Linear(2 * h, h), nn.ReLU(), nn.Linear(h, h))  # g_phi (Eq. 5)

    # ---- encoding ------------------------------------------------------------------------------
    def encode(self, x: SubgraphTensors) -> Encoded:
        m, n = x.num_triples, x.num_nodes
        src, dst = augment(x.head, x.tail)
        ent = x.entity_embedding()
        ent = torch.where(x.cvt_mask.unsqueeze(1), self.cvt_embedding, ent)
        q = x.question
        tq = x.triple_question()
        question_of = torch.cat([tq, tq])
        rels, rel_of = torch.unique(x.relation, return_inverse=True)
        rel_text = x.tables.relation.index_select(0, rels)
        # cosine features (table rows are unit norm; CVT rows zero, so their cosine is 0)
        node_q = x.entity_embedding()
        qn = q.index_select(0, x.node_batch)
        cos_node = (node_q * qn).sum(1)
        cos_rel = (rel_text.index_select(0, rel_of) * q.index_select(0, tq)).sum(1)
        topic = x.topic_mask.float()
        cvt = x.cvt_mask.float()
        inv = torch.cat([torch.zeros(m, device=q.device), torch.ones(m, device=q.device)])
        flags = torch.stack(
            [
                cos_node[src],
                torch.cat([cos_rel, cos_rel]),
                cos_node[dst],
                topic[src],
                topic[dst],
                cvt[src],
                cvt[dst],
                inv,
            ],
            dim=1,
        )
        rel_proj = self.w_rel(rel_text).index_select(0, rel_of)
        h0 = (
            self.w_src(ent).index_select(0, src)
            + self.w_dst(ent).index_select(0, dst)
            + torch.cat([rel_proj, rel_proj])
            + self.w_q_in(q).index_select(0, question_of)
            + self.w_flags(flags)
        )
        h0 = F.dropout(torch.relu(h0), self.cfg.dropout, self.training)
        z = 0.5 * (self.forward_encoder(h0, src, dst, n) + self.backward_encoder(h0, src, dst, n))
        zq = self.question(q)
        first = (z * zq.index_select(0, question_of)).sum(1)
        return Encoded(x, src, dst, question_of, z, zq, first)

    def forward(self, x: SubgraphTensors):
        """Training: the `Encoded` graph for `loss`; inference: one score per triple (see module doc)."""
        if self.training:
            return self.encode(x)
        return self.paths(x)[0]

    def _query(self, zq: Tensor, agg: Tensor) -> tuple[Tensor, Tensor]:
        """(step query, STOP embedding) after a prefix whose node embeddings sum to `agg`."""
        return zq + self.prefix(agg), self.stop(torch.cat([agg, zq], dim=1))

    # ---- training ------------------------------------------------------------------------------
    def loss(self, enc: Encoded, targets: Targets) -> Tensor:  # type: ignore[override]  # forward returns Encoded
        """L_q (Eq. 9) + L_path (Eq. 6 with STOP), one target path drawn per step."""
        x = enc.x
        paths = targets.paths
        if paths is None:
            paths = target_paths(
                x.head.cpu().numpy(),
                x.tail.cpu().numpy(),
                np.flatnonzero(x.topic_mask.cpu().numpy()),
                np.flatnonzero(targets.entities.cpu().numpy() > 0),
                targets.triples.cpu().numpy() > 0,
                self.cfg.max_len,
                self.cfg.max_targets,
            )
            targets.paths = paths
        if not paths or not x.topic_mask.index_select(0, enc.src).any():
            return enc.first.sum() * 0.0
        lq, _, _ = self.question_triple_loss(enc, paths, targets)
        path = paths[int(torch.randint(len(paths), (1,)))]
        return lq + self._path_loss(enc, path)

    def question_triple_loss(
        self, enc: Encoded, paths: list[list[int]], targets: Targets
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Eq. 9 over V_cand = the augmented triples leaving a topic (Eq. 7), with (V_pos, V_neg) as
        masks [2m]: V_pos = the target paths' first triples (v_q(0)) united with Eq. 8's augmentation
        (candidates whose relation, read in their direction, is in R_*), V_neg = V_cand minus V_pos."""
        cand = enc.x.topic_mask.index_select(0, enc.src)
        pos = torch.zeros_like(cand)
        pos[torch.tensor(sorted({p[0] for p in paths}), device=cand.device)] = True
        if targets.relation_targets is not None:
            rt = targets.relation_targets.to(cand.device).bool()
            pos = pos | (torch.cat([rt[:, 0], rt[:, 1]]) & cand)
        neg = cand & ~pos
        lq = -F.logsigmoid(enc.first[pos]).mean()
        if neg.any():
            lq = lq - F.logsigmoid(-enc.first[neg]).mean()
        return lq, pos, neg

    def _path_loss(self, enc: Encoded, path: list[int]) -> Tensor:
        m2 = enc.src.shape[0]
        rowptr, order = successors(enc.src, enc.dst, enc.x.num_nodes)
        zq = enc.zq[enc.question_of[path[0]]].unsqueeze(0)
        agg = enc.z[path[0]].unsqueeze(0)
        losses = []
        for i in range(1, len(path) + 1):
            prev = path[i - 1]
            v = int(enc.dst[prev])
            cands = order[rowptr[v] : rowptr[v + 1]]
            cands = cands[cands != _reverse(prev, m2)]
            u, stop = self._query(zq, agg)
            logits = torch.cat([enc.z.index_select(0, cands) @ u[0], (u * stop).sum(1)])
            target = len(cands) if i == len(path) else int((cands == path[i]).nonzero()[0, 0])
            losses.append(F.cross_entropy(logits.unsqueeze(0), torch.tensor([target], device=logits.device)))
            if i < len(path):
                agg = agg + enc.z[path[i]].unsqueeze(0)
        return torch.stack(losses).mean()

    # ---- inference -----------------------------------------------------------------------------
    @torch.no_grad()
    def paths(self, x: SubgraphTensors) -> tuple[Tensor, list[list[LinePath]]]:
        """Per-triple scores [m] and, per question, the deduplicated top-M sampled paths."""
        if self.training:
            self.eval()
        c = self.cfg
        enc = self.encode(x)
        m, dev = x.num_triples, enc.z.device
        off = x.triple_offsets or [0, m]
        base = torch.sigmoid(torch.maximum(enc.first[:m], enc.first[m:]))
        if m == 0:
            return base, [[] for _ in range(x.num_questions)]
        gen = torch.Generator(device=dev).manual_seed(c.seed)
        starts, start_lp = [], []
        cand_mask = x.topic_mask.index_select(0, enc.src)
        for b in range(x.num_questions):
            cands = torch.nonzero(cand_mask & (enc.question_of == b)).squeeze(1)
            if cands.numel() == 0:
                continue
            lp = torch.log_softmax(enc.first[cands] / c.temperature, 0)
            pick = torch.multinomial(lp.exp(), c.samples, replacement=True, generator=gen).repeat_interleave(
                c.paths_per_sample
            )
            starts.append(cands[pick])
            start_lp.append(lp[pick])
        if not starts:
            return base, [[] for _ in range(x.num_questions)]
        seq, logp = self._walk(enc, torch.cat(starts), torch.cat(start_lp), gen)
        return self._collect(enc, seq, logp, base, off)

    def _walk(self, enc: Encoded, start: Tensor, logp: Tensor, gen: torch.Generator) -> tuple[Tensor, Tensor]:
        """Step-wise extension of all walks at once: [W, max_len] augmented triples (-1 padded).

        The K x 5 walks share few distinct prefixes (a trained model samples its best paths over
        and over), so each step scores the successors once per distinct prefix and every walk then
        draws its next triple (or STOP) from its prefix's softmax by inverse-CDF sampling.
        """
        m2 = enc.src.shape[0]
        dev = start.device
        rowptr, order = successors(enc.src, enc.dst, enc.x.num_nodes)
        seq = torch.full((start.shape[0], self.cfg.max_len), -1, dtype=torch.long, device=dev)
        seq[:, 0] = start
        active = torch.arange(start.shape[0], device=dev)
        for step in range(1, self.cfg.max_len):
            if active.numel() == 0:
                break
            states, state_of = torch.unique(seq[active, :step], dim=0, return_inverse=True)
            n_states = states.shape[0]
            c = states[:, step - 1]
            v = enc.dst[c]
            count = rowptr[v + 1] - rowptr[v]
            state_e = torch.repeat_interleave(torch.arange(n_states, device=dev), count)
            within = torch.arange(state_e.numel(), device=dev) - torch.repeat_interleave(
                torch.cumsum(count, 0) - count, count
            )
            cand = order[torch.repeat_interleave(rowptr[v], count) + within]
            keep = cand != _reverse_t(c, m2)[state_e]
            cand, state_e = cand[keep], state_e[keep]
            zq = enc.zq.index_select(0, enc.question_of.index_select(0, states[:, 0]))
            u, stop = self._query(zq, enc.z[states].sum(1))
            logits = torch.cat([(u.index_select(0, state_e) * enc.z.index_select(0, cand)).sum(1), (u * stop).sum(1)])
            owner = torch.cat([state_e, torch.arange(n_states, device=dev)])
            choice = torch.cat([cand, torch.full((n_states,), -1, dtype=torch.long, device=dev)])
            perm = torch.argsort(owner, stable=True)  # candidates grouped by state, STOP last
            owner, choice, logits = owner[perm], choice[perm], logits[perm] / self.cfg.temperature
            top = torch.full((n_states,), -torch.inf, device=dev).scatter_reduce(0, owner, logits, "amax")
            lse = top + torch.log(
                torch.zeros(n_states, device=dev).index_add_(0, owner, torch.exp(logits - top[owner]))
            )
            logprob = logits - lse[owner]
            # inverse CDF per state: key = state + cumulative probability within the state
            cum = torch.cumsum(logprob.double().exp(), 0)
            ends = torch.cumsum(torch.bincount(owner, minlength=n_states), 0)
            before = torch.cat([torch.zeros(1, dtype=cum.dtype, device=dev), cum[ends[:-1] - 1]])
            key = owner.double() + (cum - before[owner])
            draw = torch.rand(active.numel(), generator=gen, device=dev, dtype=torch.float64)
            pick = torch.searchsorted(key, state_of.double() + draw)
            pick = torch.minimum(pick, ends[state_of] - 1)  # rounding at the top of a state's range
            chosen = choice[pick]
            logp[active] += logprob[pick]
            go = chosen >= 0
            active, chosen = active[go], chosen[go]
            seq[active, step] = chosen
        return seq, logp

    def _collect(self, enc: Encoded, seq: Tensor, logp: Tensor, base: Tensor, off: list[int]):
        m = enc.x.num_triples
        question = enc.question_of.index_select(0, seq[:, 0]).cpu().numpy()
        seq_np, lp_np = seq.cpu().numpy(), logp.cpu().numpy()
        per_question: list[list[LinePath]] = [[] for _ in range(len(off) - 1)]
        passed: dict[int, float] = {}  # triple -> its score above PATH_FLOOR
        for b in range(len(off) - 1):
            rows = np.flatnonzero(question == b)
            rows = rows[np.argsort(-lp_np[rows], kind="stable")]
            walks: list[tuple[tuple[int, ...], float]] = []
            seen: set[tuple[int, ...]] = set()
            for r in rows:
                walk = tuple(int(a) for a in seq_np[r] if a >= 0)
                if walk in seen:
                    continue
                if len(seen) == self.cfg.top_m:
                    break
                seen.add(walk)
                walks.append((walk, float(np.exp(lp_np[r]))))
            kept, siblings = self._within_budget(enc, base, walks, off[b], off[b + 1])
            for walk, prob in kept:
                per_question[b].append(
                    LinePath(prob, tuple(a % m - off[b] for a in walk), tuple(1 if a < m else -1 for a in walk))
                )
                for a in walk:
                    # Path triples in [1.5, 2]: above every completed sibling, monotone in the path's
                    # probability without vanishing below float32's resolution next to 1.
                    passed[a % m] = max(passed.get(a % m, 0.0), 0.5 + 0.5 * prob)
            for t, score in siblings:
                passed.setdefault(t, score)
        scores = base.clone()
        if passed:
            idx = torch.tensor(list(passed), device=base.device)
            scores[idx] = PATH_FLOOR + torch.tensor(list(passed.values()), device=base.device, dtype=base.dtype)
        return scores, per_question

    def _within_budget(self, enc: Encoded, base: Tensor, walks: list[tuple[tuple[int, ...], float]], lo: int, hi: int):
        """The walks and completed siblings passed within `max_triples`: the most probable walks,
        whole walks only (one that does not fit is skipped and a shorter, less probable one may still
        fit). With `complete`, the answers of the most probable walk come right after it (the
        siblings of its last step: every film a writer wrote, not the first ones sampled), then the
        other walks, then the rest of the siblings."""
        m = enc.x.num_triples
        budget = self.cfg.max_triples if self.cfg.max_triples > 0 else None
        kept, siblings = [], []
        taken: set[int] = set()
        for walk, prob in walks:
            new = {a % m for a in walk} - taken
            if budget is not None and len(taken) + len(new) > budget:
                continue
            kept.append((walk, prob))
            taken |= new
            if (
                self.cfg.complete and budget is not None and len(kept) == 1
            ):  # without a budget the order changes nothing
                siblings += self._siblings(enc, base, [(walk[-1:], prob)], taken, lo, hi)
        if self.cfg.complete:
            siblings += self._siblings(enc, base, kept, taken, lo, hi)
        return kept, siblings

    def _siblings(self, enc: Encoded, base: Tensor, kept, taken: set[int], lo: int, hi: int) -> list[tuple[int, float]]:
        """Relation-pattern completion: a kept path read as a rule ("from this entity, follow this
        relation this way") also reaches the parallel triples that share a step's entity, relation
        and direction (a title node shared by several films reaches every film's director).
        Siblings of the most probable path first, its last step first (where the answers are), then
        by the model's own triple score; within `max_triples` with the triples already `taken`."""
        if not kept:
            return []
        m = enc.x.num_triples
        budget = self.cfg.max_triples if self.cfg.max_triples > 0 else None
        rows = np.concatenate([np.arange(lo, hi), np.arange(m + lo, m + hi)])
        src = enc.src[rows].cpu().numpy()
        rel = enc.x.relation[rows % m].cpu().numpy()
        forward = rows < m
        score = base[rows % m].cpu().numpy()
        out: list[tuple[int, float]] = []
        count = len(taken)
        for walk, _ in kept:
            for a in reversed(walk):
                if budget is not None and count >= budget:
                    return out
                i = a - lo if a < m else (hi - lo) + (a - m - lo)  # a's row in `rows`
                same = np.flatnonzero((src == src[i]) & (rel == rel[i]) & (forward == forward[i]))
                for j in same[np.argsort(-score[same], kind="stable")]:
                    t = int(rows[j] % m)
                    if t in taken:
                        continue
                    if budget is not None and count >= budget:
                        return out
                    taken.add(t)
                    count += 1
                    out.append((t, 0.25 + 0.25 * float(score[j])))  # in [1.25, 1.5]: below path triples
        return out


def _reverse(a: int, m2: int) -> int:
    half = m2 // 2
    return a + half if a < half else a - half


def _reverse_t(a: Tensor, m2: int) -> Tensor:
    half = m2 // 2
    return torch.where(a < half, a + half, a - half)


def target_paths(
    head: np.ndarray,
    tail: np.ndarray,
    topics: np.ndarray,
    answers: np.ndarray,
    labelled: np.ndarray,
    max_len: int,
    cap: int,
) -> list[list[int]]:
    """Topic -> answer paths over the labelled triples only, in either direction, as augmented
    triple indices (i forward, m + i inverse); shortest first per (topic, answer), at most `cap`."""
    m = len(head)
    idx = np.flatnonzero(labelled)
    if len(idx) == 0 or len(answers) == 0 or len(topics) == 0:
        return []
    out_edges: dict[int, list[tuple[int, int]]] = {}
    for i in idx.tolist():
        out_edges.setdefault(int(head[i]), []).append((i, int(tail[i])))
        out_edges.setdefault(int(tail[i]), []).append((i + m, int(head[i])))
    answer_set = set(answers.tolist())
    found: list[list[int]] = []
    for t in sorted(set(topics.tolist())):
        dist = {t: 0}
        frontier = deque([t])
        while frontier:
            u = frontier.popleft()
            if dist[u] >= max_len:
                continue
            for _, w in out_edges.get(u, ()):
                if w not in dist:
                    dist[w] = dist[u] + 1
                    frontier.append(w)

        def walk(u: int, prefix: list[int], goal: int) -> None:
            if len(found) >= 4 * cap:
                return
            if u == goal:
                found.append(list(prefix))
                return
            for a, w in out_edges.get(u, ()):
                if dist.get(w) == dist[u] + 1 and dist[w] <= dist[goal]:
                    prefix.append(a)
                    walk(w, prefix, goal)
                    prefix.pop()

        for goal in sorted(answer_set - {t}):
            if goal in dist:
                walk(t, [], goal)
    unique = sorted({tuple(p) for p in found}, key=lambda p: (len(p), p))
    return [list(p) for p in unique[:cap]]
