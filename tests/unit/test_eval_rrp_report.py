"""What `kgdb eval rrp` reports (kgdb/pipeline/rrp_report.py): Hit, Hit@1, Macro-F1, reachable and seconds per
question, by question type, and which split a question file is scored on."""

from __future__ import annotations

import json

import pytest

from kgdb.data.questions import read_questions, split_summary
from kgdb.rrp.report import ScoredQuestion, by_type, choose_split, question_type, summarise


def _row(qid, gold, predicted, reachable=True, seconds=None, failed=False, kind=""):
    return ScoredQuestion(qid, frozenset(gold), tuple(predicted), reachable, seconds, failed, kind)


def test_hit_counts_any_listed_gold_answer_and_hit1_only_the_first():
    rows = [
        _row("a", {"x"}, ["x", "y"], seconds=0.1),  # right first: F1 2/3
        _row("b", {"x"}, ["y", "x"], seconds=0.3),  # listed, not first
        _row("c", {"x", "z"}, [], reachable=False, seconds=0.2),  # no answer
        _row("d", {"x"}, [], reachable=False, failed=True),  # retrieval failed: a miss that still counts in n
    ]
    m = summarise(rows)
    assert m["n"] == 4 and m["failed"] == 1
    assert m["hit"] == pytest.approx(50.0) and m["hit1"] == pytest.approx(25.0)
    assert m["macro_f1"] == pytest.approx(100 * (2 / 3 + 2 / 3) / 4)
    assert m["reachable"] == pytest.approx(50.0)
    assert (
        m["seconds_mean"] == pytest.approx(0.2)
        and m["seconds_p50"] == pytest.approx(0.2)
        and m["seconds_p95"] == pytest.approx(0.3)
    )


def test_figures_by_question_type_leave_out_types_without_questions():
    rows = [
        _row("a", {"x"}, ["x"], kind="superlative"),
        _row("b", {"x"}, ["y"], kind="composition"),
        _row("c", {"x"}, ["x"], kind="composition"),
    ]
    kinds = by_type(rows)
    assert list(kinds) == ["composition", "superlative"]
    assert kinds["composition"]["hit1"] == pytest.approx(50.0) and kinds["superlative"]["n"] == 1


@pytest.mark.parametrize(
    "text, topics, kind",
    [
        ("When was the last time a team led by Larry Baer won the World Series?", ["Larry Baer"], "superlative"),
        ("What is the largest city in the country that uses the peso?", ["Peso"], "superlative"),
        ("Which country bordering France has a population of more than 80 million?", ["France"], "comparative"),
        ("What film starring Taylor Lautner was released after 2009?", ["Taylor Lautner"], "comparative"),
        (
            "Which nation has the Alta Verapaz Department and is in Central America?",
            ["Central America", "Alta Verapaz Department"],
            "conjunction",
        ),
        ("What David Slade film starred Taylor Lautner?", ["David Slade", "Taylor Lautner"], "conjunction"),
        (
            "The people from the country that contains Nord-Ouest Department speak what languages today?",
            ["Nord-Ouest Department"],
            "composition",
        ),
    ],
)
def test_question_type_is_read_from_the_wording(text, topics, kind):
    assert question_type(text, topics) == kind


def _write(path, ids):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": i, "question": f"q {i}?", "answer": ["x"]}) + "\n" for i in ids))
    return path


def _questions(tmp_path, name, ids):
    return read_questions(_write(tmp_path / name, ids))


def test_a_file_with_a_fixed_split_is_scored_on_val_by_default(tmp_path):
    splits = tmp_path / "splits"
    splits.mkdir()
    (splits / "mine.json").write_text(json.dumps({"ids": {"train": ["a"], "val": ["b"], "test": ["c"]}}))
    qs = _questions(tmp_path, "mine.jsonl", ["a", "b", "c"])
    assert choose_split(qs, None, splits) == ("val", None)
    assert choose_split(qs, "test", splits) == ("test", None)


def test_a_file_whose_ids_are_not_in_splits_is_scored_whole_with_a_note(tmp_path):
    splits = tmp_path / "splits"
    splits.mkdir()
    (splits / "mine.json").write_text(json.dumps({"ids": {"train": ["other"], "val": [], "test": []}}))
    for name in ("mine.jsonl", "handwritten.jsonl"):  # ids unknown to its split file, or no split file at all
        qs = _questions(tmp_path, name, ["a", "b"])
        split, note = choose_split(qs, None, splits)
        assert split == "all" and "whole file is evaluated" in note and name in note
        split, note = choose_split(qs, "val", splits)
        assert split == "val" and "hash-chosen" in note


def test_a_part_or_a_renamed_copy_of_a_dataset_keeps_its_fixed_splits(tmp_path, caplog):
    splits = tmp_path / "splits"
    splits.mkdir()
    ids = [f"Q-{i}" for i in range(60)]
    full = read_questions(_write(tmp_path / "mine" / "questions.jsonl", ids), splits)
    (splits / "mine.json").write_text(json.dumps(split_summary(full)))
    part = read_questions(_write(tmp_path / "mine_small.jsonl", ids[:35] + ["new-1"]), splits)
    assert part.dataset == "mine" and "mine_small.jsonl" in part.split_note and "splits/mine.json" in part.split_note
    for name in ("train", "val", "test"):  # a question of the dataset's test split is in the part's test split
        assert [q.id for q in part.split(name) if q.id in ids] == [q.id for q in full.split(name) if q.id in ids[:35]]
    assert choose_split(part, None, splits) == ("val", None)
    assert [r.getMessage() for r in caplog.records] == [f"note: {part.split_note}"]  # said once, on reading
    assert full.split_note is None and choose_split(full, None, splits) == ("val", None)
    # a file holding a minority of the dataset's ids keeps its own key, and its splits are its own
    other = read_questions(_write(tmp_path / "other.jsonl", ids[:10] + [f"own-{i}" for i in range(20)]), splits)
    assert other.dataset == "other" and other.split_note is None
