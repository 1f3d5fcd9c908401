"""Trainable kinds come from one registry: `kgdb train --help` lists them, `kgdb train KIND` shows and
accepts only that kind's options, and the Python API checks options against the kind."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kgdb.cli import app
from kgdb.errors import InputError
from kgdb.pipeline import trainables


def test_train_help_lists_the_registered_kinds():
    out = CliRunner().invoke(app, ["train", "--help"])
    assert out.exit_code == 0, out.output
    for kind in ("cosine-dde", "subgraphrag", "rapl", "rrp-planner", "rrp-ranker", "rrp"):
        assert kind in out.output


def test_each_kind_shows_only_its_own_options():
    runner = CliRunner()
    ranker = runner.invoke(app, ["train", "rrp-ranker", "--help"])
    planner = runner.invoke(app, ["train", "rrp-planner", "--help"])
    cosine = runner.invoke(app, ["train", "cosine-dde", "--help"])
    assert "--portable" in ranker.output and "--tune-per-file" in ranker.output
    assert "--portable" not in planner.output and "--labels" not in planner.output and "--hops" in planner.output
    assert "--labels" in cosine.output and "--portable" not in cosine.output
    assert (
        "--batch-size" not in cosine.output and "--relation-targets" not in cosine.output
    )  # its loss has no use for them


def test_an_option_of_another_kind_is_refused_by_name(tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text("")
    out = CliRunner().invoke(app, ["train", "rrp-planner", "--questions", str(questions), "--portable"])
    assert out.exit_code == 2 and "No such option: --portable" in out.output, out.output
    unknown = CliRunner().invoke(app, ["train", "no-such-kind", "--questions", str(questions)])
    assert unknown.exit_code == 2 and "No such command 'no-such-kind'" in unknown.output, unknown.output


def test_api_options_are_checked_against_the_kind():
    planner = trainables.trainable("rrp-planner")
    with pytest.raises(InputError, match="rrp-planner has no option portable"):
        planner.make_options({"portable": True})
    with pytest.raises(InputError, match="max_epochs must be at least 1, got 0"):
        planner.make_options({"max_epochs": 0})
    with pytest.raises(InputError, match="labels takes one of shortest, rapl, reg, got 'best'"):
        trainables.trainable("subgraphrag").make_options({"labels": "best"})
    assert planner.make_options({"hops": 2, "max_epochs": 4}).hops == 2
