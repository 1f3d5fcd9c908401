"""kgdb: graph-database-backed retrieval for knowledge-graph question answering (Neo4j + PyTorch).

The Python API (see README "Python API"):

    import kgdb
    with kgdb.connect("bolt://localhost:7687", password="...") as kg:
        kg.retrieve("What is the capital of France?")

Names are imported on first use, so `import kgdb` stays cheap (no torch until retrieval runs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "connect": "kgdb.api",
    "Kgdb": "kgdb.api",
    "Settings": "kgdb.config",
    "KgdbError": "kgdb.errors",
    "InputError": "kgdb.errors",
    "DatabaseError": "kgdb.errors",
    "Retrieval": "kgdb.protocol",
    "ScoredTriple": "kgdb.protocol",
    "ScoredPath": "kgdb.protocol",
    "ScoredEntity": "kgdb.protocol",
    "QuestionRetriever": "kgdb.protocol",
    "Retriever": "kgdb.models.base",
    "register_retriever": "kgdb.models.registry",
}

__all__ = sorted(_EXPORTS) + ["__version__"]

if TYPE_CHECKING:  # pragma: no cover (names for type checkers; at run time __getattr__ imports them)
    from kgdb.api import Kgdb, connect  # noqa: F401
    from kgdb.config import Settings  # noqa: F401
    from kgdb.errors import DatabaseError, InputError, KgdbError  # noqa: F401
    from kgdb.models.base import Retriever  # noqa: F401
    from kgdb.models.registry import register as register_retriever  # noqa: F401
    from kgdb.protocol import QuestionRetriever, Retrieval, ScoredEntity, ScoredPath, ScoredTriple  # noqa: F401


def _installed_version() -> str:
    # The installed distribution's version (pyproject.toml's `version`), read on first use of
    # `kgdb.__version__` so package and metadata never disagree and `import kgdb` reads no metadata.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kgdb")
    except PackageNotFoundError:  # pragma: no cover (a source tree on sys.path, never pip-installed)
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = value = _installed_version()
        return value
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kgdb' has no attribute {name!r}")
    import importlib

    attr = "register" if name == "register_retriever" else name
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value
