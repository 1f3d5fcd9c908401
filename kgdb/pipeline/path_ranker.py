"""RRP's path ranker on a graph: candidates enumerated in Cypher (`kgdb.cypher.path_candidates`),
their features (the trained planner's log P(γ|q), question-relation cosines, reach), training and
the checkpoint, and `RankedPathPlanner`, a planner (`plan_encoded`) that `RelationPathRetriever` uses
in place of the GRU planner's beam when the checkpoint for the graph is a ranker
(`relation_path_retriever` picks it; MetaQA, with no ranker trained, keeps the beam planner).

The ranker's checkpoint names the planner checkpoint whose probabilities it reads and stores the
rethinking settings (mode, λ1, θ, how many top paths are grounded) chosen with it on val.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.errors import InputError, KgdbError
from kgdb.models.checkpoints import Checkpoint, NoCheckpointError, checkpoint_for_graph, find_checkpoint

RANKER = "rrp-ranker"
MAX_HOPS, CVT_HOPS, CAP = 2, 3, 200  # 1-2 hop paths, 3 hops through a CVT; frontier entities per hop, as grounding


def answer_ends(c, topics: set[str]) -> set[str]:
    """The entities a candidate answers with: its ends that are neither topics nor CVT nodes."""
    return c.ends - topics - c.cvt


def candidate_features(planner, text: str, q_emb: np.ndarray, topics: list[str], candidates) -> tuple[list, np.ndarray, np.ndarray]:
    """(answer-bearing candidates, tokens [N, H], dense [N, F] in `DENSE_FEATURES` order) of one
    question; `planner` is the `TrainedPathPlanner` whose log P(γ|q) and relation table are read."""
    from kgdb.models.planner import pack_questions, text_features, token_of

    index, model = planner.relation_index, planner.model
    tset = set(topics)
    kept = [c for c in candidates if answer_ends(c, tset) and len(c.steps) <= model.cfg.max_hops and all(r in index for r, _ in c.steps)]
    width = max((len(c.steps) for c in kept), default=1)
    tokens = np.zeros((len(kept), width), np.int64)
    for i, c in enumerate(kept):
        tokens[i, : len(c.steps)] = [token_of(index[r], d) for r, d in c.steps]
    if not kept:
        return kept, tokens, np.zeros((0, _dense_width()), np.float32)
    with torch.no_grad():
        stop = np.concatenate([tokens, np.zeros((len(kept), 1), np.int64)], axis=1)
        stop[stop == 0] = -1
        stop[np.arange(len(kept)), [len(c.steps) for c in kept]] = 0  # STOP after the last step, padding after it
        q = torch.from_numpy(np.asarray(q_emb, np.float32))[None].expand(len(kept), -1)
        words, offsets = pack_questions([text_features(text, model.cfg.buckets)] * len(kept))
        logp = model.log_prob(q, words, offsets, torch.from_numpy(stop)).clamp(min=-50.0).numpy()
        rel = torch.nn.functional.normalize(model.relation_emb, dim=-1).numpy()
    qn = np.asarray(q_emb, np.float32) / (np.linalg.norm(q_emb) or 1.0)
    cos = [[float(rel[index[r]] @ qn) for r, _ in c.steps] for c in kept]
    n_ans = np.array([len(answer_ends(c, tset)) for c in kept], np.float32)
    hops = np.array([len(c.steps) for c in kept])
    cmax = np.array([max(x) for x in cos], np.float32)
    dense = np.stack([
        logp / 10, (logp - logp.max()) / 10, cmax, np.array([np.mean(x) for x in cos], np.float32), np.array([x[-1] for x in cos], np.float32),
        cmax - cmax.max(), hops == 1, hops == 2, hops == 3, np.log1p(n_ans) / 5, n_ans == 1,
        np.array([len(c.cvt) / max(len(c.ends), 1) for c in kept], np.float32),
        np.array([len(c.topics) / max(len(tset), 1) for c in kept], np.float32),
        np.log1p(np.array([c.reached for c in kept], np.float32)) / 5,
    ], axis=1).astype(np.float32)
    return kept, tokens, dense


def _dense_width() -> int:
    from kgdb.models.path_ranker import DENSE_FEATURES

    return len(DENSE_FEATURES)


def _f1(pred: set[str], gold: set[str]) -> float:
    common = len(pred & gold)
    return 2 * common / (len(pred) + len(gold)) if common else 0.0


def ranker_examples(graph: Graph, records, planner, on_progress: Callable[[int], None] = lambda n: None):
    """Examples of a split from the gold topics: every enumerated candidate with its features; the
    positives are the candidates whose answers match the gold ones best (F1; ties: the shortest),
    Eq. 1's reliable paths judged by what they reach rather than by length alone."""
    from kgdb.cypher.linking import strip_mentions
    from kgdb.cypher.path_candidates import relation_paths_around
    from kgdb.cypher.paths import entity_names
    from kgdb.models.planner import text_features
    from kgdb.training.path_ranker import RankerExample

    names = {i: n for i, (n, _) in entity_names(graph, [t for q in records for t in q.topics]).items()}
    texts = [strip_mentions(q.text, [names.get(t, t) for t in q.topics]) for q in records]
    embs = planner.embedder.encode(texts)
    out, counts = [], {"no_candidate": 0, "no_positive": 0, "candidates": 0}
    for q, text, emb in zip(records, texts, embs):
        topics = [t for t in q.topics if t in names]
        kept, tokens, dense = candidate_features(planner, text, emb, topics, relation_paths_around(graph, topics, max_hops=MAX_HOPS,
                                                                                                   cvt_hops=CVT_HOPS, cap=CAP))
        gold, tset = set(q.answers), set(topics)
        f1 = np.array([_f1(answer_ends(c, tset), gold) for c in kept], np.float32)
        hit = np.array([len(answer_ends(c, tset) & gold) / len(answer_ends(c, tset)) for c in kept], np.float32)
        positive = np.zeros(len(kept), bool)
        if len(kept) and f1.max() > 0:
            best = f1 >= f1.max() - 1e-9
            shortest = min(len(c.steps) for c, b in zip(kept, best) if b)
            positive = best & (np.array([len(c.steps) for c in kept]) == shortest)
        counts["no_candidate"] += not kept
        counts["no_positive"] += bool(kept) and not positive.any()
        counts["candidates"] += len(kept)
        out.append(RankerExample(q.id, np.asarray(emb, np.float32), text_features(text, 1 << 16), tokens, dense, positive, hit, f1))
        on_progress(1)
    return out, counts


class RankedPathPlanner:
    """`plan()` by ranking every enumerated relation path: the top `beam` with their probability
    under the ranker (softmax over the question's candidates) as the score."""

    name = RANKER

    def __init__(self, model, planner, *, beam: int = 10, checkpoint: Checkpoint | None = None, frontier_cap: int = CAP):
        self.model, self.planner, self.beam, self.checkpoint, self.frontier_cap = model.eval(), planner, beam, checkpoint, frontier_cap
        self.embedder = planner.embedder
        self._last: tuple[str, dict] = ("", {})

    def encode(self, question: str, topic_names: list[str]) -> tuple[str, np.ndarray]:
        return self.planner.encode(question, topic_names)

    def plan(self, graph: Graph, question: str, topics: list[str], topic_names: list[str]):
        return self.plan_encoded(graph, *self.encode(question, topic_names), topics)

    def scored(self, graph: Graph, text: str, q_emb: np.ndarray, topics: list[str]) -> list[tuple[object, float]]:
        """Every answer-bearing candidate path with its probability, best first."""
        from kgdb.cypher.path_candidates import relation_paths_around
        from kgdb.models.planner import text_features
        from kgdb.training.path_ranker import RankerExample, rank_scores

        kept, tokens, dense = candidate_features(self.planner, text, q_emb, topics, relation_paths_around(
            graph, topics, max_hops=MAX_HOPS, cvt_hops=CVT_HOPS, cap=self.frontier_cap))
        if not kept:
            return []
        none = np.zeros(len(kept), np.float32)
        s = rank_scores(self.model, RankerExample("", np.asarray(q_emb, np.float32), text_features(text, self.model.cfg.buckets),
                                                  tokens, dense, none.astype(bool), none, none))
        p = np.exp(s - s.max())
        p /= p.sum()
        order = np.argsort(-p, kind="stable")
        return [(kept[i], float(p[i])) for i in order]

    def plan_encoded(self, graph: Graph, text: str, q_emb: np.ndarray, topics: list[str]):
        from kgdb.pipeline.relation_paths import PlannedPath

        ranked = self.scored(graph, text, q_emb, topics)
        self._last = (text, {(tuple(r for r, _ in c.steps), tuple(d for _, d in c.steps)): p for c, p in ranked})
        return [PlannedPath(tuple(r for r, _ in c.steps), p, tuple(d for _, d in c.steps)) for c, p in ranked[: self.beam]]

    def path_probability(self, text: str, q_emb: np.ndarray, paths: list[tuple[tuple[str, ...], tuple[int, ...]]]) -> list[float]:
        """The ranker's probability of given relation paths among the last question's candidates (the
        structural reasoner's traced paths, for rethinking's S1); 0 for a path not among them."""
        seen = self._last[1] if self._last[0] == text else {}
        return [seen.get(tuple(p), 0.0) for p in paths]


def load_ranker(graph: Graph, settings: Settings, checkpoint: str | None = None, *, beam: int | None = None) -> RankedPathPlanner | None:
    """The ranker: the named checkpoint if it is one (None when it names another kind, e.g. a
    planner), else the newest ranker trained on this graph, else None."""
    from kgdb.cypher.tables import graph_fingerprint
    from kgdb.models.path_ranker import PathRanker, RankerConfig
    from kgdb.pipeline.relation_paths import load_planner, load_relation_model

    if checkpoint:
        if find_checkpoint(checkpoint, settings.checkpoints_dir).config.get("retriever") != RANKER:
            return None
    else:
        try:
            checkpoint_for_graph(settings.checkpoints_dir, RANKER, graph_fingerprint(graph)[0])
        except NoCheckpointError:
            return None
    model, ckpt = load_relation_model(graph, settings, checkpoint, RANKER, lambda cfg, rel: PathRanker(RankerConfig(**cfg), rel), "--checkpoint")
    planner = load_planner(graph, settings, ckpt.config.get("planner"))
    tuned = ckpt.config.get("rethinking") or {}
    return RankedPathPlanner(model, planner, beam=beam or int(tuned.get("beam", 10)), checkpoint=ckpt)


def train_path_ranker(
    graph: Graph,
    settings: Settings,
    questions: list[Path],
    *,
    planner: str | None = None,
    name: str | None = None,
    max_epochs: int = 40,
    patience: int = 6,
    lr: float = 2e-3,
    seed: int = 42,
    threads: int | None = None,
    on_start: Callable[[str, int], None] = lambda split, n: None,
    on_progress: Callable[[int], None] = lambda n: None,
    on_examples: Callable[[str, int, dict], None] = lambda split, n, counts: None,
    on_epoch: Callable[[object], None] = lambda log: None,
):
    """Train the ranker on the train split of every question file together, select on their val
    splits, save `<checkpoints_dir>/<name>/` (weights + config.json naming the planner read).
    Returns `(Checkpoint, RankerResult)`."""
    from kgdb.cypher.tables import graph_fingerprint
    from kgdb.data.questions import read_questions
    from kgdb.models.base import resolve_device
    from kgdb.models.path_ranker import DENSE_FEATURES, PathRanker, RankerConfig
    from kgdb.pipeline.relation_paths import load_planner, save_relation_model
    from kgdb.training.path_ranker import RankerTrainConfig, train_ranker_model
    from kgdb.training.trainer import seed_everything

    if threads and resolve_device(settings.device) == "cpu":
        torch.set_num_threads(threads)
    t0 = time.perf_counter()
    sets = [read_questions(p) for p in questions]
    base = load_planner(graph, settings, planner)
    examples = {}
    for split in ("train", "val"):
        records = [q for qs in sets for q in qs.split(split)]
        on_start(split, len(records))
        examples[split], counts = ranker_examples(graph, records, base, on_progress)
        on_examples(split, len(records), counts)
    data_seconds = time.perf_counter() - t0
    if not examples["val"]:
        raise KgdbError("nothing to validate on: the question files have no val split")
    cfg = RankerTrainConfig(lr=lr, max_epochs=max_epochs, patience=patience, seed=seed)
    seed_everything(seed)
    model = PathRanker(RankerConfig(max_hops=base.model.cfg.max_hops), base.model.relation_emb.detach().cpu())
    try:
        model, result = train_ranker_model(model, examples["train"], examples["val"], cfg, on_epoch=on_epoch)
    except ValueError as exc:
        raise InputError(str(exc), path="--questions") from exc
    datasets = "+".join(qs.dataset for qs in sets)
    out = settings.checkpoints_dir / (name or f"{RANKER}-{datasets}")
    save_relation_model(
        out, model, RANKER,
        {
            "relation_names": base.relation_names,
            "planner": base.checkpoint.name if base.checkpoint else None,
            "embedding_model": base.checkpoint.config.get("embedding_model") if base.checkpoint else None,
            "embedding_dim": int(base.model.relation_emb.shape[1]),
            "graph_fingerprint": graph_fingerprint(graph)[0],
            "dataset": datasets,
            "questions": [str(p) for p in questions],
            "candidates": {"max_hops": MAX_HOPS, "cvt_hops": CVT_HOPS, "cap": CAP, "rule": "relation_steps.cypher from the gold topics; "
                           "positives: best answer F1, ties the shortest"},
            "dense_features": list(DENSE_FEATURES),
            "train": {**cfg.__dict__, "threads": threads},
            "data_seconds": round(data_seconds, 2),
            "result": result.to_json(),
            "metrics": {"best_epoch": result.best_epoch, "val_expected_hit@1": result.best_val_hit1, "val_macro_f1": result.best_val_f1},
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
    )
    return find_checkpoint(str(out), settings.checkpoints_dir), result


def tune_ranker_and_store(graph: Graph, settings: Settings, ranker: Checkpoint, questions: list[Path], *, per_file: int = 300,
                          on_start: Callable[[int], None] = lambda n: None, on_progress: Callable[[int], None] = lambda n: None) -> dict:
    """Choose the answering mode, λ1 and θ with this ranker on the first `per_file` val questions of
    each file (never test), as `kgdb train rrp` does for the beam planner, and store them in the
    ranker checkpoint's config.json (`relation_path_retriever` reads them from there)."""
    from kgdb.config import dump_json
    from kgdb.data.questions import read_questions
    from kgdb.models.checkpoints import CONFIG
    from kgdb.pipeline.relation_paths import relation_path_retriever
    from kgdb.pipeline.structural import ABLATIONS, chosen_mode, gather_questions, score_mode, tune_rethinking

    retriever = relation_path_retriever(graph, settings, checkpoint=ranker.name, write=False, mode="rethink")
    records = [q for p in questions for q in read_questions(p).split("val")[:per_file]]
    on_start(len(records))
    items = gather_questions(retriever, records, on_progress)
    tuned = {**tune_rethinking(items), "split": "val", "per_file": per_file, "beam": retriever.planner.beam,
             "structural": retriever.structural.checkpoint.name if getattr(retriever.structural, "checkpoint", None) else None,
             "ablation_val": {m: score_mode(items, m, 0.0, 0.0) if m == "planner" else None for m in ABLATIONS}}
    for m in ABLATIONS[1:]:
        tuned["ablation_val"][m] = score_mode(items, m, tuned["lambda1"], tuned["theta"])
    tuned["mode"] = chosen_mode(tuned)
    dump_json({**ranker.config, "rethinking": tuned}, ranker.path / CONFIG)
    return tuned
