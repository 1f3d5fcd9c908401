"""Question sets -> `(:Question {id, text, answers, answer_entities, topics, hop?})-[:ABOUT]->(:Entity)`.

Formats: JSONL with `id, question, q_entity, a_entity, answer` (optional `hop`), RoG parquet
(same columns), and MetaQA `k-hop/qa.txt` (read by `kgdb.data.questions`, same ids as training).
Topics link to entities by id; topics missing from the graph are counted, not created.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from kgdb.cypher import Graph
from kgdb.errors import InputError
from kgdb.loaders.badlines import BadLines
from kgdb.loaders.rog import rog_rows

QUESTION_SUFFIXES = (".jsonl", ".json", ".parquet", ".txt")


@dataclass
class QuestionStats:
    questions: int = 0
    topics: int = 0
    linked: int = 0

    @property
    def missing_topics(self) -> int:
        return self.topics - self.linked


def _names(value: list[str], field: str, path: Path, line: int, bad: BadLines) -> list[str] | None:
    # The same policy as the triple readers, or topics would miss the entities they name.
    out = [bad.clean(v) for v in value]
    if not all(bad.text_ok(v, f"`{field}`", path, line) for v in out):
        return None
    return [v for v in out if v]


def read_question_file(path: Path, bad: BadLines | None = None) -> list[dict[str, Any]]:
    bad = bad or BadLines()
    if not path.is_file():
        raise InputError("question file not found", path=path)
    if path.suffix.lower() == ".txt":
        from kgdb.data.questions import read_questions  # pure-Python reader shared with training

        return [
            {
                "id": q.id,
                "text": q.text,
                "answers": q.answers,
                "answer_entities": q.answers,
                "topics": q.topics,
                "hop": q.hop,
            }
            for q in read_questions(path).questions
        ]
    if path.suffix.lower() not in QUESTION_SUFFIXES:
        raise InputError(f"unknown question format; expected one of {', '.join(QUESTION_SUFFIXES)}", path=path)
    from kgdb.data.question_rows import QuestionRowError, validate_row

    rows: dict[str, dict[str, Any]] = {}
    for line_no, rec in rog_rows(path, bad):
        try:
            row = validate_row(rec)
        except QuestionRowError as exc:
            bad(str(exc), path, line_no)
            continue
        topics = _names(row.q_entity, "q_entity", path, line_no, bad)
        answers = _names(row.answer, "answer", path, line_no, bad)
        a_entity = _names(row.a_entity, "a_entity", path, line_no, bad)
        if topics is None or answers is None or a_entity is None:
            continue
        qid, text = bad.clean(row.id), bad.clean(row.question)
        if not (bad.key_ok(qid, "`id`", path, line_no) and bad.text_ok(text, "`question`", path, line_no)):
            continue
        rows[qid] = {
            "id": qid,
            "text": text,
            "answers": answers or a_entity,
            "answer_entities": a_entity or answers,
            "topics": topics,
            "hop": row.hop,
        }
    return [rows[k] for k in sorted(rows)]


def write_questions(
    graph: Graph,
    rows: list[dict[str, Any]],
    batch_size: int = 5_000,
    progress: Callable[[str, int, int], None] = lambda *_: None,
) -> QuestionStats:
    """Upsert questions and their ABOUT links (idempotent)."""
    from kgdb.cypher.schema import init_schema

    init_schema(graph, None, None)
    stats = QuestionStats(questions=len(rows), topics=sum(len(set(r["topics"])) for r in rows))
    done = 0
    for batch in graph.iter_batches(rows, batch_size):
        row = graph.single("load_questions", rows=batch)
        stats.linked += row["linked"] if row else 0
        done += len(batch)
        progress("questions", done, len(rows))
    return stats
