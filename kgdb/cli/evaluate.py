"""`kgdb eval qa` (QA metrics of the answering pipeline on a question set) and `kgdb eval rrp` (RRP's ablation without an LLM)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from kgdb.cli.ask import ESCALATE_HELP, PLANNER_HELP, RETRIEVER_HELP, check_choice
from kgdb.cli.common import (
    CAP_HELP,
    QUESTIONS_HELP,
    SAMPLE_HELP,
    console,
    eval_app,
    open_graph,
    progress,
    settings_from,
)
from kgdb.config import dump_json
from kgdb.data.questions import read_questions, subsample
from kgdb.errors import InputError
from kgdb.qa.planners import DEFAULT_PLANNER, build_planner, require_planner_ready
from kgdb.qa.prompts import FORMATS
from kgdb.qa.reasoners import reasoner_choices, reasoner_help

REASONER_HELP = reasoner_help("an LLM when KGDB_LLM_MODEL is set, else extractive; rrp with relation paths")


@eval_app.command("qa")
def eval_qa(
    ctx: typer.Context,
    questions: Path = typer.Option(..., "--questions", help="WebQSP questions.jsonl or MetaQA k-hop/qa.txt."),
    split: Optional[str] = typer.Option(
        None,
        "--split",
        help="train | val | test | all (fixed hash split, see kgdb.data.questions); default test when splits/ has the dataset, else all.",
    ),
    retriever: Optional[str] = typer.Option(None, "--retriever", help=RETRIEVER_HELP),
    checkpoint: Optional[str] = typer.Option(None, "--checkpoint", help="Retriever checkpoint name or folder."),
    reasoner: str = typer.Option("extractive", "--reasoner", help=REASONER_HELP),
    planner: str = typer.Option(DEFAULT_PLANNER, "--planner", help=PLANNER_HELP),
    k: int = typer.Option(100, "--k", help="Triples kept from the retriever (top-K)."),
    fmt: str = typer.Option("triples", "--format", help="Evidence in the prompt: triples | chains | paths."),
    hops: Optional[int] = typer.Option(
        None, "--hops", help="Radius of the topic-centred subgraph (default: the checkpoint's, else 2)."
    ),
    cap: Optional[int] = typer.Option(None, "--cap", min=1, help=CAP_HELP),
    chain_hops: int = typer.Option(2, "--chain-hops", help="Longest evidence chain (ReG's L)."),
    concurrency: int = typer.Option(4, "--concurrency", help="Questions in flight at once."),
    limit: Optional[int] = typer.Option(
        None, "--limit", help="Only the first N questions of the split (a documented subsample)."
    ),
    sample: Optional[int] = typer.Option(None, "--sample", help=SAMPLE_HELP),
    match: str = typer.Option(
        "subgraphrag", "--match", help="Answer matching: subgraphrag | strict | e.g. subgraphrag,-substring."
    ),
    write: Optional[bool] = typer.Option(
        None, "--write/--no-write", help="Write scores back as runs (default: only for chains/paths)."
    ),
    out: Optional[Path] = typer.Option(
        None,
        "--out",
        help="Results folder (default runs/qa/<dataset>-<file sha8>-<split>-<retriever>-<reasoner>-<format>).",
    ),
    escalate_below: Optional[float] = typer.Option(None, "--escalate-below", min=0.0, max=1.0, help=ESCALATE_HELP),
) -> None:
    """QA metrics (Hit, Hit@1, Macro/Micro-F1, answer recall, Score_h) on a question set; resumable.

    The method asked for is the method evaluated: what answers is the answering policy's plan
    (`kgdb ask --explain` shows it), except that a retriever without a checkpoint for this graph runs
    only with its own checkpoint shipped with kgdb, with a warning, else stops the run (no other
    method stands in); the plan and every warning are recorded in settings.json.
    """
    from kgdb.cypher.linking import existing_entities
    from kgdb.data.questions import default_split, file_tag, read_questions, subsample
    from kgdb.qa.ask import AskPipeline
    from kgdb.qa.evaluate import evaluate_qa, read_done
    from kgdb.qa.metrics import MatchRules

    check_choice(fmt, FORMATS, "--format")
    check_choice(reasoner, reasoner_choices(), "--reasoner")
    try:
        rules = MatchRules.parse(match)
    except ValueError as exc:
        raise InputError(str(exc), path="--match") from exc
    qs = read_questions(questions)
    split = split or default_split(qs.dataset)
    selected = subsample(qs.split(split), limit=limit, sample=sample)
    if not selected:
        raise InputError(f"no questions in split {split!r}", path=questions)
    settings = settings_from(ctx)
    require_planner_ready(planner, settings)
    write = fmt != "triples" if write is None else write
    with open_graph(ctx) as graph:
        # The method asked for is the method evaluated: only its own shipped checkpoint may stand in.
        pipe = AskPipeline(
            graph,
            settings,
            retriever=retriever,
            checkpoint=checkpoint,
            reasoner=reasoner,
            planner=planner,
            fmt=fmt,
            k=k,
            hops=hops,
            cap=cap,
            escalate_below=escalate_below,
            chain_hops=chain_hops,
            write=write,
            chains=fmt != "triples",
            fallback=False,
        )
        plan = pipe.plan
        # never resumed into the default planner's results
        planned = f"-{planner}-planner" if planner != DEFAULT_PLANNER else ""
        name = f"{qs.dataset}-{file_tag(questions)}-{split}-{pipe.retrieval.name}{planned}-{pipe.reasoner.name.split(':')[0]}-{fmt}"
        out = out or settings.runs_dir / "qa" / name
        for note in [*plan.notes, *pipe.retrieval_settings().get("notes", [])]:
            console.print(f"[yellow]warning:[/] {escape(note)}", highlight=False)
        console.print(
            f"{len(selected)} {split} questions of {escape(qs.dataset)} ({escape(str(questions))}); retriever {pipe.retrieval.name}, "
            f"reasoner {pipe.reasoner.name}{' (no LLM)' if not pipe.reasoner.uses_llm else ''}, format {fmt}, k {k}; "
            f"results in {escape(str(out))}",
            highlight=False,
        )

        def in_kg(q):
            return existing_entities(graph, q.answers)

        with progress() as bar:
            task = bar.add_task("eval qa", total=len(selected))
            done = read_done(out / "results.jsonl")
            already = sum(1 for q in selected if q.id in done)
            if already:
                console.print(f"resuming: {already} question(s) already in {out / 'results.jsonl'}")
                bar.advance(task, already)
            metrics = evaluate_qa(
                pipe,
                selected,
                out,
                concurrency=concurrency,
                rules=rules,
                run_settings={
                    "questions": str(questions),
                    "split": split,
                    "limit": limit,
                    "sample": sample,
                    "dataset": qs.dataset,
                },
                on_done=lambda rec: bar.advance(task),
                answer_in_kg=in_kg,
            )
    print_metrics(metrics, title=f"QA: {qs.dataset} {split} ({pipe.retrieval.name} + {pipe.reasoner.name})")
    console.print(f"results: {out / 'results.jsonl'}, metrics: {out / 'metrics.json'}", highlight=False)


COLUMNS = (
    ("n", "n", "{:.0f}"),
    ("hit", "Hit", "{:.2f}"),
    ("hit1", "Hit@1", "{:.2f}"),
    ("macro_f1", "Macro-F1", "{:.2f}"),
    ("micro_f1", "Micro-F1", "{:.2f}"),
    ("answer_recall", "Ans.recall", "{:.2f}"),
    ("score_h", "Score_h", "{:.2f}"),
)


def print_metrics(metrics: dict, title: str) -> None:
    table = Table(title=title)
    table.add_column("subset")
    for _, label, _ in COLUMNS:
        table.add_column(label, justify="right")
    rows = [("all", metrics["overall"])] + list(metrics.get("by_hop", {}).items())
    for name, m in rows:
        table.add_row(name, *[(fmt.format(m[key]) if m.get(key) is not None else "-") for key, _, fmt in COLUMNS])
    console.print(table)
    tok = metrics.get("tokens", {})
    console.print(
        f"avg prompt tokens {tok.get('avg_prompt_tokens', 0):.1f}, avg completion tokens "
        f"{tok.get('avg_completion_tokens', 0):.1f}, LLM calls {tok.get('llm_calls', 0)}; "
        f"gold answers in the retrieved evidence: {metrics.get('evidence_answer_recall') or 0:.2f}%; "
        f"errors {metrics.get('errors')}",
        highlight=False,
    )
    planner = tok.get("planner")
    if planner:  # `--planner llm`
        console.print(
            f"LLM planner: avg prompt tokens {planner['avg_prompt_tokens']:.1f}, avg completion tokens "
            f"{planner['avg_completion_tokens']:.1f}, calls {planner['llm_calls']}",
            highlight=False,
        )
    print_confidence(metrics.get("confidence"))
    routes = metrics.get("escalation")
    if routes:
        console.print(
            f"escalation below {routes['below']}: {routes['escalated']} of {routes['n']} questions "
            f"({routes['share']:.1f}%) went to the LLM, Hit@1 {routes['hit1_escalated']:.2f} there and "
            f"{routes['hit1_kept']:.2f} on the rest without it; {routes['prompt_tokens']} prompt tokens in all",
            highlight=False,
        )


@eval_app.command("rrp")
def eval_rrp(
    ctx: typer.Context,
    questions: Annotated[Path, typer.Option("--questions", help=QUESTIONS_HELP)],
    split: Annotated[
        Optional[str],
        typer.Option(
            "--split",
            help="val (default) or test (once, with the final settings), train or all; a file whose ids are not in splits/ is evaluated whole.",
        ),
    ] = None,
    limit: Annotated[
        Optional[int], typer.Option("--limit", help="First N questions of the split (a fixed prefix).")
    ] = None,
    sample: Annotated[Optional[int], typer.Option("--sample", help=SAMPLE_HELP)] = None,
    checkpoint: Annotated[
        Optional[str],
        typer.Option(
            "--checkpoint",
            help="Planner or path-ranker checkpoint (default: the newest ranker for this graph, else the newest planner).",
        ),
    ] = None,
    structural: Annotated[
        Optional[str], typer.Option("--structural", help="Structural checkpoint (default: newest for this graph).")
    ] = None,
    planner: Annotated[str, typer.Option("--planner", help=PLANNER_HELP)] = DEFAULT_PLANNER,
    out: Annotated[Optional[Path], typer.Option("--out", help="JSON results file.")] = None,
    linked: Annotated[
        bool, typer.Option("--linked", help="Link every question's topics from its text instead of the file's.")
    ] = False,
    rows_file: Annotated[
        Optional[Path],
        typer.Option(
            "--rows",
            help="Also write each question's candidate answers and their features (`kgdb train answer-model`).",
        ),
    ] = None,
) -> None:
    """RRP's ablation (the paper's Table V without an LLM): planner only, structural only, both
    without rethinking, both with rethinking, from one retrieval pass per question; Hit, Hit@1 and
    Macro-F1 on answer entity ids, the share of questions whose gold answer ends a candidate path, and
    seconds per question of the retrieval pass."""
    import time
    from itertools import pairwise

    from kgdb.data.questions import file_tag
    from kgdb.rrp.model_choice import relation_path_retriever
    from kgdb.rrp.report import choose_split, planner_usage, rrp_rows, summarise
    from kgdb.rrp.structural import ABLATIONS, gather_questions

    settings = settings_from(ctx)
    require_planner_ready(planner, settings)
    qs = read_questions(questions)
    split, split_note = choose_split(qs, split)
    if split_note:
        console.print(f"[yellow]note:[/] {escape(split_note)}", highlight=False)
    records = subsample(qs.split(split), limit=limit, sample=sample)
    if not records:
        raise InputError(f"no questions in split {split!r}", path=questions)
    with open_graph(ctx) as graph:
        chosen = build_planner(planner, graph, settings, checkpoint)
        # no structural reasoner for the graph (e.g. the portable ranker on a graph nothing was trained on): the planner row only
        retriever = relation_path_retriever(
            graph, settings, checkpoint=checkpoint, write=False, structural=structural, planner=chosen
        )
        stamps = [time.perf_counter()]

        def done(n: int) -> None:  # one call per question, right after its retrieval pass
            stamps.append(time.perf_counter())
            bar.advance(task, n)

        with progress() as bar:
            task = bar.add_task(f"rrp {split}", total=len(records))
            items = gather_questions(retriever, records, done, linked=linked)
    seconds = [b - a for a, b in pairwise(stamps)]
    usage = planner_usage(items)
    lam, theta = retriever.lambda1, retriever.theta
    rows = {
        m: summarise(rrp_rows(items, m, lam, theta, seconds, model=retriever.answer_model))
        for m in (ABLATIONS if retriever.structural is not None else ABLATIONS[:1])
    }
    _print_ablation(rows, f"RRP ablation, {escape(qs.dataset)} {split} (λ1 {lam}, θ {theta})")
    print_confidence(rows[retriever.mode].get("confidence"))
    for note in retriever.notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    if usage:
        console.print(
            f"LLM planner: {usage['calls']} call(s), {usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion tokens"
        )
    if rows_file is not None:
        from kgdb.rrp.answer_training import answer_rows

        with rows_file.open("w", encoding="utf-8") as sink:
            for rec in answer_rows(items, retriever.mode, lam, theta, split):
                sink.write(json.dumps(rec, sort_keys=True) + "\n")
        console.print(f"answer rows {escape(str(rows_file))}", highlight=False)
    planned = f"-{planner}-planner" if planner != DEFAULT_PLANNER else ""
    path = out or settings.runs_dir / "eval" / f"rrp-ablation-{qs.dataset}-{file_tag(questions)}{planned}-{split}.json"
    dump_json(
        {
            "dataset": qs.dataset,
            "split": split,
            "split_note": split_note,
            "limit": limit,
            "sample": sample,
            **retriever.describe(),
            "rows": rows,
            "planner_usage": usage,
        },
        path,
    )
    console.print(f"results {escape(str(path))}", highlight=False)


def print_confidence(figures: dict | None) -> None:
    """AUROC and ECE of the first answer's confidence, the risk-coverage table and what "not sure" marks."""
    if not figures:
        return
    auroc = "-" if figures["auroc"] is None else f"{figures['auroc']:.3f}"
    line = f"confidence of the first answer: AUROC {auroc}, ECE (15 bins) {figures['ece']:.3f}"
    if figures.get("threshold") is not None:
        wrong, right = figures.get("unsure_wrong"), figures.get("unsure_right")
        line += (
            f'; "not sure" below {figures["threshold"]:.2f} marks '
            + (f"{wrong:.1f}% of wrong first answers" if wrong is not None else "no wrong first answer (none)")
            + (f" and {right:.1f}% of right ones" if right is not None else "")
        )
    console.print(line, highlight=False)
    table = Table(title="Risk-coverage: Hit@1 of the most confident questions")
    for coverage in figures["risk_coverage"]:
        table.add_column(f"{coverage}%", justify="right")
    table.add_row(*(f"{hit:.2f}" for hit in figures["risk_coverage"].values()))
    console.print(table)


def _print_ablation(rows: dict[str, dict], title: str) -> None:
    """The ablation table, and the retrieval pass's seconds per question (shared by every mode)."""
    table = Table(
        "mode",
        "n",
        "Hit",
        "Hit@1",
        "Macro-F1",
        "reachable %",
        "s/question",
        title=title,
    )
    for mode, m in rows.items():
        table.add_row(
            mode,
            str(m["n"]),
            f"{m['hit']:.2f}",
            f"{m['hit1']:.2f}",
            f"{m['macro_f1']:.2f}",
            f"{m['reachable']:.2f}",
            f"{m['seconds_mean']:.3f}",
        )
    console.print(table)
    first = next(iter(rows.values()))
    console.print(
        f"seconds per question (one retrieval pass for every mode): mean {first['seconds_mean']:.3f}, p50 "
        f"{first['seconds_p50']:.3f}, p95 {first['seconds_p95']:.3f}; retrieval failed for {first['failed']}",
        highlight=False,
    )
