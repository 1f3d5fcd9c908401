"""`kgdb splits make` and `kgdb train KIND`: one sub-command per trainable kind, built from its declaration
in `kgdb.pipeline.trainables` (its options, their types, defaults, ranges and help), so each kind shows
and accepts only its own options. The kinds are looked up when `kgdb train` runs, not when `kgdb` starts."""

from __future__ import annotations

import dataclasses
import inspect
import time
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

from kgdb.cli import app
from kgdb.cli.common import QUESTIONS_HELP, console, open_graph, progress, report_split, settings_from
from kgdb.config import dump_json
from kgdb.data.questions import SPLITS, read_questions, split_summary
from kgdb.pipeline.trainable import flag_of
from kgdb.training.events import TrainEvents

if TYPE_CHECKING:
    from rich.progress import Progress

    # The click classes TyperGroup works with: typer's own copy of click (typer._click) since typer 0.2x.
    from typer._click.core import Command, Context

splits_app = typer.Typer(help="Fixed train/val/test splits of the question sets.", no_args_is_help=True)
app.add_typer(splits_app, name="splits")


@splits_app.command("make")
def splits_make(
    questions: Annotated[list[Path], typer.Argument(help=QUESTIONS_HELP)],
    out: Annotated[Path, typer.Option("--out", help="Folder for <dataset>.json id lists.")] = Path("splits"),
) -> None:
    """Write the fixed 60/20/20 split (by id hash, see kgdb/models/datasets.py) of each question file."""
    table = Table("dataset", "file", *SPLITS)
    written = 0
    for path in questions:
        qs = read_questions(path, out)
        summary = split_summary(qs)
        if qs.split_note:  # a part of a dataset whose split is fixed already: rewriting it would drop the rest
            console.print(
                f"nothing written for {escape(str(path))}: {escape(str(qs.split_file))} fixes its split",
                highlight=False,
            )
        else:
            dump_json(summary, out / f"{qs.dataset}.json")
            written += 1
        table.add_row(qs.dataset, str(path), *(str(summary["counts"][s]) for s in SPLITS))
    console.print(table)
    console.print(f"wrote {written} split file(s) to {out}/")


class TrainKinds(TyperGroup):
    """`kgdb train`'s sub-commands: the registry's kinds, each command built when it is asked for."""

    def list_commands(self, ctx: Context) -> list[str]:
        from kgdb.pipeline.trainables import trainable_names

        return sorted([*trainable_names(), ANSWER_MODEL])

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        from kgdb.pipeline.trainables import TRAINABLES

        if cmd_name == ANSWER_MODEL:
            return typer.main.get_command(answer_model_app)
        kind = TRAINABLES.find(cmd_name)
        return kind_command(kind) if kind is not None else None


train_app = typer.Typer(
    cls=TrainKinds,
    no_args_is_help=True,
    rich_markup_mode="rich",
    help="Train a model on a question file's train split, select it on the val split, save a checkpoint: "
    "`kgdb train KIND --questions FILE \\[options]`; `kgdb train KIND --help` lists that kind's options.",
)
app.add_typer(train_app, name="train")


ANSWER_MODEL = "answer-model"
answer_model_app = typer.Typer(rich_markup_mode="rich")


@answer_model_app.command(ANSWER_MODEL)
def train_answer_model(
    rows: Annotated[
        list[Path],
        typer.Option("--rows", help="Answer rows of `kgdb eval rrp --rows` (train and val splits; repeat the option)."),
    ],
    out: Annotated[Path, typer.Option("--out", help="Directory for model.json and config.json.")],
) -> None:
    """The answer model: logistic models over each candidate answer's features, fitted on the val rows (questions
    the path ranker never trained on); its strength, the answer order, the calibration (Platt scaling) and the
    "not sure" threshold chosen out of fold. Needs no database: the rows hold everything."""
    from kgdb.rrp.answer_training import train

    config = train(rows, out)
    oof = config["out_of_fold"]
    console.print(
        f"{config['questions']} {config['split']} questions, out of fold: Hit@1 "
        f"{config['strengths'][str(config['strength'])]['model_hit1']:.2f} in the model's order, "
        f"{config['ranker_order_hit1']:.2f} in the ranker's (reorder: {config['reorder']}); AUROC {oof['auroc'] or 0:.3f}, "
        f"ECE {oof['ece'] or 0:.3f}; not sure below {config['min_confidence']}",
        highlight=False,
    )
    for name, figures in config["out_of_fold_per_file"].items():
        console.print(
            f"  {escape(name)}: Hit@1 {figures['hit1']:.2f}, AUROC {figures['auroc'] or 0:.3f}, "
            f"ECE {figures['ece'] or 0:.3f}, Hit@1 of the 60% most confident {figures['risk_coverage'][60]:.2f}, "
            f"not sure: {figures['unsure_wrong'] or 0:.0f}% of wrong, {figures['unsure_right'] or 0:.0f}% of right",
            highlight=False,
        )
    console.print(f"wrote {escape(str(out))}/model.json and config.json", highlight=False)


def _cli_type(kind_type: Any, f: dataclasses.Field) -> Any:
    """The type typer parses an option as: a closed choice becomes an enum, a list an optional list."""
    if choices := f.metadata.get("choices"):
        return Enum(f.name, {c: c for c in choices}, type=str)
    if f.default_factory is not dataclasses.MISSING or getattr(kind_type, "__origin__", None) is list:
        return kind_type | None
    return kind_type


def _parameter(kind_type: Any, f: dataclasses.Field) -> inspect.Parameter:
    default = f.default if f.default is not dataclasses.MISSING else None
    cli_type = _cli_type(kind_type, f)
    if isinstance(cli_type, type) and issubclass(cli_type, Enum):
        default = cli_type(default)
    info = typer.Option(
        flag_of(f),
        help=f.metadata.get("help") or None,
        min=f.metadata.get("ge"),
        show_default=default not in (None, "", 0) or isinstance(default, bool),
    )
    return inspect.Parameter(
        f.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[cli_type, info]
    )


def kind_command(kind) -> Command:
    """The click command of one trainable kind, its options generated from `kind.options`."""
    hints = kind.option_types()
    questions_help = QUESTIONS_HELP + (" Repeatable (one model for all files)." if kind.several_files else "")
    params = [
        inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context),
        inspect.Parameter(
            "questions",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[list[Path], typer.Option("--questions", help=questions_help)],
        ),
        *(_parameter(hints[f.name], f) for f in kind.option_fields()),
    ]

    def command(ctx: typer.Context, questions: list[Path], **values: Any) -> None:
        run_kind(ctx, kind, questions, values)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]  # what typer reads
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__doc__ = kind.summary
    one = typer.Typer(rich_markup_mode="rich", add_completion=False)
    one.command(kind.name)(command)
    return typer.main.get_command(one)


def _option_values(kind, values: dict[str, Any]) -> dict[str, Any]:
    """The command line's values as the kind's options take them (enum members as their text, an
    omitted list as an empty one)."""
    lists = {f.name for f in kind.option_fields() if f.default_factory is not dataclasses.MISSING}
    out = {}
    for key, value in values.items():
        if isinstance(value, Enum):
            value = value.value
        out[key] = list(value or []) if key in lists else value
    return out


def run_kind(ctx: typer.Context, kind, questions: list[Path], values: dict[str, Any]) -> None:
    from kgdb.cypher import Graph
    from kgdb.pipeline.trainable import TrainJob

    options = kind.make_options(_option_values(kind, values))
    settings = settings_from(ctx)
    with open_graph(ctx) as graph, progress() as bar:
        events = ProgressEvents(bar)
        outcome = kind.train(
            TrainJob(
                graph,
                settings,
                list(questions),
                options,
                events,
                connect=lambda uri: Graph.connect(settings.with_overrides(neo4j_uri=uri)),
            )
        )
        events.close()
    if outcome.summary:
        console.print(escape(outcome.summary), highlight=False)
    if outcome.tuned:
        _print_tuned(outcome.tuned)


class ProgressEvents(TrainEvents):
    """A training run's events as progress bars (data preparation, epochs, steps) and printed lines."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.work = bar.add_task("prepare", total=None, visible=False)
        self.epochs = bar.add_task("epochs", total=None, visible=False)
        self.steps = bar.add_task("epoch 1 loss -", total=None, visible=False)
        self.per_epoch: int | None = None
        self.best: float | None = None
        self._new_epoch(1)

    def _new_epoch(self, epoch: int) -> None:
        self.epoch_no, self.loss, self.n, self.questions, self.t0 = epoch, 0.0, 0, 0, time.perf_counter()

    def message(self, text: str) -> None:
        console.print(escape(text), highlight=False)

    def phase(self, description: str, total: int | None) -> None:
        self.bar.reset(self.work, total=total, description=escape(description), visible=True)

    def advance(self, n: int = 1) -> None:
        self.bar.advance(self.work, n)

    def split(self, report: Any) -> None:
        report_split(report)

    def started(self, steps_per_epoch: int | None, max_epochs: int) -> None:
        self.per_epoch = steps_per_epoch
        self.bar.update(self.work, visible=False)
        self.bar.reset(self.epochs, total=max_epochs, description="epochs", visible=True)
        self.bar.reset(self.steps, total=steps_per_epoch, visible=True)
        self._new_epoch(1)

    def step(self, loss: float, questions: int) -> None:
        self.loss, self.n, self.questions = self.loss + loss, self.n + 1, self.questions + questions
        rate = self.questions / max(time.perf_counter() - self.t0, 1e-9)
        self.bar.update(
            self.steps,
            advance=questions,
            description=f"epoch {self.epoch_no} loss {self.loss / self.n:.4f}, {rate:.1f} questions/s",
        )

    def epoch(self, log: Any) -> None:
        console.print(escape(log.describe()), highlight=False)
        self.bar.update(self.epochs, completed=log.epoch, description=f"epochs (last: epoch {log.epoch})")
        self._new_epoch(log.epoch + 1)  # validation not counted in the rate
        self.bar.reset(self.steps, total=self.per_epoch, description=f"epoch {log.epoch + 1} loss -")

    def close(self) -> None:
        for task in (self.work, self.epochs, self.steps):
            self.bar.update(task, visible=False)


def _print_tuned(tuned: dict) -> None:
    """The answering settings `structural.tune_answering` chose, and the val ablation they were chosen on."""
    from kgdb.rrp.structural import ABLATIONS

    table = Table(
        "mode (val, entity ids)",
        "n",
        "Hit@1",
        "Macro-F1",
        "reachable %",
        title=f"λ1 {tuned['lambda1']}, θ {tuned['theta']}, answering mode {tuned['mode']}, answer closeness weight "
        f"{tuned['answering']['closeness_weight']} (chosen on val)",
    )
    for mode in ABLATIONS:
        m = tuned["ablation_val"][mode]
        table.add_row(mode, str(m["n"]), f"{m['hit1']:.2f}", f"{m['macro_f1']:.2f}", f"{m['reachable']:.2f}")
    console.print(table)
