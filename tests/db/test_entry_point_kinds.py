"""A trainable kind defined outside kgdb (a module in a temporary folder, registered by an entry point
of a tiny installed distribution) trains through the command line and through `Kgdb.train` with no
edit in kgdb."""

from __future__ import annotations

import json
import textwrap

import pytest
from typer.testing import CliRunner

from kgdb.cli import app
from kgdb.errors import InputError
from kgdb.pipeline import trainables

PLUGIN = '''
"""A third-party trainable kind: a linear regression trained by kgdb's shared loop."""
import json
from dataclasses import dataclass
from pathlib import Path

import torch

from kgdb.pipeline.trainable import EpochOptions
from kgdb.pipeline.trainable import TrainableKind, TrainOutcome, option
from kgdb.training.fit import FitConfig, FitTask, fit


@dataclass
class ToyOptions(EpochOptions):
    width: int = option(3, "Inputs of the regression.", ge=1)
    out: str = option("toy-out", "Folder the weights are written to.")


@dataclass(frozen=True)
class ToyTrainConfig:
    lr: float = 0.05
    batch_size: int = 4


@dataclass
class ToyEpoch:
    epoch: int
    loss: float
    val_error: float

    def describe(self) -> str:
        return f"toy epoch {self.epoch}: loss {self.loss:.4f}, val error {self.val_error:.4f}"


class ToyTask(FitTask):
    kind = "toy-kind"

    def __init__(self, width: int, lr: float):
        self.config = ToyTrainConfig(lr=lr)
        self.model = torch.nn.Linear(width, 1)
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(32, width, generator=generator)
        self.y = self.x.sum(1, keepdim=True)

    def examples(self) -> int:
        return len(self.x)

    def loss(self, objective, batch):
        return ((objective(self.x[batch]) - self.y[batch]) ** 2).mean()

    @torch.no_grad()
    def validate(self):
        error = float(((self.model(self.x) - self.y) ** 2).mean())
        return (-error,), error

    def log(self, epoch, totals, metrics):
        return ToyEpoch(epoch, totals.loss_per_step, metrics)


def train(job):
    options = job.options
    torch.manual_seed(options.seed)  # the initial weights
    task = ToyTask(options.width, options.lr)
    outcome = fit(task, FitConfig(options.max_epochs, options.patience, options.seed), job.events)
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    best = outcome.epochs[outcome.best_epoch - 1]
    saved = {"questions": [str(q) for q in job.questions], "best_epoch": outcome.best_epoch,
             "val_error": best.val_error, "width": options.width}
    (out / "toy.json").write_text(json.dumps(saved))
    summary = f"toy best epoch {outcome.best_epoch}: val error {best.val_error:.4f}; checkpoint {out}"
    return TrainOutcome(out, outcome, summary)


KIND = TrainableKind("toy-kind", "A linear regression (test only).", ToyOptions, train)
'''


@pytest.fixture
def toy_plugin(tmp_path, monkeypatch):
    """The plugin module and a distribution that declares it under the `kgdb.trainables` group."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "toy_kgdb_kind.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    info = site / "toy_kgdb_kind-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-kgdb-kind\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        f"[{trainables.ENTRY_POINT_GROUP}]\ntoy-kind = toy_kgdb_kind:KIND\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(trainables.TRAINABLES, "_loaded", False)  # the next look-up reads the entry points again
    monkeypatch.setattr(trainables.TRAINABLES, "_entries", {})
    return tmp_path


def test_a_kind_registered_by_entry_point_trains_through_the_cli_and_the_api(toy_plugin, graph):
    import kgdb

    tmp_path = toy_plugin
    questions = tmp_path / "questions.jsonl"
    questions.write_text("")
    settings = graph.settings
    base = ["--uri", settings.neo4j_uri, "--password", settings.neo4j_password.get_secret_value()]
    runner = CliRunner()
    listed = runner.invoke(app, ["train", "--help"])
    assert "toy-kind" in listed.output and "A linear regression" in listed.output
    shown = runner.invoke(app, ["train", "toy-kind", "--help"])
    assert "--width" in shown.output and "--portable" not in shown.output
    refused = runner.invoke(app, ["train", "toy-kind", "--questions", str(questions), "--width", "0"])
    assert refused.exit_code == 2 and "not in the range x>=1" in refused.output, refused.output

    out = runner.invoke(
        app,
        base
        + [
            "train",
            "toy-kind",
            "--questions",
            str(questions),
            "--width",
            "2",
            "--max-epochs",
            "30",
            "--patience",
            "30",
            "--lr",
            "0.05",
            "--out",
            str(tmp_path / "cli"),
        ],
    )
    assert out.exit_code == 0, out.output
    assert "toy epoch 30" in out.output and "toy best epoch" in out.output
    saved = json.loads((tmp_path / "cli" / "toy.json").read_text())
    assert saved["width"] == 2 and saved["val_error"] < 0.05  # learnt: the first epoch's error is about 2

    with kgdb.connect(settings.neo4j_uri, password=settings.neo4j_password.get_secret_value()) as kg:
        checkpoint, result = kg.train(
            "toy-kind", questions, width=2, max_epochs=30, patience=30, lr=0.05, out=str(tmp_path / "api")
        )
        with pytest.raises(InputError, match="toy-kind has no option portable"):
            kg.train("toy-kind", questions, portable=True)
    assert checkpoint == tmp_path / "api" and len(result.epochs) == 30
    assert json.loads((tmp_path / "api" / "toy.json").read_text())["val_error"] == pytest.approx(
        saved["val_error"]
    )  # same seed, same run
