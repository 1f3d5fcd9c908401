"""RRP's structural reasoner on a graph: training examples from the database's triples, training and the
checkpoint, and tuning rethinking (λ1, θ, the mode, the closeness weight) on val with the retriever that
answers. Loading and running it: `kgdb.rrp.structural_runner`; the rules tuned:
`kgdb.rrp.answering`."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.errors import InputError, KgdbError
from kgdb.heap import freeze_loaded
from kgdb.models.checkpoints import Checkpoint, find_checkpoint
from kgdb.rrp.answering import ABLATIONS, QuestionPaths, answers_of, chosen_mode, score_mode
from kgdb.rrp.closeness import answering_config, weight_grid
from kgdb.rrp.model_choice import relation_path_retriever
from kgdb.rrp.structural_runner import STRUCTURAL
from kgdb.scoring.path_tokens import text_features

if TYPE_CHECKING:
    from kgdb.pipeline.trainable import TrainJob
    from kgdb.rrp.options import StructuralOptions
    from kgdb.rrp.training.structural import StructuralExample

# imported from here by the CLI, benchmarks and reports: the rules live in `answering_rules`
__all__ = [
    "ABLATIONS",
    "STRUCTURAL",
    "QuestionPaths",
    "answers_of",
    "chosen_mode",
    "gather_questions",
    "score_mode",
    "structural_examples",
    "train_structural",
    "tune_and_store",
    "tune_answering",
    "tune_rethinking",
]

DISTRACTORS = 4  # near misses of the labelled relation paths grounded beside them (a planner beam's wrong paths)
GROUND_CAP = 200  # frontier entities per hop, as `relation_path_retriever` grounds


def structural_examples(
    graph: Graph,
    records,
    arrays,
    index,
    embed,
    buckets: int,
    max_hops: int,
    relation_index: dict[str, int],
    *,
    seed: int,
):
    """Training examples of a split: the subgraph of the labelled relation paths (exact hop count
    when the file states it, best-F1 shortest otherwise) and DISTRACTORS near misses, grounded as
    walks from the gold topics; questions whose answers the subgraph misses are counted, not used."""
    from kgdb.data.path_subgraphs import path_subgraph, random_paths
    from kgdb.rrp.planner_training import labelled_questions
    from kgdb.rrp.training.structural import StructuralExample

    rng = np.random.default_rng(seed)
    out, counts = [], {"no_path": 0, "no_answer_in_subgraph": 0}
    for q, text, emb, labelled in labelled_questions(graph, records, arrays, embed, max_hops, best_f1=True):
        if not labelled:
            counts["no_path"] += 1
            continue
        codes = [tuple(2 * relation_index[r] + (0 if d > 0 else 1) for r, d in p) for p in labelled]
        starts = np.asarray([arrays.index[t] for t in q.topics if t in arrays.index], np.int64)
        codes += random_paths(arrays, starts, DISTRACTORS, max_hops, rng, near=codes)
        sub = path_subgraph(arrays, index, q.topics, q.answers, codes, GROUND_CAP)
        if sub is None:
            counts["no_answer_in_subgraph"] += 1
            continue
        out.append(
            StructuralExample(
                q.id, emb, text_features(text, buckets), sub.head, sub.relation, sub.tail, sub.topic, sub.answer
            )
        )
    return out, counts


def train_structural(
    graph: Graph,
    settings: Settings,
    questions: list[Path],
    options: StructuralOptions,
    *,
    on_examples: Callable[[str, int, int, dict], None] = lambda split, n, used, counts: None,
    on_step: Callable[[float], None] = lambda loss: None,
    on_epoch: Callable[[object], None] = lambda log: None,
):
    """Train the structural reasoner on the train split of every question file together (all of
    it), select on their val splits (the first `options.max_val`, default 1000), save
    `<checkpoints_dir>/<name>/` (weights + config.json). `options` are `kgdb train rrp`'s
    (`StructuralOptions`; `hops` are its reasoning steps). Returns `(Checkpoint, StructuralResult)`."""
    from kgdb.data.path_subgraphs import EdgesByStep
    from kgdb.data.questions import read_questions
    from kgdb.rrp.models.structural import StructuralConfig, StructuralReasoner
    from kgdb.rrp.planner_training import relation_vocabulary
    from kgdb.rrp.planners import save_relation_model
    from kgdb.rrp.training.structural import StructuralTrainConfig, finished, train_structural_model
    from kgdb.training.trainer import prepare_cpu, seed_everything

    steps, seed, threads, max_val = options.hops, options.seed, options.thread_count(), options.max_val or 1000
    prepare_cpu(settings.device, threads)
    t0 = time.perf_counter()
    sets = [read_questions(p) for p in questions]
    vocab = relation_vocabulary(graph, settings)
    tables, relation_index, arrays, embedder = vocab.tables, vocab.relation_index, vocab.arrays, vocab.embedder
    index = EdgesByStep(arrays)
    model_cfg = StructuralConfig(steps=steps)
    cfg = StructuralTrainConfig(lr=options.lr, max_epochs=options.max_epochs, patience=options.patience, seed=seed)
    datasets = "+".join(qs.dataset for qs in sets)
    out = settings.checkpoints_dir / (options.name or f"{STRUCTURAL}-{datasets}")
    examples: dict[str, list[StructuralExample]] = {"train": [], "val": []}
    done = options.resume and finished(out, cfg)  # resuming a finished run: no data needed, only the checkpoint
    for split in () if done else ("train", "val"):
        records = [q for qs in sets for q in qs.split(split)]
        if split == "val" and max_val:
            records = [q for qs in sets for q in qs.split(split)[: max(1, max_val // len(sets))]]
        examples[split], counts = structural_examples(
            graph, records, arrays, index, embedder.encode, model_cfg.buckets, steps, relation_index, seed=seed
        )
        on_examples(split, len(records), len(examples[split]), counts)
    data_seconds = time.perf_counter() - t0
    if not done and (not examples["train"] or not examples["val"]):
        raise KgdbError(
            "nothing to train on: no question has its answer in the subgraph of its labelled relation paths"
        )
    seed_everything(seed)
    model = StructuralReasoner(model_cfg, tables.relation.detach().cpu())
    try:
        model, result = train_structural_model(
            model,
            examples["train"],
            examples["val"],
            cfg,
            state_dir=out,
            resume=options.resume,
            on_step=on_step,
            on_epoch=on_epoch,
        )
    except ValueError as exc:
        raise InputError(str(exc), path="--resume") from exc
    save_relation_model(
        out,
        model,
        STRUCTURAL,
        {
            **vocab.checkpoint_config(datasets, questions),
            "train": {**cfg.__dict__, "threads": threads, "max_val": max_val},
            "subgraphs": {
                "rule": "walks of the labelled relation paths + near misses (one step changed) from the gold topics",
                "distractors": DISTRACTORS,
                "ground_cap": GROUND_CAP,
            },
            "data_seconds": round(data_seconds, 2),
            "result": result.to_json(),
            "metrics": {"best_epoch": result.best_epoch, "val_hit@1": result.best_val_hit1},
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
    )
    return find_checkpoint(str(out), settings.checkpoints_dir), result


LAMBDAS = tuple(round(x * 0.1, 1) for x in range(11))
THETAS = tuple(round(x * 0.05, 2) for x in range(20))


def gather_questions(
    retriever, records, on_progress: Callable[[int], None] = lambda n: None, *, linked: bool = False
) -> list[QuestionPaths]:
    """Every question's candidate paths (`linked`: its topics linked from the text, not the file's)."""
    out = []
    for q in records:
        try:
            g = retriever.gather(q.text, None if linked else (q.topics or None))
            # the modes are scored after the database is closed: every answer's closeness is read now
            g.closeness(sorted({c.path.answer for c in g.planned + g.structural}))
        except KgdbError:
            g = None
        out.append(QuestionPaths(q.id, set(q.answers), g))
        freeze_loaded()
        on_progress(1)
    return out


def tune_rethinking(items: list[QuestionPaths]) -> dict:
    """λ1 by val Hit@1 (ties: Macro-F1, then closer to 0.5), then θ by val Macro-F1 (ties: the smaller)."""

    @functools.lru_cache(maxsize=None)
    def at(lam: float, theta: float) -> dict:
        return score_mode(items, "rethink", lam, theta)

    best_lam = max(LAMBDAS, key=lambda lam: (at(lam, 0.0)["hit1"], at(lam, 0.0)["macro_f1"], -abs(lam - 0.5)))
    grid = {theta: at(best_lam, theta) for theta in THETAS}
    best_theta = max(THETAS, key=lambda th: (grid[th]["macro_f1"], grid[th]["hit1"], -th))
    return {
        "lambda1": best_lam,
        "lambda2": round(1 - best_lam, 2),
        "theta": best_theta,
        "val": grid[best_theta],
        "lambda_grid": {str(lam): at(lam, 0.0)["hit1"] for lam in LAMBDAS},
        "theta_grid": {str(t): v["macro_f1"] for t, v in grid.items()},
        "questions": len(items),
    }


def tune_answering(
    retriever,
    questions: list[Path],
    *,
    per_file: int,
    on_start: Callable[[int], None] = lambda n: None,
    on_progress: Callable[[int], None] = lambda n: None,
) -> tuple[dict, dict]:
    """The answering settings of a retriever built with closeness weight 0, chosen on the first
    `per_file` val questions of each file (never test): λ1, θ, the ablation and the mode `kgdb ask`
    answers in (`rethinking`), then the weight of the answers' closeness to the question in that mode
    (`answering`, `kgdb.rrp.closeness`; one grid per file, chosen on their mean)."""
    from kgdb.data.questions import read_questions

    by_file = {str(p): read_questions(p).split("val")[:per_file] for p in questions}
    records = [q for qs in by_file.values() for q in qs]
    on_start(len(records))
    items = gather_questions(retriever, records, on_progress)
    tuned = {
        **tune_rethinking(items),
        "split": "val",
        "per_file": per_file,
        "ablation_val": {m: score_mode(items, m, 0.0, 0.0) if m == "planner" else None for m in ABLATIONS},
    }
    for m in ABLATIONS[1:]:
        tuned["ablation_val"][m] = score_mode(items, m, tuned["lambda1"], tuned["theta"])
    tuned["mode"] = chosen_mode(tuned)
    grids, start = {}, 0
    for path, qs in by_file.items():
        grids[path] = weight_grid(items[start : start + len(qs)], tuned["mode"], tuned["lambda1"], tuned["theta"])
        start += len(qs)
    return tuned, answering_config(grids, per_file)


def store_tuning(job: TrainJob, checkpoint: Checkpoint, retriever, phase: str, answered_by: dict) -> dict:
    """`tune_answering` of `retriever` (built with closeness weight 0 to answer with `checkpoint`) on the
    job's val questions (`--tune-per-file`), stored with `answered_by` (the other models that answered)
    in the checkpoint's config.json, where `relation_path_retriever` reads them."""
    from kgdb.config import dump_json
    from kgdb.models.checkpoints import CONFIG

    events = job.events
    tuned, answering = tune_answering(
        retriever,
        job.questions,
        per_file=job.options.tune_per_file,
        on_start=lambda n: events.phase(phase, n),
        on_progress=events.advance,
    )
    tuned |= answered_by
    dump_json({**checkpoint.config, "rethinking": tuned, "answering": answering}, checkpoint.path / CONFIG)
    return {**tuned, "answering": answering}


def tune_and_store(job: TrainJob, structural: Checkpoint) -> dict:
    """The answering settings of this structural reasoner with the beam planner of this graph (`store_tuning`)."""
    retriever = relation_path_retriever(
        job.graph, job.settings, write=False, structural=structural.name, mode="rethink", closeness_weight=0.0
    )
    planner = retriever.planner.checkpoint
    answered_by = {"planner": planner.name if planner else None}
    return store_tuning(job, structural, retriever, "tune λ1, θ, closeness weight on val", answered_by)
