"""What really failed when Neo4j cannot be reached or a database cannot be used, in one line.

A Neo4j Bolt port answers HTTP too (Bolt over WebSocket), so "it answers HTTP" alone does not
mean the user gave Browser's port: the Bolt handshake is tried first. A `+s`/`+ssc` URI against
a server without TLS on Bolt, and a database name the server does not have, each get their own
message instead of "that is the HTTP/Browser port".
"""

from __future__ import annotations

import socket
from urllib.parse import urlparse

from kgdb.config import mask_uri

_BOLT_MAGIC = b"\x60\x60\xb0\x17"
# Offer Bolt 5.0-5.8, 4.4 and 4.0-4.4 (ranges, as drivers do): any Neo4j 4.x/5.x picks one.
_BOLT_VERSIONS = b"\x00\x08\x08\x05" + b"\x00\x00\x04\x04" + b"\x00\x04\x04\x04" + b"\x00\x00\x00\x03"
DATABASE_NOT_FOUND = "Neo.ClientError.Database.DatabaseNotFound"
_TLS_SCHEMES = ("bolt+s", "bolt+ssc", "neo4j+s", "neo4j+ssc")


def _address(uri: str) -> tuple[str, int]:
    parsed = urlparse(uri)
    return parsed.hostname or "localhost", parsed.port or 7687


def port_reply(host: str, port: int, hello: bytes, timeout: float = 2.0) -> bytes:
    """The first bytes a port answers to `hello` (b"" when it cannot be reached or stays silent)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(hello)
            return s.recv(8)
    except (OSError, ValueError):
        return b""


def speaks_plain_bolt(host: str, port: int) -> bool:
    """Whether the port completes a Bolt handshake without TLS (it answers a version it agrees to)."""
    reply = port_reply(host, port, _BOLT_MAGIC + _BOLT_VERSIONS)
    return len(reply) >= 4 and reply[:4] != b"\x00\x00\x00\x00" and not reply.startswith(b"HTTP")


def unreachable_reason(uri: str) -> str | None:
    """Why a URI whose connection failed cannot work, when the port tells; None when it does not."""
    scheme = urlparse(uri).scheme.lower()
    host, port = _address(uri)
    shown = mask_uri(uri)
    if speaks_plain_bolt(host, port):
        if scheme in _TLS_SCHEMES:
            plain = scheme.split("+")[0]
            where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            return (
                f"{shown} asks for an encrypted connection ({scheme}://), but the server at {where} speaks Bolt "
                f"without TLS: use {plain}://{where}, or enable TLS for Bolt on the server"
            )
        return None
    if port_reply(host, port, b"GET / HTTP/1.0\r\n\r\n").startswith(b"HTTP/"):
        return (
            f"{shown} answers HTTP, not Bolt: that is Neo4j's HTTP/Browser port; use the Bolt port "
            "(7687 unless configured otherwise, `kgdb neo4j status` prints it)"
        )
    return None


def missing_database_reason(uri: str, database: str) -> str:
    """The line for a database name the server does not have (driver code DatabaseNotFound)."""
    return (
        f"Neo4j at {mask_uri(uri)} has no database {database!r}: check --database / KGDB_NEO4J_DATABASE "
        "(`SHOW DATABASES` in Browser or cypher-shell lists them; Community has one, usually 'neo4j')"
    )
