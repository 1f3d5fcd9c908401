"""`kgdb ask` (answer one question from the graph, with evidence), `kgdb eval qa` and `kgdb eval rrp` (RRP's ablation without an LLM)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, List, Optional

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from kgdb.cli import app
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
from kgdb.rrp.llm_planner import PLANNERS, require_planner_llm
from kgdb.qa.prompts import FORMATS
from kgdb.qa.reasoners import reasoner_choices, reasoner_help

RETRIEVER_HELP = (
    "A registered retriever (`kgdb retrievers`; a trainable one without a checkpoint for this graph falls back to the "
    "shipped cosine-dde checkpoint, and says so), or relation-paths (RRP: the planner or ranker trained for this graph, "
    "else the portable ranker shipped with kgdb). Default: the answering policy's choice (--explain shows it)."
)
PLANNER_HELP = (
    "Who plans the relation paths of --retriever relation-paths: trained (the trained ranker or planner for this graph) or "
    "llm (the OpenAI-compatible LLM of KGDB_LLM_BASE_URL / KGDB_LLM_MODEL, prompt plan_paths_v1; the trained ranker or planner, else the shipped portable ranker, is its fallback)."
)
REASONER_HELP = reasoner_help("an LLM when KGDB_LLM_MODEL is set, else extractive; rrp with relation paths")
ASK_REASONER_HELP = reasoner_help(
    "an LLM when KGDB_LLM_MODEL is set; else rrp, with the RRP model trained for this graph or the "
    "portable ranker shipped with kgdb, and extractive where neither fits"
)


def _check_choice(value: str, choices: tuple[str, ...] | list[str], option: str) -> str:
    if value not in choices:
        raise InputError(f"{value!r} is not one of {', '.join(choices)}", path=option)
    return value


@app.command()
def ask(
    ctx: typer.Context,
    question: str = typer.Argument(..., help="The question, in plain words."),
    retriever: Optional[str] = typer.Option(None, "--retriever", help=RETRIEVER_HELP),
    checkpoint: Optional[str] = typer.Option(None, "--checkpoint", help="Retriever checkpoint name or folder."),
    k: int = typer.Option(100, "--k", help="Triples kept from the retriever (top-K)."),
    fmt: Optional[str] = typer.Option(
        None,
        "--format",
        help="Evidence in the prompt: triples | chains | paths (default: paths with RRP and an LLM, else triples).",
    ),
    topic: Optional[List[str]] = typer.Option(
        None, "--topic", help="Topic entity name or id (repeatable); default: linked from the question."
    ),
    reasoner: str = typer.Option("auto", "--reasoner", help=ASK_REASONER_HELP),
    planner: str = typer.Option("trained", "--planner", help=PLANNER_HELP),
    hops: Optional[int] = typer.Option(
        None, "--hops", help="Radius of the topic-centred subgraph (default: the checkpoint's, else 2)."
    ),
    cap: Optional[int] = typer.Option(None, "--cap", min=1, help=CAP_HELP),
    chain_hops: int = typer.Option(2, "--chain-hops", help="Longest evidence chain (ReG's L)."),
    write: bool = typer.Option(
        True,
        "--write/--no-write",
        help="Write the scores back as a run (needed for chains, paths and the Browser query).",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON object instead of tables (with the answering plan)."
    ),
    explain: bool = typer.Option(
        False,
        "--explain",
        help="Print which retriever, checkpoint, planner, reasoner and format would answer, and why; answer nothing.",
    ),
    timings: bool = typer.Option(False, "--timings", help="Print the time of each stage."),
    show_prompt: bool = typer.Option(False, "--show-prompt", help="Print the prompt sent to the reasoner."),
    only_browser_query: bool = typer.Option(
        False, "--browser-query", help="Print only the Neo4j Browser query of the run (to pipe or paste)."
    ),
) -> None:
    """Answer a question from the graph, with the evidence each answer rests on."""
    from kgdb.cypher.tables import fingerprint_read_once
    from kgdb.qa.ask import AskPipeline, plan_for

    if not question.strip():
        raise InputError(
            'the question is empty: ask something, e.g. kgdb ask "what is the capital of France?"', path="QUESTION"
        )
    if fmt is not None:
        _check_choice(fmt, FORMATS, "--format")
    _check_choice(reasoner, reasoner_choices(), "--reasoner")
    _check_choice(planner, PLANNERS, "--planner")
    settings = settings_from(ctx)
    if planner == "llm":
        require_planner_llm(settings)  # before the graph is opened: one clear line
    # one question loads no triples: the graph's fingerprint, asked for by every part, is read once
    with open_graph(ctx) as graph, fingerprint_read_once(graph):
        plan = plan_for(
            graph, settings, retriever=retriever, reasoner=reasoner, checkpoint=checkpoint, fmt=fmt, planner=planner
        )
        if explain:
            _print_plan(plan, as_json)
            return
        pipe = AskPipeline(graph, settings, plan=plan, k=k, hops=hops, cap=cap, chain_hops=chain_hops, write=write)
        res = pipe.ask(question, topic or None)
    if only_browser_query:
        if not res.browser_query:
            raise InputError(
                "no run was written, so there is no Browser query; drop --no-write", path="--browser-query"
            )
        print(res.browser_query)  # raw: never wrapped or styled, so it pastes as valid Cypher
    elif as_json:
        print(json.dumps(res.to_json(show_prompt=show_prompt), default=str, indent=2))
    else:
        _print_result(res, timings, show_prompt)
    if res.error:
        raise typer.Exit(1)


def _print_plan(plan, as_json: bool) -> None:
    """`kgdb ask --explain`: the answering plan, nothing answered."""
    if as_json:
        print(json.dumps(plan.to_json(), indent=2))
        return
    table = Table("part", "chosen", "why", title="Answering plan (nothing was answered)")
    for d in plan.decisions:
        table.add_row(d.part, Text(d.value), Text(d.why))
    console.print(table)
    for note in plan.notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)


def _print_result(res, timings: bool, show_prompt: bool) -> None:
    _print_header(res)
    if show_prompt:
        console.rule(f"prompt ({res.prompt.template})")
        console.print(res.prompt.text(), highlight=False, markup=False)
        console.rule()
    if res.error:
        console.print(f"[bold red]reasoner failed:[/] {escape(res.error)}", highlight=False)
        console.print(f"The retrieval still worked; the top {min(10, len(res.evidence_lines))} evidence lines:")
        for line in res.evidence_lines[:10]:
            console.print(f"  {line}", highlight=False, markup=False)
    elif res.reasoning is not None:
        _print_reasoner(res)
        _print_answers(res)
        _print_alternatives(res.reasoning)
    _print_run(res)
    if timings:
        table = Table(title="Timings (ms)")
        table.add_column("stage")
        table.add_column("ms", justify="right")
        for stage, ms in res.timings.items():
            table.add_row(stage, f"{ms:.1f}")
        table.add_row("[bold]total[/]", f"{sum(res.timings.values()):.1f}")
        console.print(table)


def _print_header(res) -> None:
    topics = ", ".join(
        f"{escape(n)} [dim]({escape(i)})[/]" if n != i else escape(n) for n, i in zip(res.topic_names, res.topics)
    )
    console.print(f"[bold]Question:[/] {escape(res.question)}", highlight=False)
    console.print(f"[bold]Topic entities:[/] {topics}", highlight=False)
    where = (
        "triples of the planned relation paths grounded in Cypher"
        if res.retriever == "relation-paths"
        else "of the topic-centred subgraph"
    )
    console.print(f"[bold]Retriever:[/] {res.retriever}, top {res.k} {where}", highlight=False)
    if res.retriever_note:
        console.print(f"[yellow]note:[/] {escape(res.retriever_note)}", highlight=False)
    if res.planner_usage:
        u = res.planner_usage
        console.print(
            f"[bold]Planner:[/] LLM ({escape(u['template'])}), {u['calls']} call(s), {u['prompt_tokens']} prompt + "
            f"{u['completion_tokens']} completion tokens",
            highlight=False,
        )


RRP_PARTS = {
    "planner": "the path ranker or planner",
    "structural": "the structural reasoner",
    "union": "planner and structural reasoner",
    "rethink": "planner, structural reasoner, rethinking",
}


def _print_reasoner(res) -> None:
    r = res.reasoning
    if r.llm_used:
        console.print(
            f"[bold]Reasoner:[/] {escape(r.reasoner)} ({r.calls} call(s), {r.prompt_tokens} prompt + "
            f"{r.completion_tokens} completion tokens)",
            highlight=False,
        )
        return
    mode = (res.retrieval or {}).get("rrp_mode") or "rethink"
    how = (
        f"end entities of the relation paths RRP kept ({RRP_PARTS.get(mode, mode)})"
        if r.reasoner == "rrp"
        else "end points of the best relation path in the evidence"
    )
    console.print(
        f"[bold]Reasoner:[/] {escape(r.reasoner)}: [yellow]no LLM was used[/]; answers are {how}", highlight=False
    )


def _print_answers(res) -> None:
    if not res.answers:
        why = (
            "it said the evidence does not hold the answer"
            if res.reasoning.refused
            else "no answer could be read from its reply"
        )
        console.print(f"[yellow]No answer[/]: {why}.", highlight=False)
        return
    r = res.reasoning
    tied = r.tied_first()
    caption = (
        f"answers 1-{tied} share the best score ({r.scores[r.answers[0]]:.3f}): their order is the answering "
        "rules', not the evidence's"
        if tied > 1
        else None
    )
    table = Table(title="Answers", caption=caption, show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("answer")
    table.add_column("grounded")
    table.add_column("evidence")
    for i, a in enumerate(res.answers, 1):
        mark = "[green]yes[/]" if a.grounded else "[red]NO (not in the retrieved evidence)[/]"
        # Text(): relation names in [brackets] must not be read as rich markup
        table.add_row(str(i), Text(a.answer), mark, Text("\n".join(a.evidence[:2]) or "-"))
    console.print(table)


def _print_alternatives(r) -> None:
    if not r.alternatives:
        return
    top = max(r.scores.values(), default=None)
    table = Table(
        title="Other readings",
        caption="the next relation paths by score; not answers"
        + (f" (the answers' path scored {top:.3f})" if top is not None else ""),
    )
    table.add_column("score", justify="right")
    table.add_column("relation path from the topic")
    table.add_column("reaches")
    for alt in r.alternatives:
        more = f" (+{alt['count'] - len(alt['ends'])} more)" if alt["count"] > len(alt["ends"]) else ""
        table.add_row(f"{alt['score']:.3f}", Text(alt["path"]), Text(", ".join(alt["ends"]) + more))
    console.print(table)


def _print_run(res) -> None:
    if not res.run:
        console.print("[dim]no run written (--no-write)[/]")
        return
    console.print(f"[bold]Run:[/] {escape(res.run)}", highlight=False)
    if res.browser_query:
        console.print(
            "[bold]Neo4j Browser[/] (paste to see the evidence; `--browser-query` prints only this):", highlight=False
        )
        console.file.flush()
        # Plain print: rich would wrap long lines at the terminal width, breaking `//` comments.
        print(res.browser_query, flush=True)


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
    planner: str = typer.Option("trained", "--planner", help=PLANNER_HELP),
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
) -> None:
    """QA metrics (Hit, Hit@1, Macro/Micro-F1, answer recall, Score_h) on a question set; resumable.

    The method asked for is the method evaluated: what answers is the answering policy's plan
    (`kgdb ask --explain` shows it), except that a retriever without a checkpoint for this graph runs
    only with its own checkpoint shipped with kgdb, with a warning, else stops the run (no other
    method stands in); the plan and every warning are recorded in settings.json.
    """
    from kgdb.cypher.linking import existing_entities
    from kgdb.data.questions import default_split, file_tag, read_questions, subsample
    from kgdb.pipeline.model_choice import Fallback
    from kgdb.qa.ask import AskPipeline, plan_for
    from kgdb.qa.evaluate import evaluate_qa, read_done
    from kgdb.qa.metrics import MatchRules

    _check_choice(fmt, FORMATS, "--format")
    _check_choice(reasoner, reasoner_choices(), "--reasoner")
    _check_choice(planner, PLANNERS, "--planner")
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
    if planner == "llm":
        require_planner_llm(settings)
    write = fmt != "triples" if write is None else write
    with open_graph(ctx) as graph:
        # The method asked for is the method evaluated: only its own shipped checkpoint may stand in.
        plan = plan_for(
            graph,
            settings,
            retriever=retriever,
            reasoner=reasoner,
            checkpoint=checkpoint,
            fmt=fmt,
            planner=planner,
            fallback=Fallback.SHIPPED,
        )
        pipe = AskPipeline(
            graph,
            settings,
            plan=plan,
            k=k,
            hops=hops,
            cap=cap,
            chain_hops=chain_hops,
            write=write,
            chains=fmt != "triples",
        )
        planned = "-llm-planner" if planner == "llm" else ""  # never resumed into the trained planner's results
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
    planner: Annotated[
        str,
        typer.Option(
            "--planner",
            help="trained (default) or llm: the OpenAI-compatible LLM of KGDB_LLM_BASE_URL / KGDB_LLM_MODEL plans the relation paths (prompt plan_paths_v1).",
        ),
    ] = "trained",
    out: Annotated[Optional[Path], typer.Option("--out", help="JSON results file.")] = None,
) -> None:
    """RRP's ablation (the paper's Table V without an LLM): planner only, structural only, both
    without rethinking, both with rethinking, from one retrieval pass per question; Hit, Hit@1 and
    Macro-F1 on answer entity ids, the share of questions whose gold answer ends a candidate path, and
    seconds per question of the retrieval pass."""
    import time
    from itertools import pairwise

    from kgdb.data.questions import file_tag
    from kgdb.rrp import relation_path_retriever
    from kgdb.rrp.report import choose_split, planner_usage, rrp_rows, summarise
    from kgdb.rrp.structural import ABLATIONS, gather_questions
    from kgdb.rrp.llm_planner import PLANNERS, llm_planner, require_planner_llm

    if planner not in PLANNERS:
        raise InputError(f"{planner!r} is not one of {', '.join(PLANNERS)}", path="--planner")
    settings = settings_from(ctx)
    if planner == "llm":
        require_planner_llm(settings)
    qs = read_questions(questions)
    split, split_note = choose_split(qs, split)
    if split_note:
        console.print(f"[yellow]note:[/] {escape(split_note)}", highlight=False)
    records = subsample(qs.split(split), limit=limit, sample=sample)
    if not records:
        raise InputError(f"no questions in split {split!r}", path=questions)
    with open_graph(ctx) as graph:
        chosen = llm_planner(graph, settings, checkpoint) if planner == "llm" else None
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
            items = gather_questions(retriever, records, done)
    seconds = [b - a for a, b in pairwise(stamps)]
    usage = planner_usage(items)
    lam, theta = retriever.lambda1, retriever.theta
    rows = {
        m: summarise(rrp_rows(items, m, lam, theta, seconds))
        for m in (ABLATIONS if retriever.structural is not None else ABLATIONS[:1])
    }
    _print_ablation(rows, f"RRP ablation, {escape(qs.dataset)} {split} (λ1 {lam}, θ {theta})")
    for note in retriever.notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    if usage:
        console.print(
            f"LLM planner: {usage['calls']} call(s), {usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion tokens"
        )
    planned = "-llm-planner" if planner == "llm" else ""
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
