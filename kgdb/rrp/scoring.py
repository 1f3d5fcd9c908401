"""The RRP path ranker's torch-free half: its config, the names of its dense features, and the
portable ranker's scoring in numpy (`NumpyPathRanker`), so that plain `kgdb ask` answers with the
ranker shipped with kgdb without importing torch (most of a cold start). Training, and a graph's own
ranker (which reads its planner's log P(γ|q) and learned relation vectors), use the torch module
`kgdb.rrp.models.path_ranker.PathRanker`; a test checks that both score alike."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from kgdb.bounds import bounded

PLANNER_FEATURES = ("planner_logp", "planner_logp_rel")
PORTABLE_FEATURES = (
    "cos_max",
    "cos_mean",
    "cos_last",
    "cos_max_rel",
    "hops_1",
    "hops_2",
    "hops_3",
    "log_answers",
    "one_answer",
    "cvt_share",
    "topic_share",
    "log_reached",
)
DENSE_FEATURES = PLANNER_FEATURES + PORTABLE_FEATURES


@dataclass(frozen=True)
class RankerConfig:
    hidden: int = bounded(128, ge=1)
    word_dim: int = bounded(64, ge=1)
    buckets: int = bounded(1 << 16, ge=1)
    max_hops: int = bounded(3, ge=1)
    dropout: float = bounded(0.2, ge=0, lt=1)
    dense: int = len(DENSE_FEATURES)
    # No parameter tied to one graph (no learned vector per relation, no planner features, the
    # relation table not stored): the model reads any graph's relation text table.
    portable: bool = False

    @classmethod
    def for_any_graph(cls, **kw) -> "RankerConfig":
        return cls(dense=len(PORTABLE_FEATURES), portable=True, **kw)

    def to_json(self) -> dict:
        return asdict(self)


class NumpyPathRanker:
    """`PathRanker.forward` of a portable ranker in eval mode (dropout off), for one question, in
    float32 numpy: `weights` are its safetensors arrays (`kgdb.scoring.weights.read_arrays`),
    `relation_emb` [R, d] the connected graph's relation text table."""

    def __init__(self, config: RankerConfig, weights: dict[str, np.ndarray], relation_emb: np.ndarray):
        if not config.portable:
            raise ValueError("only a portable ranker scores in numpy (a graph's own reads its planner through torch)")
        self.cfg = config
        self.relation_emb = np.asarray(relation_emb, np.float32)
        h, d, words = config.hidden, self.relation_emb.shape[1], config.word_dim
        shapes = {
            "words.weight": (config.buckets, words),
            "question.weight": (h, d + words),
            "question.bias": (h,),
            "rel_proj.weight": (h, d),
            "rel_proj.bias": (h,),
            "direction.weight": (2, h),
            "hop.weight": (config.max_hops, h),
            "mlp.0.weight": (h, 2 * h + config.dense),
            "mlp.0.bias": (h,),
            "mlp.3.weight": (1, h),
            "mlp.3.bias": (1,),
        }
        # what torch's strict load_state_dict refuses, refused alike (the loader names the checkpoint)
        if set(weights) != set(shapes):
            raise KeyError(
                f"weights {sorted(set(shapes) - set(weights))} missing, {sorted(set(weights) - set(shapes))} unexpected"
            )
        wrong = [
            f"{k} {tuple(weights[k].shape)} (want {want})"
            for k, want in shapes.items()
            if tuple(weights[k].shape) != want
        ]
        if wrong:
            raise RuntimeError(f"size mismatch: {', '.join(wrong)}")
        self.w = {k: np.asarray(v, np.float32) for k, v in weights.items()}

    def eval(self) -> "NumpyPathRanker":
        return self  # scoring only: nothing to switch off

    def scores(self, q_emb: np.ndarray, words: list[int], tokens: np.ndarray, dense: np.ndarray) -> np.ndarray:
        """Scores [N] of one question's N candidates: `tokens` [N, H] (0-padded), `dense` [N, F]."""
        w, n = self.w, tokens.shape[0]
        if tokens.ndim != 2 or tokens.shape[1] > self.cfg.max_hops or dense.shape != (n, self.cfg.dense):
            raise ValueError(
                f"tokens {tokens.shape} / dense {dense.shape} do not fit a ranker of {self.cfg.max_hops} hops and "
                f"{self.cfg.dense} dense features"
            )
        if n and int(tokens.max()) >= 1 + 2 * len(self.relation_emb):
            raise ValueError(
                f"token {int(tokens.max())} is outside the relation vocabulary ({1 + 2 * len(self.relation_emb)} tokens)"
            )
        bag = (
            w["words.weight"][np.asarray(words, np.int64)].mean(axis=0)
            if len(words)
            else np.zeros(self.cfg.word_dim, np.float32)
        )
        q = np.tanh(
            np.concatenate([np.asarray(q_emb, np.float32), bag]) @ w["question.weight"].T + w["question.bias"]
        )  # [h]
        live = tokens > 0
        step = np.maximum(tokens - 1, 0)
        rel, direction = step // 2, step % 2
        used, where = np.unique(rel, return_inverse=True)  # each relation projected once
        proj = (self.relation_emb[used] @ w["rel_proj.weight"].T + w["rel_proj.bias"])[where.reshape(rel.shape)]
        hop_vec = (
            np.tanh(proj + w["direction.weight"][direction] + w["hop.weight"][: tokens.shape[1]][None])
            * live[..., None]
        )
        count = live.sum(axis=1)
        mean = hop_vec.sum(axis=1) / np.maximum(count, 1)[:, None].astype(np.float32)
        last = hop_vec[np.arange(n), np.maximum(count - 1, 0)]
        hidden = np.maximum(
            np.concatenate([q * mean, q * last, np.asarray(dense, np.float32)], axis=1) @ w["mlp.0.weight"].T
            + w["mlp.0.bias"],
            0,
        )
        return (hidden @ w["mlp.3.weight"].T + w["mlp.3.bias"])[:, 0]
