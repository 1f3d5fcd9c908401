"""Question readers, the fixed splits, recall metrics and the hop computation."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from kgdb.data.labels import answer_hops
from kgdb.data.questions import QuestionRecord, read_questions, split_of, subsample
from kgdb.errors import InputError
from kgdb.models.metrics import answer_recall_at, top_k, triple_recall_at


def test_metaqa_reader_and_errors(tmp_path):
    folder = tmp_path / "2-hop"
    folder.mkdir()
    path = folder / "qa.txt"
    path.write_text("who directed the films written by [Joe Thomas]\tA|B\nwhat [X] did\tC\n", encoding="utf-8")
    qs = read_questions(path)
    assert qs.dataset == "metaqa-2hop"
    q = qs.questions[0]
    assert (q.id, q.text, q.topics, q.answers, q.hop) == (
        "2hop-1",
        "who directed the films written by Joe Thomas",
        ["Joe Thomas"],
        ["A", "B"],
        2,
    )
    path.write_text("fine [X]\tA\nno topic here\tB\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"qa.txt:2:"):
        read_questions(path)


def test_webqsp_reader_merges_answers_and_reports_bad_lines(tmp_path):
    path = tmp_path / "questions.jsonl"
    row = {"id": "WebQTest-1", "question": "q?", "q_entity": ["A"], "answer": ["x", "y"], "a_entity": ["y", "z"]}
    path.write_text(json.dumps(row) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"questions.jsonl:2:"):
        read_questions(path)
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert read_questions(path).questions[0].answers == ["x", "y", "z"]
    with pytest.raises(InputError, match="unknown split"):
        read_questions(path).split("dev")


def test_splits_are_stable_and_sized():
    ids = [f"WebQTest-{i}" for i in range(5000)]
    got = [split_of("webqsp", i) for i in ids]
    assert got == [split_of("webqsp", i) for i in ids]  # pure function of (dataset, id)
    frac = {s: got.count(s) / len(got) for s in ("train", "val", "test")}
    assert abs(frac["train"] - 0.6) < 0.03 and abs(frac["val"] - 0.2) < 0.03 and abs(frac["test"] - 0.2) < 0.03
    # Pinned values: changing the rule silently would move questions between splits.
    assert [split_of("webqsp", f"WebQTest-{i}") for i in range(8)] == [
        "val",
        "train",
        "train",
        "train",
        "train",
        "test",
        "train",
        "train",
    ]


def test_shared_webqsp_split_counts(shared_data):
    qs = read_questions(shared_data / "webqsp" / "questions.jsonl")
    counts = {s: len(qs.split(s)) for s in ("train", "val", "test")}
    assert counts == {"train": 561, "val": 212, "test": 204}
    assert sum(counts.values()) == 977


def test_a_sample_is_seeded_in_file_order_and_covers_a_grouped_file():
    # a file grouped by template, as MetaQA's are: 10 templates of 50 questions each
    records = [QuestionRecord(f"q{i}", f"template {i // 50}", [], []) for i in range(500)]
    first = subsample(records, limit=60)
    assert [r.id for r in first] == [f"q{i}" for i in range(60)] and {r.text for r in first} == {
        "template 0",
        "template 1",
    }
    drawn = subsample(records, sample=60)
    assert drawn == subsample(records, sample=60)  # fixed seed
    positions = [int(r.id[1:]) for r in drawn]
    assert len(set(positions)) == 60 and positions == sorted(positions)  # distinct, in file order
    assert len({r.text for r in drawn}) == 10  # every template, where the prefix had two
    assert subsample(records, sample=900) == records and subsample(records) == records
    with pytest.raises(InputError, match="not both"):
        subsample(records, limit=5, sample=5)
    with pytest.raises(InputError, match="--sample"):
        subsample(records, sample=0)


def test_recall_metrics():
    scores = torch.tensor([0.9, 0.1, 0.8, 0.7, 0.0])
    labels = torch.tensor([False, True, True, False, False])
    assert top_k(scores, 2).tolist() == [0, 2]
    assert triple_recall_at(scores, labels, 2) == 0.5
    assert triple_recall_at(scores, torch.zeros(5, dtype=torch.bool), 2) is None
    head, tail = np.array([0, 1, 2, 3, 4]), np.array([5, 6, 7, 8, 9])
    order = top_k(scores, 5).numpy()
    # Answers 7 (tail of triple 2, rank 2) and 6 (tail of triple 1, rank 4); a third answer is
    # in the graph but not in the subgraph, so it counts in the denominator only.
    assert answer_recall_at(order, head, tail, np.array([6, 7]), 3, 2) == pytest.approx(1 / 3)
    assert answer_recall_at(order, head, tail, np.array([6, 7]), 3, 5) == pytest.approx(2 / 3)
    assert answer_recall_at(order, head, tail, np.array([]), 0, 5) is None


def test_answer_hops_undirected():
    head, tail = np.array([0, 2, 3]), np.array([1, 1, 2])  # 0->1<-2<-3
    assert answer_hops(4, head, tail, np.array([0]), np.array([1])) == 1
    assert answer_hops(4, head, tail, np.array([0]), np.array([3])) == 3
    assert answer_hops(5, head, tail, np.array([0]), np.array([4])) == 0  # unreachable
