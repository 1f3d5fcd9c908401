"""Cypher from an agent, run so that it can read the graph and nothing else.

An LLM agent writes its own queries, so the text is untrusted. Four checks stand between it and the
graph, each enough on its own for what it covers:

1. the text: one statement, no `LOAD CSV` (Neo4j plans it as a read, but it reads files and URLs),
   no `USE` of another database, no `TERMINATE TRANSACTIONS` (planned as a read, yet it stops other
   users' work), no administration command, and no procedure of a namespace that administers or writes
   (`dbms.*`, `db.create*`, `db.clear*`, `db.drop*`, `apoc.*`);
2. the plan: the query is `EXPLAIN`ed first and refused unless Neo4j reports it read-only
   (`summary.query_type == "r"`; "w", "rw" and "s" are refused);
3. the transaction: it runs in a READ transaction, where the server itself refuses any write;
4. the limits: a server-side transaction timeout stops a runaway query, and at most `row_cap` + 1
   rows are read (the extra one only says that more exist).

Parameters always travel as parameters; the text is never edited or interpolated here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import kgdb.cypher.driver  # noqa: F401  (first: the driver without pandas and pyarrow)

# isort: split
from neo4j import READ_ACCESS, ManagedTransaction, Query, unit_of_work
from neo4j.exceptions import Neo4jError, ServiceUnavailable, SessionExpired
from neo4j.graph import Node, Path, Relationship
from neo4j.time import Date, DateTime, Duration, Time

from kgdb.cypher import Graph
from kgdb.errors import DatabaseError, InputError

READ_ONLY = "r"
QUERY_TYPES = {"r": "read-only", "w": "write", "rw": "read and write", "s": "schema or administration"}
# Most characters of one query: an agent's query is a few lines, never a document.
MAX_QUERY_CHARS = 20_000
# A number list longer than this is a vector (entity and relation embeddings): shown by its length only.
MAX_VECTOR_SHOWN = 16
# Items kept of one list value and characters of one string value in a row.
MAX_LIST_ITEMS = 200
MAX_STRING_CHARS = 4_000

_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_REFUSED_CLAUSES = (
    (re.compile(r"\bLOAD\s+CSV\b", re.IGNORECASE), "LOAD CSV reads files and URLs, not the graph"),
    (re.compile(r"\bTERMINATE\s+TRANSACTIONS?\b", re.IGNORECASE), "TERMINATE TRANSACTIONS stops other users' work"),
    (
        re.compile(r"(?:^|[{]|\bUNION(?:\s+ALL)?)\s*USE\b", re.IGNORECASE),
        "USE selects another database; queries run on the graph's own database",
    ),
    (
        re.compile(
            r"\b(?:GRANT|DENY|REVOKE)\b|\b(?:CREATE|DROP|ALTER|START|STOP|RENAME)\s+"
            r"(?:OR\s+REPLACE\s+)?(?:COMPOSITE\s+)?(?:DATABASE|ALIAS|USER|ROLE|SERVER)\b",
            re.IGNORECASE,
        ),
        "administration commands are not run",
    ),
)
_PROCEDURE = re.compile(r"\bCALL\s+([A-Za-z_][\w.]*)", re.IGNORECASE)
_REFUSED_PROCEDURES = re.compile(r"^(?:dbms\.|db\.create|db\.clear|db\.drop|db\.checkpoint|apoc\.)", re.IGNORECASE)


class CypherRefused(InputError):
    """The query could change the graph, the server or other users' work, so it was not run."""


class CypherTimeout(DatabaseError):
    """The query ran past its time limit and the server stopped it."""


@dataclass(frozen=True)
class CypherRows:
    """What a read-only query returned: at most `row_cap` rows as JSON-ready dicts, in the query's
    column order; `truncated` when the query had more rows (or a value was shortened)."""

    columns: list[str]
    rows: list[dict[str, Any]]
    truncated: bool


def code_of(text: str) -> str:
    """The query without comments and with every string literal and quoted name blanked, so a
    keyword inside a name or a string ("'LOAD CSV'", `` `USE` ``) is not read as a clause."""
    return _COMMENT.sub(" ", _LITERAL.sub("''", text))


def check_text(text: str) -> str:
    """The query as it will run (one trailing `;` dropped), or `CypherRefused` saying why not."""
    if not isinstance(text, str) or not text.strip():
        raise CypherRefused("must be a non-empty Cypher query", path="query")
    if len(text) > MAX_QUERY_CHARS:
        raise CypherRefused(f"is {len(text):,} characters long; at most {MAX_QUERY_CHARS:,} are run", path="query")
    code = code_of(text)
    body = code.strip().removesuffix(";")
    if ";" in body:
        raise CypherRefused("refused: holds more than one statement; send one query per call", path="query")
    for pattern, why in _REFUSED_CLAUSES:
        if pattern.search(body):
            raise CypherRefused(f"refused: {why}", path="query")
    for name in _PROCEDURE.findall(body):
        if _REFUSED_PROCEDURES.match(name):
            raise CypherRefused(
                f"refused: procedure {name!r} administers the server or writes; only reading procedures "
                "such as db.labels(), db.relationshipTypes() or db.index.fulltext.queryNodes() are run",
                path="query",
            )
    stripped = text.strip()
    # the statement's own `;` is dropped from the text sent, not from a string or comment inside it
    return stripped[:-1] if code.strip().endswith(";") and stripped.endswith(";") else stripped


def run_read_only(
    graph: Graph, text: str, parameters: dict[str, Any] | None, *, timeout_s: float, row_cap: int
) -> CypherRows:
    """Run an agent's query if, and only if, it reads (see the module docstring): at most `row_cap`
    rows, stopped by the server after `timeout_s` seconds."""
    if not isinstance(parameters, dict) and parameters is not None:
        raise InputError(f"must be an object of parameter names to values, got {parameters!r}", path="parameters")
    statement = check_text(text)
    params = dict(parameters or {})
    try:
        with graph.driver.session(
            database=graph.database,
            default_access_mode=READ_ACCESS,
            bookmark_manager=graph.driver.execute_query_bookmark_manager,
        ) as session:
            summary = session.run(Query("EXPLAIN " + statement, timeout=timeout_s), params).consume()
            kind = summary.query_type or "?"
            if kind != READ_ONLY:
                raise CypherRefused(
                    f"refused: Neo4j plans this query as {QUERY_TYPES.get(kind, kind)} ({kind!r}); "
                    "only read-only queries run",
                    path="query",
                )
            # the server stops the transaction at the time limit (`unit_of_work` sets it per transaction)
            return session.execute_read(unit_of_work(timeout=timeout_s)(_rows), statement, params, row_cap)
    except (ServiceUnavailable, SessionExpired) as exc:
        raise DatabaseError("lost the connection to Neo4j; try again once it is back") from exc
    except Neo4jError as exc:
        raise _clear_error(exc, timeout_s) from exc


def _rows(tx: ManagedTransaction, statement: str, params: dict, row_cap: int) -> CypherRows:
    result = tx.run(statement, params)
    columns = list(result.keys())
    rows: list[dict[str, Any]] = []
    shortened = [False]
    for record in result:
        if len(rows) == row_cap:
            result.consume()  # one row past the cap: more exist; the rest are not read
            return CypherRows(columns, rows, True)
        rows.append({key: to_json(value, shortened) for key, value in zip(columns, record.values())})
    return CypherRows(columns, rows, shortened[0])


def _clear_error(exc: Neo4jError, timeout_s: float) -> Exception:
    code = exc.code or ""
    first = (exc.message or "").strip().splitlines()[0][:500] if (exc.message or "").strip() else code
    if "TransactionTimedOut" in code or "Transaction.TransactionTimedOut" in code:
        return CypherTimeout(
            f"the query ran past its time limit of {timeout_s:g} s and was stopped; "
            "bound it (LIMIT, a narrower MATCH, an index lookup) and try again"
        )
    if code == "Neo.ClientError.Statement.AccessMode":
        return CypherRefused(f"refused: the query tried to write in a read-only transaction ({first})", path="query")
    if code.startswith("Neo.ClientError."):
        return InputError(f"Neo4j rejected the query: {first}", path="query")
    return DatabaseError(f"the query failed in Neo4j: {first}")


def to_json(value: Any, shortened: list[bool]) -> Any:
    """A Neo4j value as JSON data: nodes as {element_id, labels, properties}, relationships as
    {element_id, type, start, end, properties}, paths as their nodes and relationships, temporal
    values as ISO text; vectors by their length only; long lists and strings shortened (and
    `shortened[0]` set)."""
    if isinstance(value, (Node, Relationship, Path)):
        return _graph_json(value, shortened)
    if isinstance(value, (list, tuple)):
        if len(value) > MAX_VECTOR_SHOWN and all(isinstance(x, float) for x in value):
            return {"vector_of": len(value)}
        if len(value) > MAX_LIST_ITEMS:
            shortened[0] = True
        return [to_json(x, shortened) for x in value[:MAX_LIST_ITEMS]]
    if isinstance(value, dict):
        return {str(k): to_json(v, shortened) for k, v in value.items()}
    return _scalar_json(value, shortened)


def _scalar_json(value: Any, shortened: list[bool]) -> Any:
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        if len(value) > MAX_STRING_CHARS:
            shortened[0] = True
            return value[:MAX_STRING_CHARS]
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (Date, DateTime, Time, Duration)):
        return value.iso_format()
    if isinstance(value, bytes):
        return {"bytes": len(value)}
    return str(value)


def _graph_json(value: Node | Relationship | Path, shortened: list[bool]) -> dict[str, Any]:
    if isinstance(value, Node):
        return {"element_id": value.element_id, "labels": sorted(value.labels), "properties": _props(value, shortened)}
    if isinstance(value, Relationship):
        return {
            "element_id": value.element_id,
            "type": value.type,
            "start": value.start_node.element_id if value.start_node is not None else None,
            "end": value.end_node.element_id if value.end_node is not None else None,
            "properties": _props(value, shortened),
        }
    return {
        "nodes": [to_json(n, shortened) for n in value.nodes],
        "relationships": [to_json(r, shortened) for r in value.relationships],
    }


def _props(entity: Node | Relationship, shortened: list[bool]) -> dict[str, Any]:
    return {key: to_json(entity[key], shortened) for key in sorted(entity.keys())}
