"""`kgdb splits make`, `kgdb train subgraphrag`, `kgdb retrieve`, `kgdb eval retrieval`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from kgdb.cli import app
from kgdb.cli.common import console, eval_app, open_graph, progress, settings_from
from kgdb.config import dump_json
from kgdb.errors import InputError, KgdbError
from kgdb.models.datasets import SPLITS, read_questions, split_summary

splits_app = typer.Typer(help="Fixed train/val/test splits of the question sets.", no_args_is_help=True)
train_app = typer.Typer(help="Train retrievers on a graph's question set.", no_args_is_help=True)
app.add_typer(splits_app, name="splits")
app.add_typer(train_app, name="train")

QUESTIONS_HELP = "WebQSP-style questions.jsonl or MetaQA k-hop/qa.txt."


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


def _load_split(ctx, graph, settings, questions: Path, split: str, hops: int, cap: Optional[int], limit: Optional[int]):
    """The cached, labelled subgraphs of one split (built with a progress bar on the first run)."""
    from kgdb.embeddings import get_embedder
    from kgdb.models import db
    from kgdb.models.cache import cached_split

    qs = read_questions(questions)
    records = qs.split(split)
    if limit is not None:
        records = records[:limit]  # splits are in file order, so a prefix is a fixed subsample
    fingerprint, info = db.graph_fingerprint(graph)
    model_name = info.get("model") or settings.embedding_model
    embedder = get_embedder(model_name, settings.device, settings.embedding_batch_size)
    with progress() as bar:
        task = bar.add_task(f"fetch+label {qs.dataset}/{split}", total=None, visible=False)
        result = cached_split(
            graph,
            cache_dir=settings.cache_dir,
            dataset=qs.dataset,
            split=split,
            source=questions,
            questions=records,
            embed=embedder.encode,
            graph_fingerprint=fingerprint,
            embedding_model=model_name,
            hops=hops,
            cap=cap,
            on_start=lambda total: bar.update(task, total=total, visible=True),
            on_progress=lambda n: bar.advance(task, n),
        )
    if result.from_disk:
        how = "loaded from cache, database not queried"
    elif result.errors:
        how = f"fetched from the database; NOT cached: {len(result.errors)} fetches failed, first: {result.errors[0]}"
    else:
        how = "fetched from the database and cached"
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(result.counts.items()) if v)
    console.print(f"{qs.dataset}/{split}: {len(result.items)} subgraphs {how} ({result.path}); skipped: {skipped or 'none'}")
    return qs, records, result, fingerprint, model_name


@train_app.command("subgraphrag")
def train_subgraphrag(
    ctx: typer.Context,
    questions: Path = typer.Option(..., "--questions", help=QUESTIONS_HELP),
    name: Optional[str] = typer.Option(None, "--name", help="Checkpoint name (default subgraphrag-<dataset>)."),
    hops: int = typer.Option(2, "--hops", help="Subgraph radius around the topic entities."),
    cap: Optional[int] = typer.Option(None, "--cap", help="Per-node expansion cap (default: the fetch default)."),
    max_epochs: int = typer.Option(50, "--max-epochs", help="Upper bound; early stopping usually ends sooner."),
    patience: int = typer.Option(10, "--patience", help="Epochs without a better val triple recall@100."),
    lr: float = typer.Option(1e-3, "--lr"),
    seed: int = typer.Option(42, "--seed"),
    hidden: int = typer.Option(1024, "--hidden", help="MLP hidden width."),
    max_train: Optional[int] = typer.Option(None, "--max-train", help="Use only the first N training questions."),
    max_val: Optional[int] = typer.Option(None, "--max-val", help="Use only the first N validation questions."),
    threads: Optional[int] = typer.Option(None, "--threads", help="CPU threads for torch (default: torch's choice)."),
) -> None:
    """Train the SubgraphRAG triple scorer on the train split; select on the val split."""
    from kgdb.models.base import TensorTables
    from kgdb.models import db
    from kgdb.models.checkpoints import save_checkpoint
    from kgdb.models.subgraphrag import SubgraphRAG, SubgraphRAGConfig
    from kgdb.models.training import TrainConfig, seed_everything, train

    settings = settings_from(ctx)
    if threads:
        import torch

        torch.set_num_threads(threads)
    cfg = TrainConfig(lr=lr, max_epochs=max_epochs, patience=patience, seed=seed, hidden=hidden)
    with open_graph(ctx) as graph:
        t0 = time.perf_counter()
        qs, _, tr, fingerprint, model_name = _load_split(ctx, graph, settings, questions, "train", hops, cap, max_train)
        _, _, va, _, _ = _load_split(ctx, graph, settings, questions, "val", hops, cap, max_val)
        np_tables = db.load_tables(graph, settings.cache_dir)
        data_seconds = time.perf_counter() - t0
    device = settings.torch_device()
    tables = TensorTables.from_numpy(np_tables.entity, np_tables.relation, np_tables.fingerprint, device)
    seed_everything(seed)
    model = SubgraphRAG(SubgraphRAGConfig(embedding_dim=tables.dim, hidden=hidden)).to(device)
    usable = sum(1 for it in tr.items if it.labels.any())
    if usable == 0 or not va.items:
        raise KgdbError(f"nothing to train on: {usable} training questions with a labelled path, {len(va.items)} validation questions")
    console.print(
        f"training on {usable} questions ({len(tr.items) - usable} without a labelled shortest path skipped), "
        f"validating on {len(va.items)}, device {device}"
    )
    with progress() as bar:
        epoch_task = bar.add_task("epochs (best val R@100 -)", total=cfg.max_epochs)
        step_task = bar.add_task("epoch 1 loss -", total=usable)
        state = {"loss": 0.0, "n": 0, "epoch": 1}

        def on_step(loss: float) -> None:
            state["loss"] += loss
            state["n"] += 1
            bar.update(step_task, advance=1, description=f"epoch {state['epoch']} loss {state['loss'] / state['n']:.4f}")

        def on_epoch(log) -> None:
            best = max(e.val_triple_recall for e in result_logs + [log])
            result_logs.append(log)
            console.print(
                f"epoch {log.epoch}: loss {log.loss:.4f}, val triple R@100 {log.val_triple_recall:.4f}, "
                f"val answer R@100 {log.val_answer_recall:.4f}, {log.seconds:.1f} s ({log.cpu_seconds:.1f} s CPU)"
            )
            bar.update(
                epoch_task,
                advance=1,
                description=f"epochs (val R@100 {log.val_triple_recall:.3f}, ans {log.val_answer_recall:.3f}, best {best:.3f})",
            )
            state.update(loss=0.0, n=0, epoch=log.epoch + 1)
            bar.reset(step_task, total=usable, description=f"epoch {log.epoch + 1} loss -")

        result_logs: list = []
        model, result = train(model, tr.items, va.items, tables, cfg, on_step=on_step, on_epoch=on_epoch)
    name = name or f"subgraphrag-{qs.dataset}"
    out = settings.checkpoints_dir / name
    epoch_seconds = [e.seconds for e in result.epochs]
    save_checkpoint(
        model,
        out,
        {
            "embedding_model": model_name,
            "embedding_dim": tables.dim,
            "graph_fingerprint": fingerprint,
            "dataset": qs.dataset,
            "questions": str(questions),
            "fetch": {"hops": hops, "cap": cap},
            "train": {**cfg.__dict__, "max_train": max_train, "max_val": max_val, "device": device},
            "data_cache": {"train": str(tr.path), "val": str(va.path), "train_from_disk": tr.from_disk},
            "data_seconds": round(data_seconds, 2),
            "result": result.to_json(),
            "metrics": {
                "best_epoch": result.best_epoch,
                "val_triple_recall@100": result.best_val_triple_recall,
                "val_answer_recall@100": next(e.val_answer_recall for e in result.epochs if e.epoch == result.best_epoch),
                "epoch_seconds_mean": sum(epoch_seconds) / max(len(epoch_seconds), 1),
                "epoch_cpu_seconds_mean": sum(e.cpu_seconds for e in result.epochs) / max(len(result.epochs), 1),
            },
        },
    )
    console.print(
        f"best epoch {result.best_epoch}: val triple recall@100 {result.best_val_triple_recall:.4f}; "
        f"{len(result.epochs)} epochs, {sum(epoch_seconds) / max(len(epoch_seconds), 1):.1f} s/epoch; "
        f"checkpoint {out}"
    )


@app.command("retrieve")
def retrieve(
    ctx: typer.Context,
    question: Optional[str] = typer.Argument(None, help="The question (omit with --questions)."),
    retriever: str = typer.Option("subgraphrag", "--retriever", help="subgraphrag or cosine."),
    checkpoint: Optional[str] = typer.Option(None, "--checkpoint", help="Checkpoint name or folder (default: newest for this graph)."),
    k: int = typer.Option(100, "--k", help="Triples to keep and write back."),
    topic: Optional[list[str]] = typer.Option(None, "--topic", help="Topic entity name or id (repeatable); default: link from the question."),
    hops: Optional[int] = typer.Option(None, "--hops", help="Subgraph radius (default: the checkpoint's, else 2)."),
    cap: Optional[int] = typer.Option(None, "--cap", help="Per-node expansion cap (default: the checkpoint's)."),
    show: int = typer.Option(20, "--show", help="Top triples to print."),
    write: bool = typer.Option(True, "--write/--no-write", help="Write the scores back as a retrieval run."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    questions: Optional[Path] = typer.Option(None, "--questions", help="Batch mode: " + QUESTIONS_HELP),
    split: str = typer.Option("all", "--split", help="Batch mode: train, val, test or all."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Batch mode: first N questions."),
    threads: int = typer.Option(1, "--threads", help="CPU threads for scoring (0: torch's default)."),
) -> None:
    """Link (or take) topics, fetch the subgraph, score every triple, keep the top K, write back."""
    from kgdb.pipeline import QuestionInput, RetrievePipeline

    settings = settings_from(ctx)
    if (question is None) == (questions is None):
        raise InputError("give either a QUESTION or --questions FILE")
    with open_graph(ctx) as graph:
        pipe = RetrievePipeline(graph, settings, retriever, checkpoint, k=k, hops=hops, cap=cap, write=write, threads=threads or None)
        if question is not None:
            result = pipe.run(question, topics=topic or None)
            if as_json:
                print(json.dumps(result.to_json(), indent=2))
            else:
                _print_result(result, show, pipe)
            return
        records = read_questions(questions).split(split)[: limit]
        inputs = [QuestionInput(q.text, q.topics, q.id) for q in records]
        done, failed = 0, 0
        with progress() as bar:
            task = bar.add_task(f"retrieve {retriever}", total=len(inputs))
            for res in pipe.run_batch(inputs):
                bar.advance(task)
                if isinstance(res, KgdbError):
                    failed += 1
                    continue
                done += 1
                if as_json:
                    print(json.dumps(res.to_json()))
        console.print(f"retrieved {done} questions ({failed} failed) with {retriever}, k={k}")


def _print_result(result, show: int, pipe) -> None:
    table = Table("rank", "head", "relation", "tail", "score", title=result.question)
    for t in result.top[:show]:
        table.add_row(str(t.rank), t.head, t.relation, t.tail, f"{t.score:.4f}")
    console.print(table)
    ckpt = f" ({pipe.checkpoint.name})" if pipe.checkpoint else ""
    timing = ", ".join(f"{s} {v:.1f}" for s, v in result.timings.items())
    console.print(
        f"{result.retriever}{ckpt}: topics {', '.join(result.topics)}; {result.subgraph.num_triples} candidate triples, "
        f"kept {len(result.top)}; run [bold]{result.run or '(not written)'}[/]\ntimings ms: {timing}"
    )


@eval_app.command("retrieval")
def eval_retrieval(
    ctx: typer.Context,
    questions: Path = typer.Option(..., "--questions", help=QUESTIONS_HELP),
    retriever: list[str] = typer.Option(["subgraphrag"], "--retriever", help="Repeatable: subgraphrag, cosine."),
    checkpoint: Optional[str] = typer.Option(None, "--checkpoint"),
    split: str = typer.Option("test", "--split"),
    hops: int = typer.Option(2, "--hops"),
    cap: Optional[int] = typer.Option(None, "--cap"),
    limit: Optional[int] = typer.Option(None, "--limit", help="First N questions of the split."),
    write: bool = typer.Option(True, "--write/--no-write", help="Write back scores (timed) as retrieval runs."),
    out: Optional[Path] = typer.Option(None, "--out", help="Results folder (default: the checkpoint's, else runs/eval)."),
    threads: int = typer.Option(1, "--threads", help="CPU threads for scoring (0: torch's default)."),
) -> None:
    """Answer and shortest-path-triple recall@50/100/200, per hop, with the stage timings."""
    from kgdb.models.evaluation import evaluate
    from kgdb.pipeline import RetrievePipeline

    settings = settings_from(ctx)
    reports = []
    with open_graph(ctx) as graph:
        pipes = [
            RetrievePipeline(graph, settings, name, checkpoint if name != "cosine" else None, hops=hops, cap=cap, write=write, threads=threads or None)
            for name in retriever
        ]
        # Every retriever is scored on the same subgraphs: the checkpoint's fetch cap unless --cap is given.
        cap = cap or next((p.cap for p in pipes if p.cap), None)
        for pipe in pipes:
            pipe.cap = cap
        qs, records, cached, _, _ = _load_split(ctx, graph, settings, questions, split, hops, cap, limit)
        for name, pipe in zip(retriever, pipes):
            with progress() as bar:
                task = bar.add_task(f"eval {name}", total=len(records))
                report = evaluate(pipe, records, cached.items, dataset=qs.dataset, split=split, on_progress=lambda n: bar.advance(task, n))
            folder = out or (pipe.checkpoint.path if pipe.checkpoint else settings.runs_dir / "eval")
            path = folder / f"eval-{qs.dataset}-{split}-{name}.json"
            dump_json({**report.to_json(), "questions_file": str(questions), "hops": hops, "cap": cap, "limit": limit}, path)
            reports.append((report, path))
    _print_reports(reports)


def _print_reports(reports) -> None:
    table = Table("retriever", "bucket", "n", "ans R@50", "ans R@100", "ans R@200", "SP R@50", "SP R@100", "SP R@200")
    for report, _ in reports:
        for bucket, metrics in report.recall.items():
            def cell(m: str) -> str:
                return f"{metrics[m]['mean']:.3f}" if m in metrics else "-"

            n = metrics.get("answer_recall@100", metrics.get("triple_recall@100", {"n": 0}))["n"]
            table.add_row(
                report.retriever, bucket, str(n),
                *(cell(f"answer_recall@{k}") for k in (50, 100, 200)),
                *(cell(f"triple_recall@{k}") for k in (50, 100, 200)),
            )
    console.print(table)
    timing = Table("retriever", "stage", "p50 ms", "p95 ms", "mean ms")
    for report, _ in reports:
        for stage, t in report.timings_ms.items():
            timing.add_row(report.retriever, stage, f"{t['p50']:.2f}", f"{t['p95']:.2f}", f"{t['mean']:.2f}")
    console.print(timing)
    for report, path in reports:
        console.print(
            f"{report.retriever}: evaluated {report.evaluated}/{report.questions} {report.dataset}/{report.split} "
            f"questions; skipped {report.skipped}; results {path}"
        )
