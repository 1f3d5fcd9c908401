"""The Python API misused: a connection used after `close()` (or after the caller closed the driver it
handed in) raises one typed `ClosedError` saying so, never the driver's own error; an argument of the
wrong type is an `InputError` naming the parameter."""

from __future__ import annotations

import neo4j
import pytest

import kgdb
from kgdb.errors import ClosedError, InputError, KgdbError

pytestmark = pytest.mark.usefixtures("one_thread")

TRIPLES = [
    ("France", "location.country.capital", "Paris"),
    ("Paris", "location.location.containedby", "France"),
]

# Each call a user may make on a connection, with arguments that work while it is open.
CALLS = {
    "retrieve": lambda kg: kg.retrieve("What is the capital of France?", retriever="cosine", k=3, write=False),
    "ask": lambda kg: kg.ask("What is the capital of France?", retriever="cosine", write=False),
    "explain": lambda kg: kg.explain(),
    "link": lambda kg: kg.link("France"),
    "names": lambda kg: kg.names(["France"]),
    "runs": lambda kg: kg.runs(),
    "read_run": lambda kg: kg.read_run("no-such-run"),
    "chains": lambda kg: kg.chains("no-such-run"),
    "paths": lambda kg: kg.paths("France", ["Paris"]),
}


@pytest.fixture
def settings(kept_graph, tmp_path):
    return kept_graph(TRIPLES).settings.with_overrides(
        cache_dir=tmp_path / "cache", checkpoints_dir=tmp_path / "ckpt", runs_dir=tmp_path / "runs"
    )


def _driver(settings) -> neo4j.Driver:
    return neo4j.GraphDatabase.driver(
        settings.neo4j_uri, auth=(settings.neo4j_user, settings.neo4j_password.get_secret_value())
    )


@pytest.mark.parametrize("call", CALLS)
def test_a_call_after_close_raises_closed_error(settings, call):
    kg = kgdb.connect(settings=settings)
    CALLS["retrieve"](kg)  # a pipeline built while open is no way round the check
    kg.close()
    with pytest.raises(ClosedError, match="closed") as err:
        CALLS[call](kg)
    assert isinstance(err.value, KgdbError)
    kg.close()  # closing twice is harmless


@pytest.mark.parametrize("call", CALLS)
def test_a_call_after_the_callers_driver_was_closed_raises_closed_error(settings, call):
    driver = _driver(settings)
    kg = kgdb.connect(driver=driver, settings=settings)
    CALLS["retrieve"](kg)
    driver.close()
    with pytest.raises(ClosedError, match="neo4j.Driver .* closed"):
        CALLS[call](kg)


def test_the_callers_driver_stays_open_when_the_connection_closes(settings):
    driver = _driver(settings)
    with kgdb.connect(driver=driver, settings=settings) as kg:
        assert kg.names(["France"]) == {"France": "France"}
    assert driver.execute_query("RETURN 1 AS one").records[0]["one"] == 1
    driver.close()


@pytest.mark.parametrize("value", ["x", 3, None, {"run": "r"}])
def test_write_back_of_something_else_than_a_retrieval_names_the_parameter(settings, value):
    with kgdb.connect(settings=settings) as kg, pytest.raises(InputError, match=r"^retrieval: .*Retrieval"):
        kg.write_back(value)


@pytest.mark.parametrize("value", ["x", 3, object(), neo4j.GraphDatabase])
def test_connect_with_something_else_than_a_driver_names_the_parameter(settings, value):
    with pytest.raises(InputError, match=r"^driver: .*neo4j\.Driver"):
        kgdb.connect(driver=value, settings=settings)
