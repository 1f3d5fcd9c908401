"""`kgdb ask`: answer one question from the graph, with the evidence each answer rests on (`kgdb eval qa`
and `kgdb eval rrp` are in `kgdb.cli.evaluate`)."""

from __future__ import annotations

import dataclasses
import json
from typing import List, Optional

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from kgdb.cli import app
from kgdb.cli.common import CAP_HELP, console, open_graph, settings_from
from kgdb.errors import InputError
from kgdb.qa.planners import DEFAULT_PLANNER, planner_help, require_planner_ready
from kgdb.qa.prompts import FORMATS
from kgdb.qa.question_retrievers import QUESTION_RETRIEVERS
from kgdb.qa.reasoners import reasoner_choices, reasoner_help

RETRIEVER_HELP = (
    "A registered retriever (`kgdb retrievers`; a trainable one without a checkpoint for this graph falls back to the "
    "shipped cosine-dde checkpoint, and says so), or a question-level retriever: "
    + "; ".join(QUESTION_RETRIEVERS.summaries())
    + ". Default: the answering policy's choice (--explain shows it)."
)
PLANNER_HELP = planner_help()
ASK_REASONER_HELP = reasoner_help(
    "an LLM when KGDB_LLM_MODEL is set; else rrp, with the RRP model trained for this graph or the "
    "portable ranker shipped with kgdb, and extractive where neither fits"
)


ESCALATE_HELP = (
    "Answer without the LLM the questions whose first answer's confidence is at least P, and send only the others "
    "to the LLM reasoner (e.g. --reasoner candidates, which chooses among the top answers and their paths)."
)


def check_choice(value: str, choices: tuple[str, ...] | list[str], option: str) -> str:
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
    planner: str = typer.Option(DEFAULT_PLANNER, "--planner", help=PLANNER_HELP),
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
    min_confidence: Optional[float] = typer.Option(
        None,
        "--min-confidence",
        min=0.0,
        max=1.0,
        help="Say \"not sure\" when the first answer's confidence is below this (default: the answer model's, chosen on val).",
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Also print the Neo4j Browser query of the run."),
    escalate_below: Optional[float] = typer.Option(None, "--escalate-below", min=0.0, max=1.0, help=ESCALATE_HELP),
) -> None:
    """Answer a question from the graph, with the evidence each answer rests on."""
    from kgdb.cypher.tables import fingerprint_read_once
    from kgdb.qa.ask import AskPipeline, plan_for

    if not question.strip():
        raise InputError(
            'the question is empty: ask something, e.g. kgdb ask "what is the capital of France?"', path="QUESTION"
        )
    if fmt is not None:
        check_choice(fmt, FORMATS, "--format")
    check_choice(reasoner, reasoner_choices(), "--reasoner")
    settings = settings_from(ctx)
    require_planner_ready(planner, settings)  # before the graph is opened: one clear line
    # one question loads no triples: the graph's fingerprint, asked for by every part, is read once
    with open_graph(ctx) as graph, fingerprint_read_once(graph):
        plan = plan_for(
            graph, settings, retriever=retriever, reasoner=reasoner, checkpoint=checkpoint, fmt=fmt, planner=planner
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
            escalate_below=escalate_below,
        )
        if explain:  # the plan and the question as read and linked, nothing answered
            _print_plan(plan, pipe.read(question, topic or None), as_json)
            return
        res = pipe.ask(question, topic or None)
    if min_confidence is not None and res.confidence is not None:
        res = dataclasses.replace(res, min_confidence=min_confidence)
    if only_browser_query:
        if not res.browser_query:
            raise InputError(
                "no run was written, so there is no Browser query; drop --no-write", path="--browser-query"
            )
        print(res.browser_query)  # raw: never wrapped or styled, so it pastes as valid Cypher
    elif as_json:
        print(json.dumps(res.to_json(show_prompt=show_prompt), default=str, indent=2))
    else:
        _print_result(res, timings, show_prompt, verbose)
    if res.error:
        raise typer.Exit(1)


def _print_plan(plan, reading, as_json: bool) -> None:
    """`kgdb ask --explain`: the answering plan and how the question was read, nothing answered."""
    if as_json:
        print(json.dumps({**plan.to_json(), "question_reading": reading.to_json()}, indent=2))
        return
    table = Table("part", "chosen", "why", title="Answering plan (nothing was answered)")
    for d in plan.decisions:
        table.add_row(d.part, Text(d.value), Text(d.why))
    console.print(table)
    for note in plan.notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    _print_reading(reading.to_json())


def _print_reading(read: dict) -> None:
    """The question as read: what it asks for, its constraints, the names it writes, the topics linked."""
    table = Table("read", "as", title="The question as read")
    c = read["constraints"]
    asked = read["cue"] or "(no question word)"
    table.add_row("asks", Text(asked))
    if c["years"] or c["extreme"]:
        years = [f"{y['op']} {y['year']}" for y in c["years"]]
        table.add_row("constraints", Text(", ".join([*years, *([c["extreme"]] if c["extreme"] else [])])))
    named = [f'"{q}"' for q in read["quoted"]] + read["written_as_names"]
    if named:
        table.add_row("written as names", Text(", ".join(named)))
    if read["composition"]:
        table.add_row("composed of", Text(f"{read['composition']['inner_question']} (then the rest, of its answer)"))
    topics = read["topics"]
    if topics is not None:
        chosen = {t["id"] for t in topics["chosen"]}
        table.add_row(f"topics ({topics['source']})", Text(", ".join(t["name"] for t in topics["chosen"])))
        others = [e for e in topics["candidates"] if e["id"] not in chosen and e["mention"]][:4]
        if others:
            table.add_row(
                "other candidates",
                Text(", ".join(f"{e['name']} ({e['mention']!r}, {e['score']:.2f})" for e in others)),
            )
    console.print(table)


def _print_result(res, timings: bool, show_prompt: bool, verbose: bool = False) -> None:
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
    _print_run(res, verbose)
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
    kind = QUESTION_RETRIEVERS.find(res.retriever)
    where = kind.evidence if kind is not None else "of the topic-centred subgraph"
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
    _print_verdict(res)
    judged = res.confidence is not None
    table = Table(title="Answers", caption=_tie_caption(res), show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("answer")
    table.add_column("confidence" if judged else "grounded", justify="right" if judged else "left")
    table.add_column("evidence")
    for i, a in enumerate(res.answers, 1):
        if judged:
            mark = f"{a.confidence:.2f}" if a.confidence is not None else "-"
        else:
            mark = "[green]yes[/]" if a.grounded else "[red]NO (not in the retrieved evidence)[/]"
        # Text(): relation names in [brackets] must not be read as rich markup
        table.add_row(str(i), Text(a.answer), mark, Text("\n".join(a.evidence[:2]) or "-"))
    console.print(table)


def _print_verdict(res) -> None:
    """The first answer and how sure the answer model is of it; "not sure", with the competing answers, below
    the threshold."""
    if res.confidence is None:
        return
    first = escape(res.answers[0].answer)
    if res.sure:
        console.print(f"[bold]Answer:[/] {first} [green](confidence {res.confidence:.2f})[/]", highlight=False)
        return
    others = [f"{escape(a.answer)} ({a.confidence:.2f})" for a in res.answers[1:4] if a.confidence is not None]
    others += [escape(f"{', '.join(alt['ends'][:2])} ({alt['path']})") for alt in res.reasoning.alternatives[:2]]
    console.print(
        f"[bold yellow]Not sure:[/] {first} (confidence {res.confidence:.2f}, below {res.min_confidence:.2f})"
        + (f"; competing: {'; '.join(others)}" if others else ""),
        highlight=False,
    )


def _tie_caption(res) -> str | None:
    """Why the first of the answers that share the best path score is first."""
    r = res.reasoning
    tied = r.tied_first()
    if tied < 2:
        return None
    shared = f"answers 1-{tied} share the best path score ({r.scores[r.answers[0]]:.3f})"
    if res.confidence is None:
        return f"{shared}: their order is the path ranker's, not the evidence's"
    if res.separated_by:
        return f"{shared}; the answer model put the first first by its feature {res.separated_by!r}"
    return f"{shared}; the answer model keeps the path ranker's order among them"


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


def _print_run(res, verbose: bool) -> None:
    if not res.run:
        console.print("[dim]no run written (--no-write)[/]")
        return
    hint = "" if verbose else " [dim](`-v` or `--browser-query` prints the Neo4j Browser query)[/]"
    console.print(f"[bold]Run:[/] {escape(res.run)}{hint}", highlight=False)
    if verbose and res.browser_query:
        console.print(
            "[bold]Neo4j Browser[/] (paste to see the evidence; `--browser-query` prints only this):", highlight=False
        )
        console.file.flush()
        # Plain print: rich would wrap long lines at the terminal width, breaking `//` comments.
        print(res.browser_query, flush=True)
