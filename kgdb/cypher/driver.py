"""The neo4j driver, imported without its optional pandas and Arrow support.

At import the 6.x driver loads pyarrow and pyarrow.compute (0.1 s of CPU; 0.3 s and more of a cold
`kgdb ask` on a busy machine), and pandas where installed, only to convert its Vector type to and
from Arrow and to take pandas values as query parameters, which kgdb never does (it reads records,
never `to_df`). Those of them nothing has imported yet are hidden for the length of that one
import; a later `import pyarrow` (the parquet loaders) works as usual. numpy is left visible: kgdb
imports it on every path anyway, and the driver then takes numpy values as parameters. `kgdb.cypher`
takes the driver's names from here, so whatever imports it first (every command that reads the
graph) imports the driver this way; a module that imports `neo4j` itself should import this first.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

# pyarrow.compute comes with pyarrow: once pyarrow is in, the driver gets both, as it expects
_OPTIONAL = {"pandas": ("pandas",), "pyarrow": ("pyarrow", "pyarrow.compute")}


def import_driver() -> ModuleType:
    if "neo4j" in sys.modules:
        return sys.modules["neo4j"]
    hidden = [name for top, names in _OPTIONAL.items() if top not in sys.modules for name in names]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # makes `import <name>` raise ImportError
    try:
        return importlib.import_module("neo4j")
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


neo4j = import_driver()

from neo4j import READ_ACCESS, Driver, EagerResult, GraphDatabase, RoutingControl, Session  # noqa: E402
from neo4j.exceptions import (  # noqa: E402
    AuthError,
    ConfigurationError,
    DriverError,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
)

__all__ = [
    "READ_ACCESS",
    "AuthError",
    "ConfigurationError",
    "Driver",
    "DriverError",
    "EagerResult",
    "GraphDatabase",
    "Neo4jError",
    "RoutingControl",
    "ServiceUnavailable",
    "Session",
    "SessionExpired",
    "neo4j",
]
