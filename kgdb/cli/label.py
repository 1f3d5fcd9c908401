"""`kgdb label`: LLM-refined training labels (RAPL rational paths / ReG S(I) / RAPL relation targeting), stored in the graph."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from kgdb.cli import app
from kgdb.cli.common import console, open_graph, progress, say, settings_from


class LabelMethod(str, Enum):
    # One method per LLM task: each has its own prompt, its own resumable Labelling per question and
    # its own use in training (paths: --labels rapl|reg; relations: --relation-targets).
    rapl = "rapl"
    reg = "reg"
    rapl_relations = "rapl-relations"


@app.command("label")
def label(
    ctx: typer.Context,
    questions: Annotated[
        Path, typer.Option("--questions", help="WebQSP-style questions.jsonl or MetaQA k-hop/qa.txt.")
    ],
    method: Annotated[
        LabelMethod,
        typer.Option(
            "--method",
            help="rapl: rational paths among topic-answer paths of length d_min..d_min+2; reg: ReG's compressed pool (shortest paths + one-hop neighbourhoods); rapl-relations: RAPL's relation targeting R_* among the topic entities' relations (→ / ← direction), for `kgdb train rapl --relation-targets`.",
        ),
    ],
    split: Annotated[str, typer.Option("--split", help="train, val, test or all.")] = "train",
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="First N questions of the split.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="LLM requests in flight at once.")] = 4,
    hops: Annotated[
        int, typer.Option("--hops", min=1, help="Subgraph radius; keep it equal to training's (default 2).")
    ] = 2,
    cap: Annotated[
        Optional[int],
        typer.Option("--cap", min=1, help="Per-node expansion cap (default: the fetch default, as training)."),
    ] = None,
    prompt_version: Annotated[
        int,
        typer.Option("--prompt-version", help="Template kgdb/qa/prompts/label_<method>_v<N>.txt ('-' written '_')."),
    ] = 1,
) -> None:
    """Ask the configured LLM (KGDB_LLM_BASE_URL / KGDB_LLM_MODEL / KGDB_LLM_API_KEY) to select each
    question's label paths among stage-1 candidates, and store them in the graph with their provenance.

    Resumable: questions already labelled by this method, model and prompt version are skipped
    (failed ones are asked again). Train on them with `kgdb train NAME --labels rapl|reg`, or for
    rapl-relations `kgdb train rapl --relation-targets`.
    """
    from kgdb.qa.labelling import label_questions, require_llm

    settings = settings_from(ctx)
    require_llm(settings)  # before connecting: the clearest message when nothing is configured
    with open_graph(ctx) as graph, progress() as bar:
        task = bar.add_task(f"label {method.value}", total=None, visible=False)

        def on_done(status: str, report) -> None:
            s = report.status
            bar.update(
                task,
                advance=1,
                description=f"label {method.value} (ok {s['ok']}, none {s['none']}, "
                f"no candidates {s['no_candidates']}, failed {s['failed']})",
            )

        report = label_questions(
            graph,
            settings,
            questions,
            method.value,
            split=split,
            limit=limit,
            concurrency=concurrency,
            hops=hops,
            cap=cap,
            prompt_version=prompt_version,
            on_start=lambda total: bar.update(task, total=total, visible=True),
            on_done=on_done,
        )
    where = f"{report.dataset}/{report.split}"
    if report.nothing_to_do:
        say(
            "nothing to do: all {} questions of {} are already labelled by {} with model {}, prompt {}",
            report.selected,
            where,
            report.method,
            report.model,
            report.prompt_version,
        )
        return
    s = report.status
    say(
        "labelled {} of {} questions of {} with {} (model {}, prompt {}); {} already labelled before, skipped",
        sum(s.values()),
        report.selected,
        where,
        report.method,
        report.model,
        report.prompt_version,
        report.already,
    )
    if method is LabelMethod.rapl_relations:
        say(
            "  selected relations: {} questions, {} relations stored ({} candidates shown in all); unknown names ignored: {}; "
            "LLM chose none: {}; no topic / answer in the graph: {}; failed: {}",
            s["ok"],
            report.relations,
            report.candidates,
            report.ignored,
            s["none"],
            s["no_candidates"],
            s["failed"],
        )
    else:
        say(
            "  selected paths: {} questions, {} label paths stored ({} candidates shown in all); LLM chose none: {}; "
            "no candidate path: {}; failed: {}",
            s["ok"],
            report.paths,
            report.candidates,
            s["none"],
            s["no_candidates"],
            s["failed"],
        )
    say(
        "  LLM calls {}, tokens: {} prompt + {} completion = {}; {} s",
        report.calls,
        report.prompt_tokens,
        report.completion_tokens,
        report.prompt_tokens + report.completion_tokens,
        f"{report.seconds:.1f}",
    )
    for failure in report.failures[:5]:
        say("  [yellow]failed[/] {}", failure)
    if len(report.failures) > 5:
        console.print(
            f"  ... and {len(report.failures) - 5} more failures (status 'failed' in the graph; a rerun asks again)"
        )
    browser = "question_relation_targets" if method is LabelMethod.rapl_relations else "question_labels"
    console.print(f"see a question's labels in Browser: kgdb/cypher/browser/{browser}.cypher", highlight=False)
