"""Slow work that shares nothing with other tests (a throw-away server's starts), begun in one background
thread as the session starts and awaited by the test that checks it.

A JVM start takes tens of seconds of mostly one core, and the tests around it mostly keep one core busy, so
on a two-core machine the starts cost little where they overlap with other tests. A test marks the work it
will wait for with `@pytest.mark.head_start(work)`; tests/db/conftest.py begins the work of the selected
tests in their order, and `result(work, ...)` returns what it returned (or raises what it raised, a skip
included), running it then where nothing began it.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from typing import Any, Callable

_worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="head-start")
_begun: dict[Callable, Future] = {}
_cleanups: list[Callable[[], Any]] = []


def begin(work: Callable, *args: Any) -> None:
    if work not in _begun:
        _begun[work] = _worker.submit(work, *args)


def result(work: Callable, *args: Any) -> Any:
    begin(work, *args)
    return _begun[work].result()


def on_session_end(cleanup: Callable[[], Any]) -> None:
    """Undo what a work leaves behind (a running server, a mount) if no test undid it."""
    _cleanups.append(cleanup)


def finish() -> None:
    """Waits for the work still running, then runs the cleanups, last registered first."""
    _worker.shutdown(wait=True, cancel_futures=True)
    while _cleanups:
        with suppress(Exception):  # a cleanup that fails must not hide the others
            _cleanups.pop()()
