"""The LLM relation-path planner's reply parsing (numbered, bulleted and arrowed paths; anything else
dropped), and the scripted responder the OpenAI-protocol test server plans with."""

from __future__ import annotations

import pytest

from kgdb.rrp.llm_planner import parse_paths
from support.openai_server import plan_listed_relations

pytestmark = pytest.mark.usefixtures("one_thread")


def test_reply_parsing_and_the_demo_responder():
    reply = "Paths:\n1. a.b -> c_d\n- `e.f → g.h`\nSorry\na.b -> c_d\nw.x -> w.y -> w.z -> w.w\nnot a path -> a.b"
    assert parse_paths(reply) == [("a.b", "c_d"), ("e.f", "g.h")]
    prompt = [
        {
            "role": "user",
            "content": "Topic entities: X\nRelations around the topic entities:\nr.one\nr.two\n\nQuestion:\nwhat?",
        }
    ]
    assert parse_paths(plan_listed_relations(prompt)) == [("r.one",), ("r.two",)]
