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
