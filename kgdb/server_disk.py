"""Which databases of a local Neo4j are not online (`databases_down`), and why: most often a full disk,
which Neo4j's own logs name and the data folder's free space confirms. `kgdb neo4j start` says so instead of "Neo4j is up"."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Iterable

# Neo4j preallocates each transaction log file (db.tx_log.rotation.size, 256 MiB by default): with less
# free space than this in the data folder a database fails to start or turns read-only.
LOW_DISK = 512 * 1024 * 1024
# What Neo4j writes to its logs when a write finds the disk full (errno 28, ENOSPC).
DISK_FULL_SIGNS = ("No space left on device", "running out of disk space", "ErrorCode=28")
SERVER_LOGS = ("debug.log", "neo4j.log", "console.log")
_LOG_READ_LIMIT = 4 * 1024 * 1024  # bytes of a log read for the signs: the end of what a start appended


def _size(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB" if n < 2**30 else f"{n / 2**30:,.1f} GiB"


def disk_problem(data_dir: Path, logs: Iterable[tuple[Path, int]] = ()) -> str | None:
    """Why the disk holding `data_dir` keeps Neo4j from its databases, or None when nothing says so.

    `logs` are the server's log files, each with the offset to read it from (what a start appended):
    a line there naming a full disk, or less free space than a transaction log takes, is the reason."""
    line = _disk_full_line(logs)
    at = Path(data_dir)
    while not at.exists() and at != at.parent:
        at = at.parent
    try:
        usage = shutil.disk_usage(at)
    except OSError:
        usage = None
    space = f"{_size(usage.free)} free of {_size(usage.total)}" if usage else "free space unknown"
    if line:
        return f"the disk holding {data_dir} is full ({space}); Neo4j's log says: {line}"
    if usage is not None and usage.free < LOW_DISK:
        return (
            f"the disk holding {data_dir} is nearly full ({space}; Neo4j preallocates transaction logs of 256 MiB each)"
        )
    return None


def _disk_full_line(logs: Iterable[tuple[Path, int]]) -> str | None:
    for path, offset in logs:
        try:
            with open(path, "rb") as fh:
                end = fh.seek(0, os.SEEK_END)
                start = offset if offset <= end else 0  # a log shorter than before was rotated: all of it is new
                fh.seek(max(start, end - _LOG_READ_LIMIT))
                text = fh.read().decode("utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            if any(sign in line for sign in DISK_FULL_SIGNS):
                # Without the time stamp, level and logger: what Neo4j says.
                return " ".join(line.rsplit("] ", 1)[-1].split())[:300]
    return None


def databases_down_message(down: list[dict]) -> str:
    """`database 'neo4j' is not available (offline: An error occurred! ...)`, for each one down."""
    parts = [
        f"database '{r['name']}' is not available ({r['currentStatus']}"
        + (f": {' '.join(str(r['statusMessage']).split())[:200]})" if r["statusMessage"] else ")")
        for r in down
    ]
    return ", ".join(parts)


def databases_down(bolt_uri: str, password: str, wait_s: float = 30.0) -> list[dict] | None:
    """The databases asked to be online that are not, after up to `wait_s` for those still starting:
    [] when every one is online, None when the server cannot be asked (another password, not up)."""
    from kgdb.cypher import query
    from kgdb.cypher.driver import DriverError, GraphDatabase, Neo4jError, RoutingControl

    deadline = time.monotonic() + wait_s
    try:
        with GraphDatabase.driver(bolt_uri, auth=("neo4j", password)) as driver:
            while True:
                rows = driver.execute_query(
                    query("server_databases"), database_="system", routing_=RoutingControl.READ
                ).records
                down = [dict(r) for r in rows if r["currentStatus"] != "online"]
                # A database that failed says so (offline with a message); one still starting may yet come up.
                failed = any(r["currentStatus"] in ("offline", "quarantined") and r["statusMessage"] for r in down)
                if not down or failed or time.monotonic() >= deadline:
                    return down
                time.sleep(0.5)
    except (DriverError, Neo4jError, OSError):
        return None


def log_offsets(logs_dir: Path) -> list[tuple[Path, int]]:
    """The server's log files and their sizes now: a failed start reads only what it appended."""
    paths = [logs_dir / name for name in SERVER_LOGS]
    return [(p, p.stat().st_size if p.is_file() else 0) for p in paths]
