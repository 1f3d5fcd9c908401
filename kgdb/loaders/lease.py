"""The load lease: one loader per database, enforced in the database rather than trusted.

Two loads that run at once both subtract the triples already stored and then both CREATE the
rest, storing every triple twice (the writer CREATEs for speed, see `writer`). The lease is a
`(:KgdbMeta:KgdbLease {key: 'lease:load'})` node taken under the unique `KgdbMeta.key`
constraint, so the second loader sees the first one's holder and stops with a clear message.
It is released at the end of the load and on error; a loader killed with SIGKILL leaves it
behind, which `--break-lease` removes.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Iterator

import psutil

from kgdb.cypher import Graph
from kgdb.cypher.tables import fingerprint_changes
from kgdb.errors import KgdbError

LOAD_KEY = "lease:load"


class LeaseHeld(KgdbError):
    """Another loader holds the lease of this database."""


def holder_string() -> str:
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return f"{socket.gethostname()} pid {os.getpid()} started {started} token {secrets.token_hex(4)}"


def _holder_state(holder: str) -> str:
    """ "gone" (a process of this host that no longer runs; a pid reused by a process started after
    the lease was taken counts as gone), "running" (still runs on this host) or "unknown"."""
    parts = holder.split()
    if len(parts) < 5 or parts[0] != socket.gethostname() or parts[1] != "pid" or not parts[2].isdigit():
        return "unknown"
    try:
        started = datetime.fromisoformat(parts[4]).timestamp()
        return "gone" if psutil.Process(int(parts[2])).create_time() > started + 1 else "running"
    except psutil.NoSuchProcess:
        return "gone"
    except (psutil.Error, ValueError):
        return "unknown"


def _holder_gone(holder: str) -> bool:
    return _holder_state(holder) == "gone"


def remove_dead_lease(graph: Graph, key: str = LOAD_KEY, log=lambda _msg: None) -> None:
    """`--break-lease`: remove the lease of a load that cannot release it, never a live one.

    A holder still running on this host is a load in progress: removing its lease would let two
    loads CREATE the same triples, so that is refused whatever the flag says. Only the holder that
    was checked is removed, not one that took the lease in between.
    """
    row = graph.single("load_lease_holder", key=key)
    if row is None:
        return
    holder = row["holder"]
    if _holder_state(holder) == "running":
        pid = holder.split()[2]
        raise LeaseHeld(
            f"the load lease of database {graph.database!r} is held by a load still running on this host "
            f"(pid {pid}, {holder}, since {row['since']}); --break-lease only removes the lease of a load that "
            "was killed: wait for it to finish, or stop it first"
        )
    for removed in graph.run("load_lease_break", key=key, holder=holder):
        log(f"removed the load lease of {removed['holder']}")


def acquire(graph: Graph, key: str = LOAD_KEY, break_lease: bool = False, log=lambda _msg: None) -> str:
    """Take the lease; returns our holder string.

    A lease whose holder provably died on this host (killed load) is removed, so rerunning the
    same command resumes as before; `break_lease` also removes one whose holder cannot be checked (a
    load killed on another host), never one still running here.
    """
    if break_lease:
        remove_dead_lease(graph, key, log)
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
    fingerprint_changes(graph)
    try:
        yield holder
    finally:
        fingerprint_changes(graph)
        with contextlib.suppress(
            KgdbError
        ):  # connection lost: the original error says more; --break-lease clears the leftover
            release(graph, holder, key)


def remove_duplicate_triples(graph: Graph) -> int:
    """Delete duplicate (h, r, t) relationships, keeping one of each; returns how many went."""
    from kgdb.cypher import query

    rows = graph.run_auto(query("repair_duplicate_triples"))
    return rows[0]["deleted"] if rows else 0
