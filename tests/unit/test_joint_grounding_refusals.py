"""A plan the joint grounding of several topics (kgdb/cypher/topic_intersection.py) cannot express is
refused before any query, naming where and why."""

from __future__ import annotations

import pytest

from kgdb.cypher.topic_intersection import TopicPaths, ground_jointly
from kgdb.errors import InputError


@pytest.mark.parametrize(
    "plans, where, why",
    [
        ([TopicPaths("", ((("r",), (1,)),))], "plans[0].topic", "empty"),
        ([TopicPaths("A", ((("r", "s", "t", "u"), (1, 1, 1, 1)),))], "plans[0].paths[0]", "1 to 3 relations"),
        ([TopicPaths("A", ((("r", "s"), (1,)),))], "plans[0].paths[0]", "2 relation(s) but 1 direction(s)"),
        (
            [TopicPaths("A", ((("r",), (1,)),)), TopicPaths("B", ((("r",), (2,)),))],
            "plans[1].paths[0]",
            "directions are -1, 0 or 1",
        ),
    ],
)
def test_a_plan_the_query_cannot_ground_is_refused_with_its_place(plans, where, why):
    with pytest.raises(InputError) as err:
        ground_jointly(None, plans)
    assert where in str(err.value) and why in str(err.value)


def test_a_composed_path_longer_than_the_joint_query_grounds_is_left_to_its_topic_alone():
    # a composed reading (a description through a CVT node, then an outer path through another) may take
    # four relations; the joint reading grounds the topic's other paths and never asks for it
    from kgdb.protocol import ScoredPath
    from kgdb.reading import Topics
    from kgdb.rrp.answering import Gathered, GroundedPath
    from kgdb.rrp.joint_topics import topic_paths

    def grounded(score, entities, relations):
        return GroundedPath(ScoredPath(score, entities, relations, (1,) * len(relations)), [], score)

    long = grounded(0.9, ("A", "m.1", "B", "m.2", "C"), ("r", "s", "t", "u"))
    short = grounded(0.4, ("A", "D"), ("v",))
    g = Gathered(Topics(["A"], "given", [], []), {}, {"m.1", "m.2"}, [long, short], [], {}, {}, [], dict)
    plan, scores = topic_paths("A", g, 5)
    assert plan == TopicPaths("A", ((("v",), (1,)),)) and scores == {("A", ("v",), (1,)): 0.4}
