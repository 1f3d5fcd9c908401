"""How `kgdb serve` runs: where it listens, whether it may write, its token and its limits.

One frozen value built once (from the command line and KGDB_SERVE_TOKEN) and handed to
`kgdb.service.app.create_app`; the refusal to listen beyond loopback without a token lives here,
so every way of starting the service applies it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from kgdb.errors import InputError, KgdbError
from kgdb.server_home import is_loopback, url_host

TOKEN_ENV = "KGDB_SERVE_TOKEN"
DEFAULT_PORT = 8765
DEFAULT_DEADLINE_S = 60.0
DEFAULT_MAX_BODY_BYTES = 64 * 1024  # a question and its options are a few hundred bytes
DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024
MIN_TOKEN_CHARS = 16  # a token that guards a service beyond this machine must not be guessable


THREADS_PER_CORE = 4


def default_workers() -> int:
    """Worker threads: a few per core, since an answer spends much of its time waiting on Neo4j's
    round trips (the GIL is released there), so more threads than cores keep the CPUs and the
    database busy at once."""
    return THREADS_PER_CORE * max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class ServiceOptions:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    read_only: bool = False
    token: str | None = field(default=None, repr=False)
    deadline_s: float = DEFAULT_DEADLINE_S
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    workers: int = field(default_factory=default_workers)

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise InputError(f"must be between 0 and 65535, got {self.port}", path="--port")
        if not self.deadline_s > 0:
            raise InputError(f"must be a positive number of seconds, got {self.deadline_s}", path="--deadline")
        for value, name in (
            (self.max_body_bytes, "--max-body-bytes"),
            (self.max_response_bytes, "--max-response-bytes"),
            (self.workers, "--workers"),
        ):
            if value < 1:
                raise InputError(f"must be positive, got {value}", path=name)
        if self.token is not None and not self.token.strip():
            raise InputError("is set but empty: set a token or unset the variable", path=TOKEN_ENV)

    @classmethod
    def from_env(cls, **options: object) -> "ServiceOptions":
        """Options as given, the token from KGDB_SERVE_TOKEN (unset or empty: no token)."""
        token = os.environ.get(TOKEN_ENV) or None
        return cls(token=token, **options)  # type: ignore[arg-type]

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("", "0.0.0.0") else "::1" if self.host == "::" else self.host
        return f"http://{url_host(host)}:{self.port}"

    def check_exposure(self) -> None:
        """Refuse to listen beyond this machine without a bearer token: every request could ask,
        write runs and read the graph."""
        if is_loopback(self.host):
            return
        if self.token is None:
            raise KgdbError(
                f"refusing to listen on {self.host} (beyond this machine) without a token: set {TOKEN_ENV} to a "
                f"secret of at least {MIN_TOKEN_CHARS} characters (clients send `Authorization: Bearer <token>`), "
                "or keep --host 127.0.0.1"
            )
        if len(self.token) < MIN_TOKEN_CHARS:
            raise KgdbError(
                f"refusing to listen on {self.host} (beyond this machine) with a {len(self.token)}-character "
                f"{TOKEN_ENV}: use a secret of at least {MIN_TOKEN_CHARS} characters, or keep --host 127.0.0.1"
            )
