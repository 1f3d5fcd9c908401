"""RRP's structural reasoner (the RRP paper, Eqs. 3-8): instruction-guided propagation of an entity
distribution over a subgraph, trained with bidirectional distribution learning.

Where the paper is silent, NSM (He et al., WSDM 2021) fills in, and the choices are recorded here:
- The question is read as the planner reads it (no GloVe here): the sentence embedding of the
  question with the topic names removed plus a bag of hashed word uni-/bigrams, into a tanh layer
  (v_q); a GRU decoder fed v_q at every step emits the n instructions ω^1..ω^n.
- Relation vectors v_r are the graph's relation-text embeddings through a learned projection; every
  triple is a message edge in both directions (a learned direction vector is added to v_r for the
  inverse), and each entity has a self-loop edge so a distribution that has arrived can stay
  (questions with fewer hops than n steps).
- Eq. 3 averages (mean, not sum: subgraphs of very different density) W1 v_r over the edges into e,
  σ = ReLU as in NSM. Eq. 4 σ = ReLU. Eq. 6 FFN = one linear layer + ReLU. Eq. 7 W = a linear score.
- P^0 is uniform over the topic entities (forward) or the answers (backward). The backward pass uses
  the same weights, the message edges reversed and the instructions in reverse order (NSM's teacher).
- Eq. 8: KL(P* ‖ P) at the last step only (P_f* uniform over the answers, P_b* uniform over the
  topics) plus Σ_{i=1}^{n-1} JS(P_f^i, P_b^{n-i}); no weight on the JS terms.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import scatter

FORWARD, INVERSE, SELF = 0, 1, 2


@dataclass(frozen=True)
class StructuralConfig:
    hidden: int = 64
    word_dim: int = 64
    buckets: int = 1 << 16
    steps: int = 3
    dropout: float = 0.1

    def to_json(self) -> dict:
        return asdict(self)


def message_edges(
    head: torch.Tensor, relation: torch.Tensor, tail: torch.Tensor, num_nodes: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(edge_index [2, 2m + n], relation [2m + n], kind [2m + n]) for the propagation: each triple
    head -> tail (FORWARD) and tail -> head (INVERSE), then one self-loop per node (SELF, relation 0)."""
    nodes = torch.arange(num_nodes, device=head.device)
    src = torch.cat([head, tail, nodes])
    dst = torch.cat([tail, head, nodes])
    rel = torch.cat([relation, relation, torch.zeros_like(nodes)])
    kind = torch.cat([torch.full_like(head, FORWARD), torch.full_like(head, INVERSE), torch.full_like(nodes, SELF)])
    return torch.stack([src, dst]), rel, kind


def graph_log_softmax(score: torch.Tensor, batch: torch.Tensor, num_graphs: int) -> torch.Tensor:
    """log of a softmax over the nodes of each graph (Eq. 7), numerically stable."""
    top = scatter(score, batch, 0, dim_size=num_graphs, reduce="max")
    shifted = score - top[batch]
    total = scatter(shifted.exp(), batch, 0, dim_size=num_graphs, reduce="sum")
    return shifted - total.log()[batch]


def kl(p_log: torch.Tensor, q_log: torch.Tensor, batch: torch.Tensor, num_graphs: int) -> torch.Tensor:
    """KL(P ‖ Q) per graph from log-probabilities (0 log 0 = 0)."""
    p = p_log.exp()
    terms = torch.where(p > 0, p * (p_log - q_log), torch.zeros_like(p))
    return scatter(terms, batch, 0, dim_size=num_graphs, reduce="sum")


def js(p_log: torch.Tensor, q_log: torch.Tensor, batch: torch.Tensor, num_graphs: int) -> torch.Tensor:
    """Jensen-Shannon divergence per graph: ½ KL(P ‖ M) + ½ KL(Q ‖ M), M = (P + Q) / 2."""
    m_log = torch.logaddexp(p_log, q_log) - torch.log(torch.tensor(2.0, device=p_log.device))
    return 0.5 * kl(p_log, m_log, batch, num_graphs) + 0.5 * kl(q_log, m_log, batch, num_graphs)


def target_log(mask: torch.Tensor, batch: torch.Tensor, num_graphs: int) -> torch.Tensor:
    """log of the uniform distribution over the masked nodes of each graph (-inf elsewhere)."""
    count = scatter(mask.float(), batch, 0, dim_size=num_graphs, reduce="sum").clamp(min=1)
    return torch.where(mask, -count.log()[batch], torch.full_like(count[batch], float("-inf")))


def bidirectional_loss(
    forward: list[torch.Tensor],
    backward: list[torch.Tensor],
    answers: torch.Tensor,
    topics: torch.Tensor,
    batch: torch.Tensor,
    num_graphs: int,
) -> torch.Tensor:
    """Eq. 8 per graph. `forward[i]`, `backward[i]`: log P^i over the nodes (i = 0..n, P^0 the start);
    `answers` / `topics`: boolean node masks defining P_f* and P_b*."""
    n = len(forward) - 1
    loss = kl(target_log(answers, batch, num_graphs), forward[n], batch, num_graphs)
    loss = loss + kl(target_log(topics, batch, num_graphs), backward[n], batch, num_graphs)
    for i in range(1, n):
        loss = loss + js(forward[i], backward[n - i], batch, num_graphs)
    return loss


class _Aggregate(MessagePassing):
    """Eq. 5: ṽ_e = Σ over the message edges e' -> e of P_{e'} · m_{e',e}."""

    def __init__(self):
        super().__init__(aggr="add")

    def forward(self, prob: torch.Tensor, match: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return self.propagate(edge_index, prob=prob[:, None], match=match)

    def message(self, prob_j: torch.Tensor, match: torch.Tensor) -> torch.Tensor:
        return prob_j * match


@dataclass
class Propagation:
    """One pass: log P^0..P^n per node, the instructions and the last entity states."""

    log_probs: list[torch.Tensor]
    instructions: torch.Tensor  # [n, B, h]
    states: torch.Tensor  # [N, h], v^n
    question: torch.Tensor  # [B, h], v_q


class StructuralReasoner(nn.Module):
    name = "rrp-structural"
    relation_emb: torch.Tensor  # a buffer

    def __init__(self, config: StructuralConfig, relation_emb: torch.Tensor):
        super().__init__()
        self.cfg = config
        dim, h = relation_emb.shape[1], config.hidden
        self.register_buffer("relation_emb", relation_emb.float().clone())
        self.words = nn.EmbeddingBag(config.buckets, config.word_dim, mode="mean")
        self.question = nn.Sequential(nn.Linear(dim + config.word_dim, h), nn.Tanh())
        self.decoder = nn.GRUCell(h, h)
        self.rel_proj = nn.Linear(dim, h)
        self.kind_emb = nn.Embedding(3, h)  # forward / inverse / self-loop
        self.w1 = nn.Linear(h, h)  # Eq. 3
        self.w2 = nn.Linear(h, h, bias=False)  # Eq. 4
        self.ffn = nn.Linear(2 * h, h)  # Eq. 6
        self.score = nn.Linear(h, 1)  # Eq. 7
        self.aggregate = _Aggregate()
        self.drop = nn.Dropout(config.dropout)

    def config(self) -> dict:
        return self.cfg.to_json()

    def edge_vectors(self, rel: torch.Tensor, kind: torch.Tensor) -> torch.Tensor:
        """v_r per message edge: the projected relation text (none for self-loops) + its kind."""
        vec = self.rel_proj(self.relation_emb[rel])
        return torch.where((kind == SELF)[:, None], torch.zeros_like(vec), vec) + self.kind_emb(kind)

    def instructions(
        self, q_emb: torch.Tensor, words: torch.Tensor, offsets: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(v_q [B, h], ω [n, B, h]): the recurrent decoder run for n steps on v_q."""
        vq = self.question(torch.cat([q_emb, self.words(words, offsets)], dim=-1))
        state, out = vq, []
        for _ in range(self.cfg.steps):
            state = self.decoder(self.drop(vq), state)
            out.append(state)
        return vq, torch.stack(out)

    def propagate(
        self,
        start: torch.Tensor,
        edge_index: torch.Tensor,
        rel: torch.Tensor,
        kind: torch.Tensor,
        batch: torch.Tensor,
        num_graphs: int,
        instructions: torch.Tensor,
        question: torch.Tensor,
    ) -> Propagation:
        """Eqs. 3-7 for n steps from the start mask; `edge_index` rows: source, target."""
        num_nodes = batch.shape[0]
        edge_vec = self.edge_vectors(rel, kind)
        init = scatter(self.w1(edge_vec), edge_index[1], 0, dim_size=num_nodes, reduce="mean")
        states = torch.relu(init)  # Eq. 3
        log_p = target_log(start, batch, num_graphs)
        logs = [log_p]
        edge_graph = batch[edge_index[1]]
        projected = self.w2(edge_vec)
        for step in range(instructions.shape[0]):
            match = torch.relu(instructions[step][edge_graph] * projected)  # Eq. 4
            agg = self.aggregate(log_p.exp(), match, edge_index)  # Eq. 5
            states = torch.relu(self.ffn(self.drop(torch.cat([states, agg], dim=-1))))  # Eq. 6
            log_p = graph_log_softmax(self.score(states)[:, 0], batch, num_graphs)  # Eq. 7
            logs.append(log_p)
        return Propagation(logs, instructions, states, question)

    def forward(self, batch) -> Propagation:
        """The forward pass (topics -> answers) of a PyG batch with fields edge_index (head, tail
        rows), edge_rel, topic (bool), q_emb [B, d], words, word_offsets."""
        vq, omega = self.instructions(batch.q_emb, batch.words, batch.word_offsets)
        edge_index, rel, kind = message_edges(batch.edge_index[0], batch.edge_rel, batch.edge_index[1], batch.num_nodes)
        return self.propagate(batch.topic, edge_index, rel, kind, batch.batch, batch.num_graphs, omega, vq)

    def loss(self, batch) -> torch.Tensor:
        """Eq. 8 averaged over the graphs of the batch (forward and backward pass)."""
        vq, omega = self.instructions(batch.q_emb, batch.words, batch.word_offsets)
        edge_index, rel, kind = message_edges(batch.edge_index[0], batch.edge_rel, batch.edge_index[1], batch.num_nodes)
        fwd = self.propagate(batch.topic, edge_index, rel, kind, batch.batch, batch.num_graphs, omega, vq)
        bwd = self.propagate(
            batch.answer, edge_index.flip(0), rel, kind, batch.batch, batch.num_graphs, omega.flip(0), vq
        )
        return bidirectional_loss(
            fwd.log_probs, bwd.log_probs, batch.answer, batch.topic, batch.batch, batch.num_graphs
        ).mean()


def trace_paths(
    prop: Propagation, head: torch.Tensor, relation: torch.Tensor, tail: torch.Tensor, ends: list[int]
) -> list[tuple[list[int], list[int], list[int]]]:
    """Reasoning paths traced back from the final distribution of one graph (the paper is silent on it):
    from each end entity, step i goes back along the message edge whose source had the most
    probability at step i-1 (a self-loop means the path was already there: no relation added).
    Returns (nodes from the start, relation ids, directions +1/-1) per end entity."""
    num_nodes = prop.states.shape[0]
    edge_index, rel_t, kind_t = message_edges(head, relation, tail, num_nodes)
    src, dst = edge_index[0].tolist(), edge_index[1].tolist()
    rel, kind = rel_t.tolist(), kind_t.tolist()
    into: dict[int, list[int]] = {}
    for e, d in enumerate(dst):
        into.setdefault(d, []).append(e)
    probs = [lp.exp().tolist() for lp in prop.log_probs]
    out = []
    for end in ends:
        nodes: list[int] = [end]
        rels: list[int] = []
        dirs: list[int] = []
        for step in range(len(probs) - 1, 0, -1):
            here = nodes[0]
            best = max(into.get(here, []), key=lambda e: (probs[step - 1][src[e]], kind[e] == SELF), default=None)
            if best is None or kind[best] == SELF:
                continue
            nodes.insert(0, src[best])
            rels.insert(0, rel[best])
            dirs.insert(0, 1 if kind[best] == FORWARD else -1)
        out.append((nodes, rels, dirs))
    return out
