"""Retrieval and answering see a question only through its `QuestionReading`: once the reading has been
encoded, replacing its text changes no answer, linked or given, composed or plain (every other fact about the
question was read from the text before retrieval began)."""

from __future__ import annotations

import dataclasses

import pytest

from kgdb.cypher.linking import NoTopicError
from kgdb.reading import read_question
from kgdb.rrp.model_choice import relation_path_retriever
from support.films import FILMS
from support.graphs import load

pytestmark = pytest.mark.usefixtures("one_thread")

QUESTIONS = [
    ("where was the director of avatar born?", None),  # linked, read as a composition
    ("who directed Titanic?", None),  # linked, a name written with a capital
    ("what is the capital of the country James Cameron is from?", ["James Cameron"]),  # given
]


def _answers(result) -> list:
    return [(e.id, round(e.score, 6)) for e in result.entities], [(p.entities, p.relations) for p in result.paths]


@pytest.mark.parametrize(("question", "topics"), QUESTIONS)
def test_replacing_the_text_after_encoding_changes_no_answer(graph, question, topics):
    load(graph, FILMS)
    retriever = relation_path_retriever(graph, graph.settings, write=False)
    reading = read_question(question)
    first = retriever.retrieve(reading, topics)
    assert first.entities, "the question must be answered for the comparison to mean anything"
    # the same reading, its encodings kept, with a text that names nothing and asks nothing
    blind = dataclasses.replace(reading, text="zzz qqq")
    again = retriever.retrieve(blind, topics)
    assert _answers(again) == _answers(first)
    assert again.question == "zzz qqq"  # the text itself is only shown
    if topics is None:  # and the text did matter: read afresh, it names no entity to start from
        with pytest.raises(NoTopicError):
            retriever.retrieve("zzz qqq")
