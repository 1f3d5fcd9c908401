"""The configuration commands and option checks, run as a user would (a subprocess of `kgdb`), with
no server to talk to: settings and their errors, counts below one, and what `--help` and `neo4j status` import."""

import socket

import pytest

from support.cli import heavy_modules_after, run_kgdb


def test_config_show_masks_password():
    out = run_kgdb(
        "config", "show", env={"KGDB_NEO4J_PASSWORD": "s3cret-value", "KGDB_NEO4J_URI": "bolt://example:1234"}
    )
    assert out.returncode == 0
    assert "s3cret-value" not in out.stdout and "********" in out.stdout
    assert "bolt://example:1234" in out.stdout


def test_config_flag_overrides_env():
    out = run_kgdb("--uri", "bolt://flag:9", "config", "show", env={"KGDB_NEO4J_URI": "bolt://env:1"})
    assert "bolt://flag:9" in out.stdout and "bolt://env:1" not in out.stdout


def test_toml_file_is_read(tmp_path):
    toml = tmp_path / "kgdb.toml"
    toml.write_text('neo4j_database = "fromtoml"\nembedding_batch_size = 17\n')
    out = run_kgdb("config", "show", env={"KGDB_CONFIG": str(toml)})
    assert "fromtoml" in out.stdout and "17" in out.stdout


def test_unknown_and_retired_settings_are_named(tmp_path):
    toml = tmp_path / "kgdb.toml"
    toml.write_text('neo4j_databse = "typo"\n')
    out = run_kgdb("config", "show", env={"KGDB_CONFIG": str(toml)})
    assert (
        out.returncode != 0
        and "neo4j_databse" in out.stderr
        and str(toml) in out.stderr
        and "Traceback" not in out.stderr
    )
    toml.write_text("fetch_max_hubs = 8\n")
    out = run_kgdb("config", "show", env={"KGDB_CONFIG": str(toml)})
    assert out.returncode != 0 and "KGDB_FETCH_HUB_SCAN" in out.stderr
    out = run_kgdb("config", "show", env={"KGDB_FETCH_MAX_HUBS": "8", "KGDB_CONFIG": "/nonexistent.toml"})
    assert (
        out.returncode != 0 and "KGDB_FETCH_MAX_HUBS is no longer read" in out.stderr and "Traceback" not in out.stderr
    )


def test_unreachable_server_is_one_clear_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = run_kgdb("--uri", f"bolt://127.0.0.1:{port}", "status")
    assert out.returncode == 1
    assert "cannot reach Neo4j" in out.stderr and "Traceback" not in out.stderr


def test_help_and_server_status_start_light(tmp_path):
    assert heavy_modules_after("--help") == []
    # Exit 3: not installed in an empty home (the LSB code for "not running").
    assert heavy_modules_after("neo4j", "status", env={"KGDB_NEO4J_HOME": str(tmp_path)}, code=3) == []


def test_bad_setting_in_the_environment_is_one_clear_line():
    out = run_kgdb("config", "show", env={"KGDB_NEO4J_BOLT_PORT": "seventy"})
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "KGDB_NEO4J_BOLT_PORT must be an integer, got 'seventy'" in out.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["train", "rapl", "--cap"],
        ["train", "rapl", "--hops"],
        ["train", "rapl", "--max-val"],
        ["label", "--cap"],
        ["label", "--hops"],
        ["label", "--limit"],
    ],
)
def test_a_count_below_one_is_refused_before_anything_runs(args, tmp_path):
    # `cap or default` read 0 as "unset" and trained or labelled with the default instead
    from typer.testing import CliRunner

    from kgdb.cli import app

    questions = tmp_path / "q.jsonl"
    questions.write_text("")
    result = CliRunner().invoke(app, [*args[:-1], "--questions", str(questions), args[-1], "0"])
    assert result.exit_code == 2 and "not in the range x>=1" in result.output, result.output


def test_tune_per_file_zero_skips_the_tuning_and_a_negative_count_is_refused(tmp_path):
    # 0 means "no tuning" (rrp-ranker, rrp), as documented; a lower bound of 1 would make it unusable
    from typer.testing import CliRunner

    from kgdb.cli import app

    questions = tmp_path / "q.jsonl"
    questions.write_text("")
    refused = CliRunner().invoke(app, ["train", "rrp-ranker", "--questions", str(questions), "--tune-per-file", "-1"])
    assert refused.exit_code == 2 and "not in the range x>=0" in refused.output, refused.output
    accepted = CliRunner().invoke(
        app,
        ["--uri", "bolt://localhost:1", "train", "rrp-ranker", "--questions", str(questions), "--tune-per-file", "0"],
    )
    # past option parsing: it fails later, on the unreachable server
    assert accepted.exit_code == 1 and "cannot reach Neo4j at bolt://localhost:1" in str(accepted.exception), (
        accepted.output
    )


def test_splits_make_never_rewrites_a_dataset_s_split_from_a_part_of_it(tmp_path):
    import json

    def questions(path, ids):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps({"id": i, "question": f"q {i}?", "answer": ["x"]}) + "\n" for i in ids))
        return str(path)

    out = tmp_path / "splits"
    ids = [f"Q-{i}" for i in range(50)]
    made = run_kgdb("splits", "make", questions(tmp_path / "mine" / "questions.jsonl", ids), "--out", str(out))
    assert made.returncode == 0 and "wrote 1 split file(s)" in made.stdout
    fixed = (out / "mine.json").read_text()
    part = run_kgdb("splits", "make", questions(tmp_path / "mine_small.jsonl", ids[:30]), "--out", str(out))
    said = " ".join(part.stdout.split())  # as rich wrapped it
    assert part.returncode == 0 and "nothing written" in said and "wrote 0 split file(s)" in said
    assert (out / "mine.json").read_text() == fixed and sorted(p.name for p in out.iterdir()) == ["mine.json"]
