"""A planner that hands questions to another (the LLM planner's fallback, a fallback loaded on first use) opens
that planner's block for one question's readings (`PathPlanner.question`), so they share what it keeps."""

from __future__ import annotations

from contextlib import contextmanager

from kgdb.reading import Topics, read_question
from kgdb.rrp.llm_planner import DeferredPlanner, LLMPathPlanner
from kgdb.rrp.plan import PathPlanner, Plan


class _Recording(PathPlanner):
    name = "recording"

    def __init__(self):
        self.blocks = 0

    def plan(self, graph, reading, topics, names) -> Plan:
        return Plan(topics, (), (), reading.text)

    @contextmanager
    def question(self):
        self.blocks += 1
        yield


def test_the_llm_planner_opens_its_fallbacks_block():
    inner = _Recording()
    with LLMPathPlanner(None, fallback=inner).question():
        assert inner.blocks == 1
    with LLMPathPlanner(None).question():  # no fallback: nothing to open
        pass
    assert inner.blocks == 1


def test_a_deferred_planner_opens_the_block_of_the_planner_it_loaded_and_loads_nothing_for_it():
    inner, loads = _Recording(), []
    deferred = DeferredPlanner("recording", lambda: loads.append(1) or inner)
    with deferred.question():
        pass
    assert loads == [] and inner.blocks == 0  # nothing loaded yet: no block, and none loaded for one
    deferred.plan(None, read_question("q"), Topics(["a"], "given", [], []), {})
    with deferred.question():
        assert inner.blocks == 1
    assert loads == [1]
