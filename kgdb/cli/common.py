"""Shared CLI plumbing: the console, effective settings and the database connection."""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable

import typer
from rich.console import Console
from rich.markup import escape
from rich.segment import Segment

from kgdb.config import Settings, load_settings

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from kgdb.cypher import Graph

# Redirected output (CI logs, `> load.log`) has no terminal width; rich would assume 80 columns
# and fold or cut the numbers of summary tables. Logs are read by people and grepped: be wide.
LOG_WIDTH = 160
SAMPLE_HELP = (
    "N questions of the split drawn at random (fixed seed), in file order; unlike --limit's prefix it covers "
    "every question template of a MetaQA file, which is grouped by template."
)
QUESTIONS_HELP = "WebQSP-style questions.jsonl or MetaQA k-hop/qa.txt."
CAP_HELP = (
    "Most triples expanded from one node (default: the checkpoint's serving cap, `fetch.inference_cap`, "
    "else the cap it was trained with, else 100)."
)


def _width() -> int | None:
    if sys.stdout.isatty():
        return None
    columns = os.environ.get("COLUMNS", "")
    return max(LOG_WIDTH, int(columns)) if columns.isdigit() else LOG_WIDTH


# C0/C1 control characters but newline and tab, and the bidirectional overrides that reorder a line.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with each terminal control character written as its escape (ESC as `\\x1b`): data
    and questions reach the terminal as text, never as commands that clear it or set its title."""
    return _CONTROL.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text
    )


class SafeConsole(Console):
    """rich's Console that prints every control character it did not write itself as an escape.

    Strings are made visible before layout (so table columns keep their widths); the segments of
    anything else (a `Text` built elsewhere) are made visible on their way out. rich's own cursor
    and style sequences are separate control segments and styles, and stay as they are. Machine
    output (`--json`, queries to paste) is printed with `print`, exactly.
    """

    def render_str(self, text: str, **kwargs):
        return super().render_str(visible(text), **kwargs)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(seg if seg.control else Segment(visible(seg.text), seg.style) for seg in buffer)


console = SafeConsole(width=_width())
err_console = SafeConsole(stderr=True, width=_width())

# The driver logs each retry of a lost connection as a raw WARNING line on stderr (through
# logging's last-resort handler); kgdb says what happened in one line of its own instead.
logging.getLogger("neo4j").addHandler(logging.NullHandler())
logging.getLogger("neo4j").propagate = False

# Sub-apps that several command modules add commands to.
eval_app = typer.Typer(help="Evaluate retrieval or question answering on a question set.", no_args_is_help=True)
runs_app = typer.Typer(help="List, show and prune retrieval runs written back to the graph.", no_args_is_help=True)


def say(template: str, *values: object, **kwargs) -> None:
    """Print `template` (rich markup allowed) with each user-supplied value escaped.

    `say("[bold]{}[/] loaded", path)`: a file name like `x[/foo].tsv` stays text, never markup.
    """
    console.print(template.format(*(escape(str(v)) for v in values)), highlight=False, **kwargs)


def settings_from(ctx: typer.Context) -> Settings:
    """Settings with the global --uri/--user/--password/--database overrides applied."""
    root = ctx.find_root()
    if not isinstance(root.obj, Settings):
        root.obj = load_settings()
    return root.obj


def open_graph(ctx: typer.Context) -> "Graph":
    from kgdb.cypher import Graph  # the driver costs ~0.3 s to import: only commands that connect pay it

    return Graph.connect(settings_from(ctx))


def progress() -> Progress:
    """The one progress-bar layout every long job uses (line per update in redirected logs)."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    return _progress_class()(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


@lru_cache(maxsize=None)
def _progress_class() -> type[Progress]:
    # rich.progress is imported by the commands that show progress, not by every start (`kgdb ask`)
    from rich.progress import Progress

    class _Progress(Progress):
        """rich's Progress, plus one plain line per 10% step (and at least every 30 s) when the
        output is not a terminal: a live bar in a log file only appears once, at the very end."""

        STEP = 0.10
        EVERY_S = 30.0

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._lines: dict[TaskID, tuple[float, float]] = {}  # task -> (fraction printed, time printed)

        def update(self, task_id: TaskID, **kwargs) -> None:
            super().update(task_id, **kwargs)
            self._line(task_id)

        def advance(self, task_id: TaskID, advance: float = 1) -> None:
            super().advance(task_id, advance)
            self._line(task_id)

        def _line(self, task_id: TaskID) -> None:
            if self.console.is_terminal:
                return
            task = self._tasks.get(task_id)
            if task is None or not task.visible:
                return
            now = time.monotonic()
            last_frac, last_t = self._lines.get(task_id, (-1.0, 0.0))
            frac = task.completed / task.total if task.total else 0.0
            finished = bool(task.total) and task.completed >= (task.total or 0.0)
            if frac - last_frac < self.STEP and now - last_t < self.EVERY_S and not (finished and last_frac < 1.0):
                return
            self._lines[task_id] = (frac if not finished else 1.0, now)
            total = f"/{task.total:,.0f} ({frac:.0%})" if task.total else ""
            self.console.print(
                f"{task.description}: {task.completed:,.0f}{total}, {task.elapsed or 0:.1f} s",
                markup=False,
                highlight=False,
            )

    return _Progress


def report_split(report) -> None:
    """Where a split's labelled subgraphs came from (cache or database), what was dropped, and the labels used."""
    result = report.split_data
    if result.from_disk:
        how = "loaded from cache, database not queried"
    elif result.errors:
        how = f"fetched from the database; NOT cached: {len(result.errors)} fetches failed, first: {escape(result.errors[0])}"
    else:
        how = "fetched from the database and cached"
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(result.counts.items()) if v)
    console.print(
        f"{escape(report.dataset)}/{report.split}: {len(result.items)} subgraphs {how} ({escape(str(result.path))}); "
        f"skipped or dropped: {skipped or 'none'}",
        highlight=False,
    )
    if lc := result.label_counts:
        console.print(
            f"  labels: {lc['source']} (stored by `kgdb label`) for {lc['llm']} questions ({lc['paths']} paths); "
            f"{lc['fallback_shortest']} without them fall back to shortest-path labels"
            + (
                f"; {lc['paths_not_in_subgraph']} stored paths not in the fetched subgraph"
                if lc["paths_not_in_subgraph"]
                else ""
            ),
            highlight=False,
        )
    if rc := result.relation_counts:
        console.print(
            f"  relation targets: {rc['source']} (stored by `kgdb label`) for {rc['questions']} questions ({rc['relations']} relations "
            f"marking {rc['augmented_triples']} topic triples as question-triple positives)"
            + (
                f"; {rc['unknown_relations']} stored relations no longer in the graph"
                if rc["unknown_relations"]
                else ""
            ),
            highlight=False,
        )
