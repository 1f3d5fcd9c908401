"""Training RRP's path ranker on a graph (or, portable, on several): every enumerated candidate of each
training question with its features (`kgdb.rrp.path_ranker.candidate_features`) and the positives
that match the gold answers best (`ranker_examples`), the files' examples split and their relation tables
stacked, the training run and its checkpoint (`train_path_ranker`), and the answering settings chosen
with it on val: rethinking and the answers' closeness weight for a graph's own ranker
(`tune_ranker_and_store`), the closeness weight for a portable one (`choose_closeness_weight`). Serving
the ranker is `kgdb.rrp.path_ranker`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.errors import InputError, KgdbError
from kgdb.limits import RRP_STEP_SCAN
from kgdb.models.checkpoints import Checkpoint, find_checkpoint
from kgdb.pipeline.trainable import TrainJob, TrainOutcome, parse_pairs
from kgdb.pipeline.vectors import data_fingerprint
from kgdb.rrp.options import RankerOptions
from kgdb.rrp.path_ranker import CAP, RANKER
from kgdb.rrp.ranker_features import RelationText, answer_ends, candidate_features, graph_relations, prefix_score
from kgdb.rrp.scoring import DENSE_FEATURES, PLANNER_FEATURES, PORTABLE_FEATURES, RankerConfig
from kgdb.scoring.path_tokens import text_features
from kgdb.training.events import TrainEvents

if TYPE_CHECKING:
    from kgdb.rrp.planners import TrainedPathPlanner
    from kgdb.rrp.training.path_ranker import RankerExample


def _f1(pred: set[str], gold: set[str]) -> float:
    common = len(pred & gold)
    return 2 * common / (len(pred) + len(gold)) if common else 0.0


@dataclass(frozen=True)
class ExampleRules:
    """How a split's candidates are enumerated and labelled: the longest path, the word buckets, the
    planner whose features a graph's own ranker reads, the enumeration bounds and the positives' margin."""

    max_hops: int
    buckets: int
    planner: object = None
    hub_scan: int | None = None
    prefixes: int | None = None
    step_scan: int | None = RRP_STEP_SCAN
    positive_margin: float | None = None

    @classmethod
    def of(
        cls, settings: Settings, max_hops: int, buckets: int, planner=None, positive_margin: float | None = None
    ) -> ExampleRules:
        return cls(
            max_hops,
            buckets,
            planner,
            settings.fetch_hub_scan,
            settings.rrp_prefixes,
            settings.rrp_step_scan,
            positive_margin,
        )


def ranker_examples(
    graph: Graph,
    records,
    relations: RelationText,
    embedder,
    rules: ExampleRules,
    on_progress: Callable[[int], None] = lambda n: None,
):
    """Examples of a split from the gold topics: every enumerated candidate with its features; the
    positives are the candidates whose answers match the gold ones best (F1; ties: the shortest; with
    `positive_margin`, those that read the question: `reliable_positives`), Eq. 1's reliable paths judged
    by what they reach rather than by length alone."""
    from kgdb.cypher.path_candidates import candidate_hops, relation_paths_around
    from kgdb.rrp.planner_training import question_texts
    from kgdb.rrp.training.path_ranker import RankerExample, reliable_positives

    plain, through_cvt = candidate_hops(graph)
    planner = rules.planner
    closeness = (len(PLANNER_FEATURES) if planner is not None else 0) + PORTABLE_FEATURES.index(
        "cos_max"
    )  # dense's column
    texts, embs, known = question_texts(graph, records, embedder.encode)
    out, counts = [], {"no_candidate": 0, "no_positive": 0, "candidates": 0}
    for q, text, emb in zip(records, texts, embs):
        topics = [t for t in q.topics if t in known]
        candidates = relation_paths_around(
            graph,
            topics,
            max_hops=plain,
            cvt_hops=through_cvt,
            cap=CAP,
            hub_scan=rules.hub_scan,
            prefixes=rules.prefixes,
            step_scan=rules.step_scan,
            prefix_score=prefix_score(relations, emb),
        )
        kept, tokens, dense = candidate_features(
            relations, text, emb, topics, candidates, max_hops=rules.max_hops, planner=planner
        )
        gold, tset = set(q.answers), set(topics)
        f1 = np.array([_f1(answer_ends(c, tset), gold) for c in kept], np.float32)
        hit = np.array([len(answer_ends(c, tset) & gold) / len(answer_ends(c, tset)) for c in kept], np.float32)
        positive = reliable_positives(
            f1, np.array([len(c.steps) for c in kept]), dense[:, closeness], rules.positive_margin
        )
        counts["no_candidate"] += not kept
        counts["no_positive"] += bool(kept) and not positive.any()
        counts["candidates"] += len(kept)
        out.append(
            RankerExample(
                q.id, np.asarray(emb, np.float32), text_features(text, rules.buckets), tokens, dense, positive, hit, f1
            )
        )
        on_progress(1)
    return out, counts


def stacked_relations(
    graphs: list[Graph], fingerprints: list[tuple[str, dict]], settings: Settings
) -> tuple[list, np.ndarray]:
    """The relation tables of several graphs stacked [ΣR, d] (each distinct graph once), and per graph
    its table and first row in the stack: a portable ranker trained on several graphs reads them so."""
    tables: dict[str, tuple[RelationText, int]] = {}  # fingerprint -> (relation table, first row in the stacked table)
    for g, (fp, _) in zip(graphs, fingerprints):
        if fp not in tables:
            tables[fp] = (graph_relations(g, settings), sum(len(r.names) for r, _ in tables.values()))
    return [tables[fp] for fp, _ in fingerprints], np.concatenate([r.table for r, _ in tables.values()])


def split_examples(
    sets: list,
    graphs: list[Graph],
    per_file: list[tuple[RelationText, int]],
    embedder,
    rules: ExampleRules,
    *,
    sample_train: int | None = None,
    sample_val: int | None = None,
    events: TrainEvents | None = None,
) -> tuple[list, list[list]]:
    """(train examples of every question set together, val examples per set) for the ranker: set i read
    on `graphs[i]` with relation table and stack offset `per_file[i]` (tokens then index the stack).
    `events` hears each split as a phase of candidates and, when done, its counts as a message."""
    from kgdb.data.questions import subsample

    events = events or TrainEvents()
    train: list[RankerExample] = []
    val: list[list[RankerExample]] = []
    for qs, g, (relations, offset) in zip(sets, graphs, per_file):
        for split, n in (("train", sample_train), ("val", sample_val)):
            records = subsample(qs.split(split), sample=n)
            events.phase(f"candidates {qs.dataset}/{split}", len(records))
            found, counts = ranker_examples(g, records, relations, embedder, rules, on_progress=events.advance)
            for ex in found:
                ex.tokens[ex.tokens > 0] += 2 * offset
            events.message(
                f"{qs.dataset}/{split}: {len(records)} questions, {counts['candidates']} candidate paths, "
                f"{counts['no_candidate']} without any, {counts['no_positive']} whose candidates reach no answer"
            )
            (train.extend if split == "train" else val.append)(found)
    return train, val


@dataclass
class RankerData:
    """What a ranker trains from: the examples, the relation table(s) its tokens index, the planner a
    graph's own ranker reads, and where they came from."""

    sets: list
    fingerprints: list
    model_name: str | None
    stacked: np.ndarray
    base: TrainedPathPlanner | None  # the planner a graph's own ranker reads (None when portable)
    max_hops: int
    train: list
    val: list
    seconds: float


def _checked_overrides(opts: RankerOptions, graph: Graph, graphs: list[Graph], n_files: int) -> tuple[dict, str | None]:
    """The `--set` ranker settings, typed, and the planner named there; refuses what the command sets."""
    from kgdb.models.registry import make_config
    from kgdb.rrp.models.path_ranker import PathRanker

    model = parse_pairs(opts.model_settings)
    planner = model.pop("planner", None)
    if opts.positive_margin is not None and not opts.positive_margin >= 0:
        raise InputError(
            f"the positives' closeness margin must be 0 or more, got {opts.positive_margin}", path="--positive-margin"
        )
    if fixed := sorted({"max_hops", "dense", "portable"} & set(model)):
        raise InputError(
            f"rrp-ranker setting {', '.join(fixed)} is set by the command (--portable, the graph), not by --set",
            path="--set",
        )
    typed = make_config(PathRanker, model)
    if len(graphs) != n_files:
        raise InputError(f"{len(graphs)} graphs for {n_files} question files", path="--on")
    if not opts.portable and any(g is not graph for g in graphs):
        raise InputError(
            "a graph's own ranker reads that graph's planner: train on several graphs with --portable", path="--on"
        )
    return {k: getattr(typed, k) for k in model}, planner


def _ranker_data(
    graph: Graph,
    settings: Settings,
    questions: list[Path],
    graphs: list[Graph],
    opts: RankerOptions,
    overrides: dict,
    planner: str | None,
    events: TrainEvents,
):
    from kgdb.cypher.tables import graph_fingerprint
    from kgdb.data.questions import read_questions
    from kgdb.embeddings import get_embedder
    from kgdb.rrp.planners import load_planner

    t0 = time.perf_counter()
    sets = [read_questions(p) for p in questions]
    fingerprints = [graph_fingerprint(g) for g in graphs]
    base: TrainedPathPlanner | None = None
    if opts.portable:
        models = {info.get("model") or settings.embedding_model for _, info in fingerprints}
        if len(models) > 1:
            raise InputError(
                f"the graphs were embedded with different models ({', '.join(sorted(models))}): one ranker reads one",
                path="--on",
            )
        model_name = models.pop()
        embedder = get_embedder(model_name, settings.device, settings.embedding_batch_size)
        per_file, stacked = stacked_relations(graphs, fingerprints, settings)
        max_hops = 3
    else:
        base = load_planner(graph, settings, planner)
        model_name, embedder = base.checkpoint.config.get("embedding_model") if base.checkpoint else None, base.embedder
        own = RelationText.of(base.relation_names, base.model.relation_emb)
        per_file, stacked, max_hops = [(own, 0)] * len(sets), own.table, base.model.cfg.max_hops
    model_cfg = (RankerConfig.for_any_graph if opts.portable else RankerConfig)(max_hops=max_hops, **overrides)
    rules = ExampleRules.of(settings, max_hops, model_cfg.buckets, base, opts.positive_margin)
    train, val = split_examples(
        sets,
        graphs,
        per_file,
        embedder,
        rules,
        sample_train=opts.sample_train,
        sample_val=opts.sample_val,
        events=events,
    )
    if not any(val):
        raise KgdbError("nothing to validate on: the question files have no val split")
    return RankerData(
        sets, fingerprints, model_name, stacked, base, max_hops, train, val, time.perf_counter() - t0
    ), model_cfg


def _ranker_checkpoint_config(
    data: RankerData, questions: list[Path], opts: RankerOptions, settings: Settings, cfg, device: str, result
) -> dict:

    base, margin = data.base, opts.positive_margin
    one_graph = len({fp for fp, _ in data.fingerprints}) == 1
    return {
        "relation_names": None if opts.portable or base is None else base.relation_names,
        "planner": base.checkpoint.name if base and base.checkpoint else None,
        "embedding_model": data.model_name,
        "embedding_dim": int(data.stacked.shape[1]),
        "graph_fingerprint": data.fingerprints[0][0]
        if one_graph
        else None,  # a ranker of several graphs is never picked for one by default
        "graph_data": data_fingerprint(data.fingerprints[0][1]) if one_graph else None,
        "graphs": [{"questions": str(p), "fingerprint": fp} for p, (fp, _) in zip(questions, data.fingerprints)],
        "dataset": "+".join(dict.fromkeys(qs.dataset for qs in data.sets)),
        "questions": [str(p) for p in questions],
        "sample": {"train": opts.sample_train, "val": opts.sample_val},
        "candidates": {
            "hops": "2, and a third through a CVT node, on a graph with CVT nodes; else 3",
            "cap": CAP,
            "hub_scan": settings.fetch_hub_scan,
            "prefixes": settings.rrp_prefixes,
            "step_scan": settings.rrp_step_scan,
            "rule": "relation_steps.cypher from the gold topics; positives: best answer F1, ties the shortest"
            + (f", then those within {margin} of the best cos_max" if margin is not None else ""),
            "positive_margin": margin,
        },
        "dense_features": list(PORTABLE_FEATURES if opts.portable else DENSE_FEATURES),
        "train": {**cfg.__dict__, "threads": opts.thread_count(), "device": device},
        "data_seconds": round(data.seconds, 2),
        "result": result.to_json(),
        "metrics": {
            "best_epoch": result.best_epoch,
            "val_expected_hit@1": result.best_val_hit1,
            "val_macro_f1": result.best_val_f1,
        },
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def train_path_ranker(
    graph: Graph,
    settings: Settings,
    questions: list[Path],
    options: RankerOptions | None = None,
    events: TrainEvents | None = None,
    graphs: list[Graph] | None = None,
):
    """Train the ranker on the train split of every question file together, select on their val
    splits (the mean over the files), save `<checkpoints_dir>/<name>/`. `graphs[i]` holds the i-th
    file (default: `graph` for all). `options` are `kgdb train rrp-ranker`'s (`RankerOptions`): a
    graph's own ranker reads its trained planner (`--set planner=NAME`, default the newest); a
    `portable` one reads no planner and no relation ids, so its files may come from several graphs
    (their relation tables stacked while training). `sample_train` / `sample_val`: that many
    questions of each file's split at random (seeded). `positive_margin`: `reliable_positives`'
    closeness margin (None: best F1 and fewest hops alone). Returns `(Checkpoint, RankerResult)`."""
    import torch

    from kgdb.models.base import resolve_device
    from kgdb.rrp.models.path_ranker import PathRanker
    from kgdb.rrp.planners import save_relation_model
    from kgdb.rrp.training.path_ranker import RankerTrainConfig, train_ranker_model
    from kgdb.training.trainer import prepare_cpu, seed_everything

    opts, events = options or RankerOptions(), events or TrainEvents()
    graphs = graphs or [graph] * len(questions)
    overrides, planner = _checked_overrides(opts, graph, graphs, len(questions))
    prepare_cpu(settings.device, opts.thread_count())
    data, model_cfg = _ranker_data(graph, settings, questions, graphs, opts, overrides, planner, events)
    cfg = RankerTrainConfig(lr=opts.lr, max_epochs=opts.max_epochs, patience=opts.patience, seed=opts.seed)
    seed_everything(opts.seed)
    # The GPU when present: on two H200 machines it trained the shipped recipe as fast as their 16 CPU threads or 2.6x
    # faster, and 10x faster on questions with thousands of candidates (docs/performance.md, "On a GPU").
    # Examples are gathered on the CPU.
    device = resolve_device(settings.device)
    model = PathRanker(model_cfg, torch.from_numpy(data.stacked)).to(device)
    try:
        model, result = train_ranker_model(model, data.train, [v for v in data.val if v], cfg, events=events)
    except ValueError as exc:
        raise InputError(str(exc), path="--questions") from exc
    datasets = "+".join(dict.fromkeys(qs.dataset for qs in data.sets))
    out = settings.checkpoints_dir / (opts.name or f"{RANKER}-{'portable-' if opts.portable else ''}{datasets}")
    save_relation_model(
        out, model, RANKER, _ranker_checkpoint_config(data, questions, opts, settings, cfg, device, result)
    )
    return find_checkpoint(str(out), settings.checkpoints_dir), result


def train_and_tune_ranker(job: TrainJob, graphs: list[Graph]) -> TrainOutcome:
    """`kgdb train rrp-ranker`: the ranker trained (`train_path_ranker`), then its answering settings
    chosen on val (`--tune-per-file`): rethinking and the closeness weight for a graph's own ranker,
    the closeness weight alone for a portable one."""
    opts, events = job.options, job.events
    ckpt, result = train_path_ranker(job.graph, job.settings, job.questions, opts, events, graphs)
    outcome = TrainOutcome(
        ckpt,
        result,
        f"best epoch {result.best_epoch}: val answer Hit@1 {result.best_val_hit1:.4f}, Macro-F1 "
        f"{result.best_val_f1:.4f} (mean over the files); {result.train_questions} training questions "
        f"({result.skipped_no_positive} without a positive skipped); checkpoint {ckpt.path}",
    )
    if not opts.tune_per_file:
        return outcome
    events.message(outcome.summary)
    outcome.summary = ""
    # λ1, θ weigh a graph's own structural reasoner: a portable ranker answers alone, weighed by the closeness
    # of its answers
    if opts.portable:
        answering = choose_closeness_weight(
            ckpt,
            list(zip(graphs, job.questions)),
            per_file=opts.tune_per_file,
            on_start=lambda n: events.phase("answer closeness weight on val", n),
            on_progress=events.advance,
        )
        events.message(
            f"answer closeness weight {answering['closeness_weight']} "
            "(chosen on val: the mean Hit@1 over the files, then Macro-F1)"
        )
        return outcome
    outcome.tuned = tune_ranker_and_store(job, ckpt)
    return outcome


def tune_ranker_and_store(job: TrainJob, ranker: Checkpoint) -> dict:
    """The answering settings of a graph's own ranker, in place of the beam planner, with this graph's
    structural reasoner (`structural.store_tuning`), as `kgdb train rrp` chooses them for the beam planner."""
    from kgdb.rrp.model_choice import relation_path_retriever
    from kgdb.rrp.structural import store_tuning

    retriever = relation_path_retriever(
        job.graph, job.settings, checkpoint=ranker.name, write=False, mode="rethink", closeness_weight=0.0
    )
    structural = retriever.structural.checkpoint if retriever.structural is not None else None
    answered_by = {"beam": retriever.planner.beam, "structural": structural.name if structural else None}
    return store_tuning(job, ranker, retriever, "tune mode, λ1, θ on val", answered_by)


def choose_closeness_weight(
    ranker: Checkpoint,
    on: list[tuple[Graph, Path]],
    *,
    per_file: int = 300,
    write: bool = True,
    on_start: Callable[[int], None] = lambda n: None,
    on_progress: Callable[[int], None] = lambda n: None,
) -> dict:
    """The `answering` block of a portable ranker (`kgdb.rrp.closeness`): each question file's
    first `per_file` val questions (never test) answered on its graph (`graph.settings`: server, cache),
    one Hit@1 / Macro-F1 grid per file, the weight chosen on their mean; stored in the checkpoint's
    config.json with `write`. A graph's own ranker gets it from `tune_ranker_and_store` instead."""
    import json

    from kgdb.config import dump_json
    from kgdb.cypher.tables import graph_fingerprint
    from kgdb.data.questions import read_questions
    from kgdb.models.checkpoints import CONFIG
    from kgdb.rrp.closeness import answering_config, weight_grid
    from kgdb.rrp.model_choice import relation_path_retriever
    from kgdb.rrp.structural import gather_questions

    if (
        ranker.config.get("retriever") != RANKER
    ):  # a beam planner's answering settings live in its structural checkpoint
        raise InputError(
            f"{ranker.name} is a {ranker.config.get('retriever', '?')} checkpoint, not an {RANKER}: a beam planner's "
            "answer closeness weight is chosen by `kgdb train rrp` with its structural reasoner",
            path="--checkpoint",
        )
    records = [(graph, path, read_questions(path).split("val")[:per_file]) for graph, path in on]
    if empty := [str(path) for _, path, qs in records if not qs]:
        raise InputError(
            f"{', '.join(empty)}: no val questions to choose the answer closeness weight on", path="--questions"
        )
    on_start(sum(len(qs) for _, _, qs in records))
    grids = {}
    for graph, path, qs in records:
        retriever = relation_path_retriever(
            graph, graph.settings, checkpoint=str(ranker.path), write=False, closeness_weight=0.0
        )
        items = gather_questions(retriever, qs, on_progress)
        grids[f"{path} on graph {graph_fingerprint(graph)[0][:16]}"] = weight_grid(
            items, retriever.mode, retriever.lambda1, retriever.theta
        )
    answering = answering_config(grids, per_file)
    if write:
        config_file = ranker.path / CONFIG
        dump_json({**json.loads(config_file.read_text(encoding="utf-8")), "answering": answering}, config_file)
    return answering
