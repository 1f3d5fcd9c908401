"""`kgdb retrievers`, `kgdb retrieve` and `kgdb eval retrieval`: the registered retrievers, one question's
(or a file's) scored triples written back, and recall of a split."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Optional, cast

import typer
from rich.markup import escape
from rich.table import Table

from kgdb.cli import app
from kgdb.cli.common import (
    CAP_HELP,
    QUESTIONS_HELP,
    SAMPLE_HELP,
    console,
    eval_app,
    open_graph,
    progress,
    report_split,
    settings_from,
)
from kgdb.config import dump_json
from kgdb.data.questions import read_questions, subsample
from kgdb.errors import DatabaseError, InputError, KgdbError
from kgdb.models.default import SHIPPED_FOLDER
from kgdb.private_files import private_dir, write_private_text


@app.command("retrievers")
def list_retrievers() -> None:
    """The registered retrievers: what each learns from and what it returns; then the question-level ones."""
    from kgdb.models import registry
    from kgdb.qa.question_retrievers import QUESTION_RETRIEVERS

    table = Table("name", "trainable", "labels", "returns", "settings", "description")
    for rname, cls in registry.RETRIEVERS.items():
        fields = ", ".join(f"{f.name}={f.default}" for f in dataclasses.fields(cls.Config)) or "-"
        table.add_row(rname, "yes" if cls.trainable else "no", cls.label_kind, cls.returns, fields, cls.description)
    console.print(table)
    questions = Table("name", "description", title="Question-level retrievers (kgdb ask --retriever NAME)")
    for qname, kind in QUESTION_RETRIEVERS.items():
        questions.add_row(qname, kind.summary)
    console.print(questions)


@app.command("retrieve")
def retrieve(
    ctx: typer.Context,
    question: Optional[str] = typer.Argument(None, help="The question (omit with --questions)."),
    retriever: str = typer.Option(
        "subgraphrag", "--retriever", help="A registered retriever (`kgdb retrievers` lists them)."
    ),
    checkpoint: Optional[str] = typer.Option(
        None, "--checkpoint", help="Checkpoint name or folder (default: newest for this graph)."
    ),
    k: int = typer.Option(100, "--k", help="Triples to keep and write back."),
    topic: Optional[list[str]] = typer.Option(
        None, "--topic", help="Topic entity name or id (repeatable); default: link from the question."
    ),
    hops: Optional[int] = typer.Option(None, "--hops", help="Subgraph radius (default: the checkpoint's, else 2)."),
    cap: Optional[int] = typer.Option(None, "--cap", min=1, help=CAP_HELP),
    show: int = typer.Option(20, "--show", help="Top triples to print."),
    write: bool = typer.Option(True, "--write/--no-write", help="Write the scores back as a retrieval run."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    questions: Optional[Path] = typer.Option(None, "--questions", help="Batch mode: " + QUESTIONS_HELP),
    split: str = typer.Option("all", "--split", help="Batch mode: train, val, test or all."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Batch mode: first N questions."),
    threads: int = typer.Option(1, "--threads", help="CPU threads for scoring (0: torch's default)."),
) -> None:
    """Link (or take) topics, fetch the subgraph, score every triple, keep the top K, write back.

    A trainable retriever without a checkpoint for this graph is served as `kgdb ask` serves it: by
    a checkpoint shipped with kgdb (or the cosine baseline), and every result says so."""
    from kgdb.pipeline import QuestionInput
    from kgdb.pipeline.model_choice import Fallback

    settings = settings_from(ctx)
    if (question is None) == (questions is None):
        raise InputError("give either a QUESTION or --questions FILE")
    with open_graph(ctx) as graph:
        pipe = chosen_pipeline(
            graph,
            settings,
            retriever,
            checkpoint,
            Fallback.STAND_IN,
            k=k,
            hops=hops,
            cap=cap,
            write=write,
            threads=threads or None,
        )
        if question is not None:
            result = pipe.retrieve(question, topic or None)
            if as_json:
                print(json.dumps(result.to_json(), indent=2))
            else:
                _print_result(result, show, pipe)
            return
        records = read_questions(cast(Path, questions)).split(split)[:limit]  # the check above: one of the two
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


def chosen_pipeline(graph, settings, retriever: str, checkpoint: Optional[str], fallback, **options):
    """`RetrievePipeline` with the checkpoint the one rule chooses (`kgdb.pipeline.model_choice`):
    `fallback` says what may stand in (an evaluation measures the method it names)."""
    from kgdb.pipeline import RetrievePipeline
    from kgdb.pipeline.model_choice import GraphFacts, choose_retriever_model

    choice = choose_retriever_model(GraphFacts.of(graph), settings, retriever, checkpoint, fallback)
    return RetrievePipeline(graph, settings, choice.retriever, choice.checkpoint, note=choice.note, **options)


def _print_result(result, show: int, pipe) -> None:
    table = Table("rank", "head", "relation", "tail", "score", title=escape(result.question))
    for t in result.top[:show]:
        table.add_row(str(t.rank), escape(t.head), escape(t.relation), escape(t.tail), f"{t.score:.4f}")
    console.print(table)
    if result.paths:  # a path retriever: its reasoning paths, most probable first
        paths = Table("p", "path", title="paths")
        for p in result.paths[:show]:
            paths.add_row(f"{p.score:.3f}", escape(p.render()))
        console.print(paths)
    ckpt = f" ({escape(pipe.checkpoint.name)})" if pipe.checkpoint else ""
    timing = ", ".join(f"{s} {v:.1f}" for s, v in result.timings.items())
    for note in result.notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    console.print(
        f"{result.retriever}{ckpt}: topics {escape(', '.join(result.topics))}; {result.subgraph.num_triples} candidate triples, "
        f"kept {len(result.top)}; run [bold]{escape(result.run or '(not written)')}[/]\ntimings ms: {timing}",
        highlight=False,
    )


@eval_app.command("retrieval")
def eval_retrieval(
    ctx: typer.Context,
    questions: Path = typer.Option(..., "--questions", help=QUESTIONS_HELP),
    retriever: list[str] = typer.Option(
        ["subgraphrag"], "--retriever", help="Repeatable; any registered retriever (`kgdb retrievers`)."
    ),
    checkpoint: Optional[str] = typer.Option(None, "--checkpoint"),
    split: Optional[str] = typer.Option(
        None, "--split", help="train | val | test | all; default test when splits/ has the dataset, else all."
    ),
    hops: Optional[int] = typer.Option(None, "--hops", help="Subgraph radius (default: the checkpoint's, else 2)."),
    cap: Optional[int] = typer.Option(None, "--cap", min=1, help=CAP_HELP),
    limit: Optional[int] = typer.Option(None, "--limit", help="First N questions of the split."),
    sample: Optional[int] = typer.Option(None, "--sample", help=SAMPLE_HELP),
    write: bool = typer.Option(True, "--write/--no-write", help="Write back scores (timed) as retrieval runs."),
    out: Optional[Path] = typer.Option(
        None, "--out", help="Results folder (default: the checkpoint's, else runs/eval)."
    ),
    threads: int = typer.Option(1, "--threads", help="CPU threads for scoring (0: torch's default)."),
    setting: Optional[list[str]] = typer.Option(
        None,
        "--set",
        help="An inference setting KEY=VALUE of the last --retriever (repeatable), e.g. max_triples=50 for rapl.",
    ),
) -> None:
    """Answer and shortest-path-triple recall@50/100/200, per hop, with the stage timings."""
    from kgdb.data.questions import default_split, file_tag
    from kgdb.pipeline.model_choice import Fallback
    from kgdb.pipeline.trainable import parse_pairs
    from kgdb.qa.evaluate import kgdb_version
    from kgdb.training.evaluation import evaluate

    settings = settings_from(ctx)
    split = split or default_split(read_questions(questions).dataset)
    reports = []
    with open_graph(ctx) as graph:
        inference = parse_pairs(setting or [])
        pipes = [
            chosen_pipeline(
                graph,
                settings,
                name,
                checkpoint if name != "cosine" else None,
                Fallback.SHIPPED,
                hops=hops,
                cap=cap,
                write=write,
                threads=threads or None,
                inference=inference if name == retriever[-1] else None,
            )
            for name in retriever
        ]
        # Every retriever is scored on the same subgraphs: the checkpoint's radius and serving cap unless given.
        reference = next((p for p in pipes if p.checkpoint is not None), pipes[0])
        hops = reference.hops if hops is None else hops
        cap = reference.cap if cap is None else cap
        for pipe in pipes:
            pipe.hops, pipe.cap = hops, cap
        for pipe in pipes:
            for note in pipe.notes:
                console.print(f"[yellow]warning:[/] {escape(note)}", highlight=False)
        qs, records, cached = load_split(graph, settings, questions, split, hops, cap, limit, sample)
        console.print(
            f"evaluating split {split}: {len(records)} questions of {escape(str(questions))}", highlight=False
        )
        if cached.errors:
            console.print(
                f"[yellow]warning:[/] {len(cached.errors)} subgraph fetches failed: those questions are not "
                "recorded and are evaluated when the same command runs again",
                highlight=False,
            )
        for name, pipe in zip(retriever, pipes):
            # Results go next to the checkpoint they measure, except a shipped one: the installed package is not ours to write.
            beside = pipe.checkpoint is not None and pipe.checkpoint.path.parent != SHIPPED_FOLDER
            folder = out or (pipe.checkpoint.path if beside else settings.runs_dir / "eval")
            # the cap and radius are in the name: evaluations at other settings resume separately
            path = folder / f"eval-{qs.dataset}-{file_tag(questions)}-{split}-{name}-cap{cap}-hops{hops}.json"
            run_settings = {
                **pipe.describe(),
                "questions_file": str(questions),
                "split": split,
                "limit": limit,
                "sample": sample,
                "write": write,
            }
            report = _evaluate_resumably(graph, pipe, records, cached, run_settings, path, qs.dataset, split, evaluate)
            record = {**report.to_json(), **run_settings, "hops": hops, "cap": cap, "kgdb_version": kgdb_version()}
            dump_json(record, path)
            reports.append((report, path))
    _print_reports(reports)


# What must match for a rerun to resume a results log rather than mix two evaluations in it.
RESUME_KEYS = (
    "retriever",
    "checkpoint",
    "graph",
    "hops",
    "cap",
    "k",
    "inference_settings",
    "split",
    "limit",
    "sample",
    "write",
)


def _evaluate_resumably(
    graph, pipe, records, cached, run_settings: dict, path: Path, dataset: str, split: str, evaluate
):
    """`evaluate` with one JSON line per question in `<results>.jsonl` beside the results file: a rerun
    after a crash or a lost server skips the questions already there, and each question's write-back
    run is named after the log, so asking one again replaces its run instead of adding one."""
    import hashlib

    from kgdb.cypher.writeback import eval_run_id
    from kgdb.qa.evaluate import database_error, open_results, read_done

    log = path.with_suffix(".jsonl")
    done = read_done(log, recompute=())
    header = _log_header(log)
    if done and header is not None:
        changed = [k for k in RESUME_KEYS if header.get(k) != run_settings.get(k)]
        if changed:
            raise InputError(
                f"holds results of a different evaluation ({', '.join(changed)} differ); delete it or use "
                "another --out",
                path=log,
            )
    wanted = {q.id for q in records}
    already = sum(1 for qid in done if qid in wanted)
    if already:
        console.print(f"resuming: {already} of {len(records)} questions already in {escape(str(log))}", highlight=False)
    tag = hashlib.sha256(str(log.resolve()).encode()).hexdigest()[:8]
    if not done:  # a fresh log starts with the settings it holds results of
        private_dir(log.parent)
        write_private_text(log, json.dumps({"settings": run_settings}, sort_keys=True, default=str) + "\n")
    with open_results(log) as fh, progress() as bar:
        task = bar.add_task(f"eval {pipe.name}", total=len(records))

        def keep(rec: dict) -> None:
            fh.write(json.dumps(rec, sort_keys=True, default=float) + "\n")
            fh.flush()

        try:
            return evaluate(
                pipe,
                records,
                cached.items,
                dataset=dataset,
                split=split,
                on_progress=lambda n: bar.advance(task, n),
                done=done,
                on_record=keep,
                run_id=lambda qid: eval_run_id(pipe.name, qid, tag),
                fetch_failed=bool(cached.errors),
            )
        except KgdbError as exc:
            if (lost := database_error(graph, exc)) is None:
                raise
            fh.flush()
            kept = len(read_done(log, recompute=()).keys() & wanted)
            raise DatabaseError(
                f"{' '.join(str(lost).split())}; evaluation stopped: {kept} of {len(records)} questions are "
                f"kept in {log}; run the same command again to resume"
            ) from exc


def _log_header(log: Path) -> dict | None:
    """The settings a results log was started with (its first line), or None."""
    if not log.is_file():
        return None
    with log.open(encoding="utf-8") as fh:
        try:
            first = json.loads(fh.readline() or "null")
        except json.JSONDecodeError:
            return None
    return first.get("settings") if isinstance(first, dict) else None


def _print_reports(reports) -> None:
    # "passed": a path retriever's own adaptive set of triples (mean size in "triples passed")
    table = Table(
        "retriever",
        "bucket",
        "n",
        "ans R@50",
        "ans R@100",
        "ans R@200",
        "SP R@50",
        "SP R@100",
        "SP R@200",
        "ans R passed",
        "SP R passed",
        "triples passed",
    )
    for report, _ in reports:
        for bucket, metrics in report.recall.items():

            def cell(m: str) -> str:
                return f"{metrics[m]['mean']:.3f}" if m in metrics else "-"

            n = metrics.get("answer_recall@100", metrics.get("triple_recall@100", {"n": 0}))["n"]
            table.add_row(
                report.retriever,
                bucket,
                str(n),
                *(cell(f"answer_recall@{k}") for k in (50, 100, 200)),
                *(cell(f"triple_recall@{k}") for k in (50, 100, 200)),
                cell("answer_recall@passed"),
                cell("triple_recall@passed"),
                f"{metrics['triples_passed']['mean']:.1f}" if "triples_passed" in metrics else "-",
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


def load_split(
    graph,
    settings,
    questions: Path,
    split: str,
    hops: int,
    cap: Optional[int],
    limit: Optional[int],
    sample: Optional[int] = None,
):
    """The cached, labelled subgraphs of one split (built with a progress bar on the first run)."""
    from kgdb.pipeline import SplitReport
    from kgdb.pipeline.splits import QuestionFile

    source = QuestionFile.read(graph, settings, questions)
    qs = source.questions
    records = subsample(qs.split(split), limit=limit, sample=sample)  # a fixed subsample either way
    with progress() as bar:
        task = bar.add_task(f"fetch+label {qs.dataset}/{split}", total=None, visible=False)
        result = source.prepare(
            graph,
            settings,
            split,
            records,
            hops=hops,
            cap=cap,
            on_start=lambda total: bar.update(task, total=total, visible=True),
            on_progress=lambda n: bar.advance(task, n),
        )
    report_split(SplitReport(qs.dataset, split, result))
    return qs, records, result
