"""The load lease: one loader per database, enforced in the database rather than trusted.

Two loads that run at once both subtract the triples already stored and then both CREATE the
rest, storing every triple twice (the writer CREATEs for speed, see `writer`). The lease is a
`(:KgdbMeta:KgdbLease {key: 'lease:load'})` node taken under the unique `KgdbMeta.key`
constraint, so the second loader sees the first one's holder and stops with a clear message.
It is released at the end of the load and on error; a loader killed with SIGKILL leaves it
behind, which `--break-lease` removes.
"""

from __future__ import annotations

import os
import secrets
import socket
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Iterator

import psutil

from kgdb.cypher import Graph
from kgdb.errors import KgdbError

LOAD_KEY = "lease:load"


class LeaseHeld(KgdbError):
    """Another loader holds the lease of this database."""


def holder_string() -> str:
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return f"{socket.gethostname()} pid {os.getpid()} started {started} token {secrets.token_hex(4)}"


def _holder_gone(holder: str) -> bool:
    """Whether a holder string names a process on this host that no longer runs.

    A pid reused by a process started after the lease was taken counts as gone.
    """
    parts = holder.split()
    if len(parts) < 5 or parts[0] != socket.gethostname() or parts[1] != "pid" or not parts[2].isdigit():
        return False
    try:
        started = datetime.fromisoformat(parts[4]).timestamp()
        return psutil.Process(int(parts[2])).create_time() > started + 1
    except psutil.NoSuchProcess:
        return True
    except (psutil.Error, ValueError):
        return False


def acquire(graph: Graph, key: str = LOAD_KEY, break_lease: bool = False, log=lambda _msg: None) -> str:
    """Take the lease; returns our holder string.

    A lease whose holder provably died on this host (killed load) is removed, so rerunning the
    same command resumes as before; `break_lease` removes any lease (a holder on another host).
    """
    if break_lease:
        for row in graph.run("load_lease_break", key=key, holder=None):
            log(f"removed the load lease of {row['holder']}")
    holder = holder_string()
    row = graph.single("load_lease_acquire", key=key, holder=holder)
    if row is not None and not row["ours"] and _holder_gone(row["holder"]):
        graph.run("load_lease_break", key=key, holder=row["holder"])
        log(f"removed the stale load lease of {row['holder']} (that process no longer runs)")
        row = graph.single("load_lease_acquire", key=key, holder=holder)
    if row is None or not row["ours"]:
        theirs = row["holder"] if row else "unknown"
        since = row["since"] if row else "?"
        raise LeaseHeld(
            f"another load is writing to database {graph.database!r} (lease held by {theirs}, since {since}); "
            "loads run one at a time per database. Wait for it, or, if that load was killed on another "
            "machine, rerun with --break-lease to remove its lease"
        )
    return holder


def release(graph: Graph, holder: str, key: str = LOAD_KEY) -> None:
    graph.run("load_lease_release", key=key, holder=holder)


@contextmanager
def load_lease(graph: Graph, break_lease: bool = False, key: str = LOAD_KEY, log=lambda _msg: None) -> Iterator[str]:
    holder = acquire(graph, key, break_lease, log)
    try:
        yield holder
    finally:
        try:
            release(graph, holder, key)
        except KgdbError:
            pass  # connection lost: the original error says more; --break-lease clears the leftover


def remove_duplicate_triples(graph: Graph) -> int:
    """Delete duplicate (h, r, t) relationships, keeping one of each; returns how many went."""
    from kgdb.cypher import query

    rows = graph.run_auto(query("repair_duplicate_triples"))
    return rows[0]["deleted"] if rows else 0
