"""The neo4j driver, imported without its optional Arrow support.

At import the driver loads pyarrow.compute (~0.1 s, a sixth of a `kgdb status`) only to convert its
Vector type to and from Arrow, which kgdb never does. While nothing has imported pyarrow yet it is
hidden for the length of that import; a later `import pyarrow` (the parquet loaders) works as usual.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

_HIDDEN = ("pyarrow", "pyarrow.compute")


def import_driver() -> ModuleType:
    if "neo4j" in sys.modules or "pyarrow" in sys.modules:
        return importlib.import_module("neo4j")
    for name in _HIDDEN:
        sys.modules[name] = None  # type: ignore[assignment]  # makes `import pyarrow` raise ImportError
    try:
        return importlib.import_module("neo4j")
    finally:
        for name in _HIDDEN:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


neo4j = import_driver()
