"""Named Cypher queries and the thin layer that runs them.

Every query kgdb sends lives in a `.cypher` file beside this module (sub-folders allowed,
e.g. `browser/scored_subgraph`). Analysts paste the same files into Neo4j Browser after
setting the parameters with `:param`. This package never imports torch.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from kgdb.config import Settings, mask_uri
from kgdb.cypher.connection_problems import DATABASE_NOT_FOUND, missing_database_reason, unreachable_reason
from kgdb.cypher.driver import (  # the driver without pandas and pyarrow (see there), never `from neo4j import`
    READ_ACCESS,
    AuthError,
    ConfigurationError,
    Driver,
    DriverError,
    EagerResult,
    GraphDatabase,
    Neo4jError,
    RoutingControl,
    ServiceUnavailable,
    Session,
    SessionExpired,
)
from kgdb.errors import DatabaseError, KgdbError, TransactionMemoryError

log = logging.getLogger(__name__)
QUERY_DIR = Path(__file__).parent
_STATEMENT_END = re.compile(r";\s*$", re.MULTILINE)


@lru_cache(maxsize=None)
def query(name: str) -> str:
    """Text of `kgdb/cypher/<name>.cypher`."""
    path = QUERY_DIR / f"{name}.cypher"
    if not path.is_file():
        raise KgdbError(f"no query named {name!r} (expected {path})")
    return path.read_text(encoding="utf-8")


def statements(name: str) -> list[str]:
    """The statements of a multi-statement file (each ends with `;` at the end of a line)."""
    parts = _STATEMENT_END.split(query(name))
    return [p.strip() for p in parts if _strip_comments(p).strip()]


def _strip_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


def quote_identifier(name: str) -> str:
    """Backtick-quote a label or relationship type, doubling embedded backticks.

    Only for places Cypher cannot take a parameter (e.g. a relationship type in a pattern
    that must use an index); prefer `$(param)` dynamic types or parameters everywhere else.
    """
    return "`" + name.replace("`", "``") + "`"


def _first_line(message: str | None) -> str:
    """Neo4j messages can carry a whole Java stack trace; the first line says what failed."""
    return (message or "").strip().splitlines()[0][:500] if message and message.strip() else "(no message)"


class Graph:
    """A connection to one Neo4j database that runs named queries."""

    def __init__(self, settings: Settings, driver: Driver | None = None):
        self.settings = settings
        self.database = settings.neo4j_database
        self._owns_driver = driver is None  # a caller's driver is the caller's to close
        # Set by benchmarks: read queries then run under PROFILE and append (name, bytes) of the
        # server's own peak memory estimate (GlobalMemory) here.
        self.memory_log: list[tuple[str, int]] | None = None
        # The fingerprint read inside `kgdb.cypher.tables.fingerprint_read_once` (None: read each time).
        self.fingerprint_pin: list[tuple[str, dict]] | None = None
        self.driver = driver or GraphDatabase.driver(
            settings.neo4j_uri,
            auth=(settings.neo4j_user, settings.neo4j_password.get_secret_value()),
            # Planner hints such as "label CVT does not exist yet" are noise for users.
            notifications_min_severity="OFF",
            # Memory-limit errors are "transient" too; retrying them for the default 30 s only delays
            # the clear error, while genuine lock conflicts clear well within this.
            max_transaction_retry_time=10.0,
        )

    @classmethod
    def connect(cls, settings: Settings) -> "Graph":
        """Open and verify a connection, turning driver failures into one clear line.

        Messages name the URI with any password in it masked: driver errors echo it verbatim.
        """
        uri = mask_uri(settings.neo4j_uri)
        try:
            graph = cls(settings)
        except (ConfigurationError, ValueError):
            raise DatabaseError(
                f"KGDB_NEO4J_URI / --uri {uri!r} is not a Neo4j URI: expected e.g. bolt://localhost:7687 "
                "or neo4j+s://host:7687 (put the password in KGDB_NEO4J_PASSWORD, not in the URI)"
            ) from None
        try:
            graph.driver.verify_connectivity()
        except AuthError as exc:
            graph.close()
            raise DatabaseError(
                f"Neo4j at {uri} refused user {settings.neo4j_user!r}: wrong password? "
                "Set KGDB_NEO4J_PASSWORD or pass --password."
            ) from exc
        except (DriverError, Neo4jError, OSError, ValueError):
            graph.close()
            if reason := unreachable_reason(settings.neo4j_uri):
                raise DatabaseError(reason) from None
            raise DatabaseError(
                f"cannot reach Neo4j at {uri}: start it with `kgdb neo4j start` "
                "or point KGDB_NEO4J_URI at a running server."
            ) from None
        return graph

    def close(self) -> None:
        if self._owns_driver:
            self.driver.close()

    def __enter__(self) -> "Graph":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def session(self) -> Session:
        return self.driver.session(database=self.database)

    def run(self, name: str, _raw: bool = False, **params: Any) -> list[dict[str, Any]]:
        """Run the named query in an auto-routed transaction and return its rows as dicts (`_raw`: see `run_text`)."""
        return self.run_text(query(name), _name=name, _raw=_raw, **params)

    def run_text(self, text: str, _name: str = "inline", _raw: bool = False, **params: Any) -> list[dict[str, Any]]:
        """Rows as dicts; `_raw` skips the driver's per-element `data()` pass (for big primitive lists).

        A query that writes nothing runs in a READ transaction, so with a `neo4j://` URI the driver
        routes it to a secondary of a cluster (or Aura); writes go to the leader.
        """
        routing = RoutingControl.READ if is_read_only(text) else RoutingControl.WRITE
        if log.isEnabledFor(logging.DEBUG):
            log.debug("cypher %s (%s) %s", _name, routing.value, _summarise(params))
        profiled = self.memory_log is not None and routing is RoutingControl.READ
        try:
            if routing is RoutingControl.READ:
                result = self._read("PROFILE " + text if profiled else text, params)
            else:
                result = self.driver.execute_query(text, parameters_=params, database_=self.database, routing_=routing)
        except (ServiceUnavailable, SessionExpired) as exc:
            raise self._lost() from exc
        except (
            Neo4jError
        ) as exc:  # ClientError, TransientError (memory limits), DatabaseError (e.g. index key too large)
            if exc.code == DATABASE_NOT_FOUND:
                raise DatabaseError(missing_database_reason(self.settings.neo4j_uri, self.database)) from exc
            if is_memory_error(exc):
                raise TransactionMemoryError(
                    f"query {_name!r} exceeded the server's transaction memory: {_first_line(exc.message)}"
                ) from exc
            raise DatabaseError(f"query {_name!r} failed: {_first_line(exc.message)}") from exc
        if profiled and self.memory_log is not None:
            profile = result.summary.profile or {}
            self.memory_log.append((_name, int((profile.get("args") or {}).get("GlobalMemory", 0))))
        if _raw:
            return [dict(zip(result.keys, record.values())) for record in result.records]
        return [record.data() for record in result.records]

    def _read(self, text: str, params: dict[str, Any]) -> EagerResult:
        """A read in an auto-commit transaction: one round trip, where a managed transaction takes two
        (its commit is the second), which is most of a small query's time. It reads the writes committed
        through `execute_query` (the driver's bookmarks); a pooled connection the server has closed since
        is replaced when the session takes it, as for a managed one."""
        with self.driver.session(
            database=self.database,
            default_access_mode=READ_ACCESS,
            bookmark_manager=self.driver.execute_query_bookmark_manager,
        ) as session:
            result = session.run(text, params)
            keys, records = result.keys(), list(result)
            return EagerResult(records, result.consume(), list(keys))  # a list, as the driver's own

    def columns(self, name: str, **params: Any) -> dict[str, Any] | None:
        """The one row of a query returning parallel lists of primitives, without per-element conversion."""
        rows = self.run_text(query(name), _name=name, _raw=True, **params)
        return rows[0] if rows else None

    def single(self, name: str, **params: Any) -> dict[str, Any] | None:
        rows = self.run(name, **params)
        return rows[0] if rows else None

    def run_auto(self, text: str, **params: Any) -> list[dict[str, Any]]:
        """Run in an auto-commit transaction (needed for `CALL { } IN TRANSACTIONS`)."""
        if log.isEnabledFor(logging.DEBUG):
            log.debug("cypher (auto-commit) %s %s", text.strip().splitlines()[0][:80], _summarise(params))
        with self.session() as session:
            try:
                return [r.data() for r in session.run(text, params)]
            except (ServiceUnavailable, SessionExpired) as exc:
                raise self._lost() from exc
            except Neo4jError as exc:
                if exc.code == DATABASE_NOT_FOUND:
                    raise DatabaseError(missing_database_reason(self.settings.neo4j_uri, self.database)) from exc
                raise DatabaseError(f"query failed: {_first_line(exc.message)}") from exc

    def _lost(self) -> DatabaseError:
        return DatabaseError(
            f"lost the connection to Neo4j at {mask_uri(self.settings.neo4j_uri)} (server stopped or unreachable); "
            "once it is back, run the same command again: a load resumes where it stopped"
        )

    def iter_batches(self, rows: list[Any], size: int) -> Iterator[list[Any]]:
        for start in range(0, len(rows), size):
            yield rows[start : start + size]


_WRITE_CLAUSE = re.compile(
    r"\b(CREATE|MERGE|SET|DELETE|REMOVE|DROP|ALTER|GRANT|DENY|REVOKE|LOAD\s+CSV|FOREACH)\b|setNodeVectorProperty|setRelationshipVectorProperty|\bIN\s+TRANSACTIONS\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=None)
def is_read_only(text: str) -> bool:
    """True when a query has no writing clause (comments and string literals ignored)."""
    code = re.sub(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", "''", text)  # literals first: they may hold //
    code = re.sub(r"//[^\n]*", "", code)
    return not _WRITE_CLAUSE.search(code)


def is_memory_error(exc: Neo4jError) -> bool:
    """Neo4j refused a transaction for its memory limit (db.memory.transaction.max / total.max)."""
    code = getattr(exc, "code", "") or ""
    return (
        "MemoryPoolOutOfMemoryError" in code
        or "memory" in (exc.message or "").lower()
        and "transaction" in (exc.message or "").lower()
    )


def _summarise(params: dict[str, Any], width: int = 120) -> str:
    """Parameters for a log line: long lists shown by length and first items, vectors never in full."""
    parts = []
    for key, value in params.items():
        if isinstance(value, (list, tuple)) and len(value) > 3:
            text = f"[{len(value)} items: {value[0]!r:.60}, ...]"
        else:
            text = repr(value)
        parts.append(f"{key}={text[:width]}")
    return "{" + ", ".join(parts) + "}"
