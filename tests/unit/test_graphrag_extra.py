"""`kgdb.integrations.neo4j_graphrag` without the neo4j-graphrag package installed: importing it is one
error naming the `kgdb[graphrag]` extra."""

from __future__ import annotations

import importlib
import sys

import pytest

pytest.importorskip("neo4j_graphrag", reason="neo4j-graphrag is not installed (pip install 'kgdb[graphrag]')")

import kgdb.integrations.neo4j_graphrag  # noqa: F401  (imported with the package; the test imports it again without)
from kgdb.errors import KgdbError

pytestmark = pytest.mark.usefixtures("one_thread")


def test_missing_package_names_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m == "neo4j_graphrag" or m.startswith("neo4j_graphrag.")]:
        monkeypatch.setitem(sys.modules, name, None)  # `import` of a None entry raises ImportError
    monkeypatch.delitem(sys.modules, "kgdb.integrations.neo4j_graphrag")
    with pytest.raises(KgdbError, match=r"pip install 'kgdb\[graphrag\]'"):
        importlib.import_module("kgdb.integrations.neo4j_graphrag")
