"""`kgdb splits make` and `kgdb train NAME` (any registered retriever, and RRP's planner, path ranker and structural reasoner)."""

from __future__ import annotations

import os
import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from kgdb.cli import app
from kgdb.cli.common import QUESTIONS_HELP, console, open_graph, parse_settings, progress, report_split, settings_from
from kgdb.config import dump_json
from kgdb.errors import InputError, KgdbError
from kgdb.data.questions import SPLITS, read_questions, split_summary

splits_app = typer.Typer(help="Fixed train/val/test splits of the question sets.", no_args_is_help=True)
app.add_typer(splits_app, name="splits")


class LabelSource(str, Enum):
    shortest = "shortest"
    rapl = "rapl"
    reg = "reg"


@splits_app.command("make")
def splits_make(
    questions: list[Path] = typer.Argument(..., help=QUESTIONS_HELP, exists=False),
    out: Path = typer.Option(Path("splits"), "--out", help="Folder for <dataset>.json id lists."),
) -> None:
    """Write the fixed 60/20/20 split (by id hash, see kgdb/models/datasets.py) of each question file."""
    table = Table("dataset", "file", *SPLITS)
    for path in questions:
        qs = read_questions(path)
        summary = split_summary(qs)
        dump_json(summary, out / f"{qs.dataset}.json")
        table.add_row(qs.dataset, str(path), *(str(summary["counts"][s]) for s in SPLITS))
    console.print(table)
    console.print(f"wrote {len(questions)} split file(s) to {out}/")


def default_threads() -> int:
    """Half the cores, at most 8: the tiny per-question matmuls of training gain nothing from more,
    and on a shared 2-core machine a second thread only spin-waits (epochs 6x slower measured)."""
    return max(1, min(8, (os.cpu_count() or 2) // 2))


@app.command("train")
def train_retriever(
    ctx: typer.Context,
    retriever: Annotated[str, typer.Argument(help="A registered retriever (`kgdb retrievers` lists them), rrp-planner (the relation-path planner), rrp-ranker (a ranker over every enumerated relation path, reading a trained planner: --set planner=NAME, default the newest; with --portable none, for any graph) or rrp (RRP's structural reasoner; then λ1, θ are tuned on val).")],
    questions: Annotated[list[Path], typer.Option("--questions", help=QUESTIONS_HELP + " Repeatable for rrp-planner and rrp (one model for all files).")],
    name: Annotated[Optional[str], typer.Option("--name", help="Checkpoint name (default <retriever>-<dataset>).")] = None,
    hops: Annotated[Optional[int], typer.Option("--hops", min=1, help="Subgraph radius around the topic entities (default 2); for rrp-planner the longest relation path, for rrp the reasoning steps (default 3).")] = None,
    cap: Annotated[Optional[int], typer.Option("--cap", min=1, help="Per-node expansion cap (default: the fetch default).")] = None,
    max_epochs: Annotated[int, typer.Option("--max-epochs", min=1, help="Upper bound; early stopping usually ends sooner.")] = 50,
    patience: Annotated[int, typer.Option("--patience", help="Epochs without a better val triple recall@100.")] = 10,
    lr: Annotated[float, typer.Option("--lr")] = 1e-3,
    seed: Annotated[int, typer.Option("--seed")] = 42,
    setting: Annotated[Optional[list[str]], typer.Option("--set", help="Retriever hyper-parameter KEY=VALUE (repeatable), e.g. hidden=512.")] = None,
    max_train: Annotated[Optional[int], typer.Option("--max-train", min=1, help="Use only the first N training questions.")] = None,
    max_val: Annotated[Optional[int], typer.Option("--max-val", min=1, help="Use only the first N validation questions.")] = None,
    threads: Annotated[int, typer.Option("--threads", help="CPU threads for torch (default: half the cores, at most 8).")] = 0,
    resume: Annotated[bool, typer.Option("--resume", help="Continue a killed run from its last finished epoch.")] = False,
    tune_per_file: Annotated[int, typer.Option("--tune-per-file", min=0, help="rrp, rrp-ranker: val questions per file that choose the answering mode, λ1, θ and the answer closeness weight (a fixed prefix; 0: no tuning, the checkpoint answers with the defaults; a finished rrp run is tuned later with --resume).")] = 300,
    labels: Annotated[LabelSource, typer.Option("--labels", help="Training positives: shortest-path triples, or the triples on the paths `kgdb label --method rapl|reg` stored (questions without them fall back to shortest).")] = LabelSource.shortest,
    relation_targets: Annotated[bool, typer.Option("--relation-targets", help="rapl: add RAPL's relation targeting (Eq. 8) to the question-triple loss: the triples leaving a topic by a relation `kgdb label --method rapl-relations` stored for the question are positives too (questions without R_* unchanged). Combines with any --labels.")] = False,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Questions per optimiser step, scored as one disjoint union (retrievers that support it: subgraphrag); the loss is the mean over the questions.")] = 1,
    nproc: Annotated[int, typer.Option("--nproc", min=1, help="Data-parallel training processes on this machine (PyTorch DDP: gloo on CPU, NCCL with one GPU each); the database is read once, by this process.")] = 1,
    portable: Annotated[bool, typer.Option("--portable", help="rrp-ranker: a ranker for any graph (no planner, no relation ids; reads the graph's relation text table), trainable on several graphs at once (--on).")] = False,
    on: Annotated[Optional[list[str]], typer.Option("--on", help="rrp-ranker --portable: the Neo4j URI holding each --questions file, in order (one per file; default: --uri for all).")] = None,
    sample_train: Annotated[Optional[int], typer.Option("--sample-train", min=1, help="rrp-ranker: N training questions of each file at random (fixed seed).")] = None,
    sample_val: Annotated[Optional[int], typer.Option("--sample-val", min=1, help="rrp-ranker: N val questions of each file at random (fixed seed).")] = None,
    positive_margin: Annotated[Optional[float], typer.Option("--positive-margin", help="rrp-ranker: of the best-F1 shortest candidate paths, only those whose question-relation cosine is within this of the closest are positives (default: all of them).")] = None,
) -> None:
    """Train a registered retriever on the train split; select on the val split; save a checkpoint.

    The training state is saved after every epoch, so `--resume` continues a killed run.
    `rrp-planner` trains RRP's relation-path planner instead (labels: shortest relation paths from
    topic to answer; selection: val path Hit@1; no resume).
    """
    from kgdb.pipeline import PLANNER, train_retriever
    from kgdb.pipeline.path_ranker import RANKER

    settings = settings_from(ctx)
    threads = threads or default_threads()
    if retriever in (PLANNER, RANKER, "rrp") and labels is not LabelSource.shortest:
        raise InputError(f"{retriever} learns shortest relation paths; --labels applies to the registered retrievers", path="--labels")
    if retriever in (PLANNER, RANKER, "rrp") and relation_targets:
        raise InputError(f"{retriever} learns shortest relation paths; --relation-targets applies to rapl", path="--relation-targets")
    if retriever in (PLANNER, RANKER, "rrp") and batch_size > 1:
        raise InputError(f"{retriever} has its own batching; --batch-size applies to the registered retrievers", path="--batch-size")
    if retriever in (PLANNER, RANKER, "rrp") and nproc > 1:
        raise InputError(f"{retriever} trains in one process; drop --nproc", path="--nproc")
    if retriever != RANKER and (portable or on or sample_train or sample_val or positive_margin is not None):
        raise InputError("--portable, --on, --sample-train, --sample-val and --positive-margin apply to rrp-ranker", path="--portable")
    if on and not portable:
        raise InputError("a graph's own ranker reads that graph's planner: --on needs --portable", path="--on")
    if on and len(on) != len(questions):
        raise InputError(f"give one --on URI per --questions file: {len(on)} for {len(questions)}", path="--on")
    if nproc > 1:
        console.print(f"data-parallel training in {nproc} processes (DDP); epoch lines come from rank 0", highlight=False)
    if retriever == "rrp":
        _train_structural(ctx, settings, questions, name=name, max_epochs=max_epochs, patience=patience, lr=lr, seed=seed, threads=threads,
                          steps=hops or 3, resume=resume, max_val=max_val, tune_per_file=tune_per_file)
        return
    if retriever == RANKER:
        _train_ranker(ctx, settings, questions, name=name, max_epochs=max_epochs, patience=patience, lr=lr, seed=seed, threads=threads,
                      model=parse_settings(setting or []), tune_per_file=tune_per_file, portable=portable, on=on or [],
                      sample_train=sample_train, sample_val=sample_val, positive_margin=positive_margin)
        return
    if retriever == PLANNER:
        _train_planner(ctx, settings, questions, name=name, max_epochs=max_epochs, patience=patience, lr=lr, seed=seed, threads=threads,
                       hops=hops or 3)
        return
    if len(questions) != 1:
        raise InputError(f"{retriever} trains on one question file, got {len(questions)}", path="--questions")
    questions, hops = questions[0], hops or 2
    with open_graph(ctx) as graph, progress() as bar:
        fetch_task = bar.add_task("fetch+label", total=None, visible=False)
        epoch_task = bar.add_task("epochs (best val R@100 -)", total=max_epochs, visible=False)
        step_task = bar.add_task("epoch 1 loss -", total=None, visible=False)
        state = {"loss": 0.0, "n": 0, "questions": 0, "epoch": 1, "best": 0.0, "usable": 0, "t0": time.perf_counter()}

        def on_fetch_start(split: str, total: int) -> None:
            bar.reset(fetch_task, total=total, description=f"fetch+label {split}", visible=True)

        def on_start(info: dict) -> None:
            state["usable"] = info["usable"]
            state["t0"] = time.perf_counter()
            bar.update(fetch_task, visible=False)
            bar.update(epoch_task, visible=True)
            bar.reset(step_task, total=info["usable"], visible=True)
            console.print(
                f"training {retriever} on {info['usable']} questions ({info['skipped']} without a {info['label_kind']} label "
                f"skipped), validating on {info['val']}, device {info['device']}, {threads} thread(s); "
                f"state saved each epoch in {escape(str(info['out']))}",
                highlight=False,
            )

        def on_step(loss: float, questions: int) -> None:
            state["loss"] += loss
            state["n"] += 1
            state["questions"] += questions
            rate = state["questions"] / max(time.perf_counter() - state["t0"], 1e-9)
            bar.update(step_task, advance=questions, description=f"epoch {state['epoch']} loss {state['loss'] / state['n']:.4f}, {rate:.1f} questions/s")

        def on_features(computed: int, cached: int) -> None:
            if computed or cached:
                console.print(f"per-node features ({escape(retriever)}): computed for {computed} subgraphs and added to the cache, "
                              f"read from the cache for {cached}", highlight=False)

        def on_epoch(log) -> None:
            state["best"] = max(state["best"], log.val_triple_recall)
            console.print(
                f"epoch {log.epoch}: loss {log.loss:.4f}, val triple R@100 {log.val_triple_recall:.4f}, "
                f"val answer R@100 {log.val_answer_recall:.4f}, {log.seconds:.1f} s ({log.cpu_seconds:.1f} s CPU, "
                f"{state['questions'] / max(log.seconds, 1e-9):.1f} questions/s; validation {log.val_seconds:.1f} s)"
            )
            bar.update(
                epoch_task,
                completed=log.epoch,
                description=f"epochs (val R@100 {log.val_triple_recall:.3f}, ans {log.val_answer_recall:.3f}, best {state['best']:.3f})",
            )
            state.update(loss=0.0, n=0, questions=0, epoch=log.epoch + 1, t0=time.perf_counter())  # validation not counted
            bar.reset(step_task, total=state["usable"], description=f"epoch {log.epoch + 1} loss -")

        ckpt, result = train_retriever(
            graph, settings, retriever, questions, name=name, hops=hops, cap=cap, max_epochs=max_epochs,
            patience=patience, lr=lr, seed=seed, settings_overrides=parse_settings(setting or []),
            max_train=max_train, max_val=max_val, resume=resume, threads=threads, labels=labels.value, nproc=nproc,
            relation_targets=relation_targets, batch_size=batch_size, on_split=lambda report: report_split(report), on_fetch_start=on_fetch_start,
            on_fetch=lambda n: bar.advance(fetch_task, n), on_start=on_start, on_step=on_step, on_features=on_features,
            on_epoch=on_epoch,
        )
    if result.resumed_from_epoch:
        console.print(f"resumed after epoch {result.resumed_from_epoch}")
    epoch_seconds = [e.seconds for e in result.epochs]
    console.print(
        f"best epoch {result.best_epoch}: val triple recall@100 {result.best_val_triple_recall:.4f}; "
        f"{len(result.epochs)} epochs, {sum(epoch_seconds) / max(len(epoch_seconds), 1):.1f} s/epoch; "
        f"checkpoint {escape(str(ckpt.path))}",
        highlight=False,
    )


def _train_planner(ctx, settings, questions: list[Path], *, name, max_epochs, patience, lr, seed, threads, hops) -> None:
    from kgdb.pipeline import train_planner

    def on_labels(split: str, n: int, counts: dict) -> None:
        console.print(f"{split}: {n} questions labelled, {counts['no_path']} without a relation path (topic to answer), "
                      f"{counts['paths']} labelled paths", highlight=False)

    def on_epoch(log) -> None:
        console.print(f"epoch {log.epoch}: loss {log.loss:.4f}, val path Hit@1 {log.val_hit1:.4f}, "
                      f"Hit@beam {log.val_hit_beam:.4f}, {log.seconds:.1f} s")

    with open_graph(ctx) as graph:
        ckpt, result = train_planner(graph, settings, questions, name=name, max_hops=hops, max_epochs=max_epochs, patience=patience,
                                     lr=lr, seed=seed, threads=threads, on_labels=on_labels, on_epoch=on_epoch)
    console.print(f"best epoch {result.best_epoch}: val path Hit@1 {result.best_val_hit1:.4f}; "
                  f"{result.train_questions} training questions ({result.skipped_no_path} without a path skipped); "
                  f"checkpoint {escape(str(ckpt.path))}", highlight=False)


def _train_ranker(ctx, settings, questions: list[Path], *, name, max_epochs, patience, lr, seed, threads, model, tune_per_file, portable, on,
                  sample_train, sample_val, positive_margin) -> None:
    from contextlib import ExitStack

    from kgdb.cypher import Graph
    from kgdb.pipeline.path_ranker_training import choose_closeness_weight, train_path_ranker, tune_ranker_and_store

    def on_examples(split: str, n: int, counts: dict) -> None:
        console.print(f"{split}: {n} questions, {counts['candidates']} candidate paths, {counts['no_candidate']} without any, "
                      f"{counts['no_positive']} whose candidates reach no answer", highlight=False)

    def on_epoch(log) -> None:
        console.print(f"epoch {log.epoch}: loss {log.loss:.4f}, val answer Hit@1 {log.val_hit1:.4f} (expected over the top path's answers), "
                      f"Macro-F1 {log.val_f1:.4f}, path Hit@1 {log.val_path_hit1:.4f}, {log.seconds:.1f} s")

    with ExitStack() as stack, progress() as bar:
        graph = stack.enter_context(open_graph(ctx))
        by_uri = {settings.neo4j_uri: graph}
        for uri in on:
            if uri not in by_uri:
                by_uri[uri] = stack.enter_context(Graph.connect(settings.with_overrides(neo4j_uri=uri)))
        task = bar.add_task("candidates", total=None)
        ckpt, result = train_path_ranker(
            graph, settings, questions, graphs=[by_uri[u] for u in on] or None, portable=portable, sample_train=sample_train,
            sample_val=sample_val, positive_margin=positive_margin, planner=model.pop("planner", None), model=model, name=name,
            max_epochs=max_epochs, patience=patience,
            lr=lr, seed=seed, threads=threads, on_start=lambda split, n: bar.reset(task, total=n, description=f"candidates {split}"),
            on_progress=lambda n: bar.advance(task, n), on_examples=on_examples, on_epoch=on_epoch)
        bar.update(task, visible=False)
        console.print(f"best epoch {result.best_epoch}: val answer Hit@1 {result.best_val_hit1:.4f}, Macro-F1 {result.best_val_f1:.4f} "
                      f"(mean over the files); {result.train_questions} training questions ({result.skipped_no_positive} without a positive "
                      f"skipped); checkpoint {escape(str(ckpt.path))}", highlight=False)
        if not tune_per_file:
            return
        if portable:  # λ1, θ weigh a graph's own structural reasoner: a portable ranker answers alone, weighed by its answers' closeness
            tune_task = bar.add_task("answer closeness weight on val", total=None)
            pairs = [(by_uri[u], q) for u, q in zip(on or [settings.neo4j_uri] * len(questions), questions)]
            answering = choose_closeness_weight(ckpt, pairs, per_file=tune_per_file, on_start=lambda n: bar.update(tune_task, total=n),
                                                on_progress=lambda n: bar.advance(tune_task, n))
            bar.update(tune_task, visible=False)
            console.print(f"answer closeness weight {answering['closeness_weight']} (chosen on val: the mean Hit@1 over the files, "
                          f"then Macro-F1)", highlight=False)
            return
        tune_task = bar.add_task("tune mode, λ1, θ on val", total=None)
        tuned = tune_ranker_and_store(graph, settings, ckpt, questions, per_file=tune_per_file, on_start=lambda n: bar.update(tune_task, total=n),
                                      on_progress=lambda n: bar.advance(tune_task, n))
    _print_tuned(tuned)


def _print_tuned(tuned: dict) -> None:
    """The answering settings `structural.tune_answering` chose, and the val ablation they were chosen on."""
    from kgdb.pipeline.structural import ABLATIONS

    table = Table("mode (val, entity ids)", "n", "Hit@1", "Macro-F1", "reachable %",
                  title=f"λ1 {tuned['lambda1']}, θ {tuned['theta']}, answering mode {tuned['mode']}, answer closeness weight "
                        f"{tuned['answering']['closeness_weight']} (chosen on val)")
    for mode in ABLATIONS:
        m = tuned["ablation_val"][mode]
        table.add_row(mode, str(m["n"]), f"{m['hit1']:.2f}", f"{m['macro_f1']:.2f}", f"{m['reachable']:.2f}")
    console.print(table)


def _train_structural(ctx, settings, questions: list[Path], *, name, max_epochs, patience, lr, seed, threads, steps, resume, max_val,
                      tune_per_file) -> None:
    from kgdb.pipeline.structural import tune_and_store, train_structural

    def on_examples(split: str, n: int, used: int, counts: dict) -> None:
        console.print(f"{split}: {used} of {n} questions have a training subgraph holding an answer "
                      f"({counts['no_path']} without a relation path, {counts['no_answer_in_subgraph']} answer cut by the frontier cap)",
                      highlight=False)

    with open_graph(ctx) as graph, progress() as bar:
        steps_task = bar.add_task("epoch 1", total=None)
        state = {"epoch": 1}

        def on_epoch(log) -> None:
            console.print(f"epoch {log.epoch}: loss {log.loss:.4f}, val Hit@1 {log.val_hit1:.4f}, {log.seconds:.1f} s")
            state["epoch"] = log.epoch + 1
            bar.reset(steps_task, description=f"epoch {log.epoch + 1}")

        ckpt, result = train_structural(graph, settings, questions, name=name, steps=steps, max_epochs=max_epochs, patience=patience, lr=lr,
                                        seed=seed, threads=threads, resume=resume, max_val=max_val or 1000, on_examples=on_examples,
                                        on_step=lambda loss: bar.advance(steps_task), on_epoch=on_epoch)
        bar.update(steps_task, visible=False)
        console.print(f"best epoch {result.best_epoch}: val Hit@1 {result.best_val_hit1:.4f}; {result.train_questions} training subgraphs; "
                      f"checkpoint {escape(str(ckpt.path))}", highlight=False)
        if not tune_per_file:
            return
        tune_task = bar.add_task("tune λ1, θ, closeness weight on val", total=None)
        try:
            tuned = tune_and_store(graph, settings, ckpt, questions, per_file=tune_per_file, on_start=lambda n: bar.update(tune_task, total=n),
                                   on_progress=lambda n: bar.advance(tune_task, n))
        except KgdbError as exc:
            console.print(f"[yellow]rethinking not tuned:[/] {escape(str(exc))}", highlight=False)
            return
    _print_tuned(tuned)
