"""Deadlines on LLM requests that no server can stretch.

The openai client's `timeout` bounds each socket operation, not a request: a server that sends its
reply one byte every few seconds never trips it, and a silent one costs (retries + 1) x timeout. Two
deadlines bound every call instead:
- per request (one attempt: connect, send, and every read of the headers and the body): when it passes
  the attempt ends as a timeout, which the openai client retries with its own back-off;
- per ask (every attempt, back-off and follow-up turn of one question): when it passes the call ends with
  `TimeUp`, which the client's retry loop lets through.
A deadline is enforced by shutting the request's socket down from a timer thread: that wakes a read
blocked in the kernel at once, whatever the server sends. Connections are not kept alive, so each request
has a socket of its own to cut (a new TCP connection per LLM call costs little next to the call).
"""

from __future__ import annotations

import contextlib
import functools
import math
import socket
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

_OPENED = (".connect_tcp.complete", ".connect_unix_socket.complete", ".start_tls.complete")
_RETRIED = {408, 409, 429}  # and 5xx: the statuses the openai client retries
NO_DEADLINE = math.inf


class Deadline:
    """The time left to one ask: a question with its follow-up turns, or one label or plan prompt with
    its follow-up. The clock stops while the ask queues for a free slot of the server."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.ends = time.monotonic() + seconds

    def left(self) -> float:
        return self.ends - time.monotonic()

    @contextmanager
    def paused(self) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.ends += time.monotonic() - start


class TimeUp(BaseException):
    """The ask's deadline passed (or a retry the server asks for would start after it). A BaseException,
    like anyio's cancellation, because the openai client retries every Exception its transport raises."""

    def __init__(self, why: str = ""):
        super().__init__(why)
        self.why = why


def http_module() -> Any:
    """The httpx the installed openai client is built on (`httpx`, or `httpx2` for newer releases)."""
    import openai

    base = next(c for c in openai.DefaultHttpxClient.__mro__ if c.__name__ == "Client" and c.__module__ != "openai")
    return sys.modules[base.__module__.split(".")[0]]


def shared_transport(base_url: str | None) -> Any:
    """One connection pool for an endpoint, without keep-alive, through the proxy the environment names
    for its host (the per-call clients ignore the environment, so every request passes the deadlines)."""
    http = http_module()
    parts = urlsplit(base_url or "https://api.openai.com/v1")
    proxies = urllib.request.getproxies()
    proxy = (
        None if urllib.request.proxy_bypass(parts.hostname or "") else proxies.get(parts.scheme) or proxies.get("all")
    )
    options: dict[str, Any] = {"limits": http.Limits(max_connections=100, max_keepalive_connections=0)}
    if proxy:
        options["proxy"] = http.Proxy(proxy)
    return http.HTTPTransport(**options)


def bounded_client(transport: Any, request_seconds: float, deadline: Deadline | None, timeout: float) -> Any:
    """An http client for the openai client whose requests end by `request_seconds` each and all by
    `deadline` (None: only the per-request one)."""
    http = http_module()
    bounded = _classes(http)[0](transport, request_seconds, deadline)
    return http.Client(transport=bounded, timeout=timeout, follow_redirects=True, trust_env=False)


@functools.cache
def _classes(http: Any) -> tuple[type, type]:
    """The transport and response stream, built on the httpx module in use (its client checks their types)."""

    class BoundedTransport(http.BaseTransport):  # type: ignore[name-defined,misc]
        def __init__(self, inner: Any, request_seconds: float, deadline: Deadline | None):
            self.inner, self.request_seconds, self.deadline = inner, request_seconds, deadline

        def handle_request(self, request: Any) -> Any:
            left = self.deadline.left() if self.deadline is not None else NO_DEADLINE
            if left <= 0:
                raise TimeUp()
            limit = min(self.request_seconds, left)

            def ended(exc: BaseException) -> BaseException | None:
                """What a failed attempt becomes once a deadline passed (None: it failed on its own)."""
                if self.deadline is not None and self.deadline.left() <= 0:  # the ask's: no retry
                    return TimeUp()
                if cut.fired:  # the request's: a timeout, which the client retries
                    return http.ReadTimeout(f"no complete reply within {limit:g} s", request=request)
                return None

            cut = _Cut(limit)
            extensions = dict(request.extensions)
            timeouts = extensions.get("timeout") or {}
            extensions["timeout"] = {k: limit if v is None else min(v, limit) for k, v in timeouts.items()}
            extensions["trace"] = cut.tracer(extensions.get("trace"))
            request.extensions = extensions
            cut.start()
            try:
                response = self.inner.handle_request(request)
            except Exception as exc:
                cut.cancel()
                if (instead := ended(exc)) is not None:
                    raise instead from exc
                raise
            wait = _retry_after(response) if response.status_code in _RETRIED or response.status_code >= 500 else None
            if wait is not None and self.deadline is not None and wait > self.deadline.left():
                response.close()
                cut.cancel()
                raise TimeUp(f"HTTP {response.status_code} asking to retry after {wait:g} s")
            stream = BoundedStream(response.stream, cut, ended)
            return http.Response(
                response.status_code, headers=response.headers, stream=stream, extensions=response.extensions
            )

        def close(self) -> None:
            pass  # the pool is the endpoint's, shared by every call

    class BoundedStream(http.SyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, inner: Any, cut: _Cut, ended: Callable[[BaseException], BaseException | None]):
            self.inner, self.cut, self.ended = inner, cut, ended

        def __iter__(self) -> Iterator[bytes]:
            try:
                yield from self.inner
            except Exception as exc:
                if (instead := self.ended(exc)) is not None:
                    raise instead from exc
                raise

        def close(self) -> None:
            self.cut.cancel()
            self.inner.close()

    return BoundedTransport, BoundedStream


class _Cut:
    """A timer that shuts down every socket the request opened once `seconds` have passed."""

    def __init__(self, seconds: float):
        self.fired = False
        self._sockets: list[Any] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True

    def start(self) -> None:
        self._timer.start()

    def cancel(self) -> None:
        self._timer.cancel()

    def tracer(self, chained: Callable[[str, dict], Any] | None) -> Callable[[str, dict], Any]:
        """httpcore's `trace` extension, which hands over each network stream the request opens."""

        def trace(event: str, info: dict) -> Any:
            if event.endswith(_OPENED):
                sock = info["return_value"].get_extra_info("socket")
                with self._lock:
                    self._sockets.append(sock)
                    late = self.fired
                if late:
                    _shut(sock)
            return chained(event, info) if chained is not None else None

        return trace

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: Any) -> None:
    if sock is None:
        return
    with contextlib.suppress(OSError):  # already closed
        # the plain socket's shutdown, also under TLS: SSLSocket.shutdown would drop its state under a reader
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _retry_after(response: Any) -> float | None:
    """The wait a 429 or 5xx asks for (`retry-after-ms`, else `retry-after` in seconds), as the openai client reads it."""
    for header, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = response.headers.get(header)
        if value is None:
            continue
        try:
            return float(value) / scale
        except ValueError:
            continue
    return None
