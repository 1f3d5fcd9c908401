"""Throw-away local servers besides the session's, for work begun in the background (`support.head_start`):
on free ports, with small memory settings, on jars resolved once, before any test changes the environment
they are found through."""

from __future__ import annotations

import os
import subprocess
from functools import cache
from pathlib import Path

from kgdb.config import Settings
from kgdb.server import LocalServer
from kgdb.server_home import free_port
from support import head_start
from support.cli import KGDB
from support.server import SHORT_LIVED_JVM, shared_lib


@cache
def jars() -> os.PathLike:
    return shared_lib()


def spare_server(home: Path, password: str, **options) -> LocalServer:
    """A server in `home`, not started; stopped at the session's end if it still runs then."""
    server = LocalServer(
        home=home,
        password=password,
        bolt_port=free_port(),
        http_port=free_port(),
        **{"heap": "512m", "pagecache": "128m", "lib_dir": jars(), "jvm_options": SHORT_LIVED_JVM, **options},
    )
    head_start.on_session_end(lambda: server.stop(log=lambda *_: None))
    return server


@cache
def base_settings() -> Settings:
    """The settings the environment gives, read once (a test may be changing the environment meanwhile)."""
    return Settings()


_load_server: list[tuple[LocalServer, Settings]] = []


def load_server(tmp_path_factory) -> tuple[LocalServer, Settings]:
    """The spare server the heavy load tests (bulk imports, big Bolt loads, loads cut or killed midway) use
    in turn, each wiping it first: started on first use, and again where one of them left it stopped; and
    the settings that reach it."""
    if not _load_server:
        server = spare_server(tmp_path_factory.mktemp("load-neo4j"), "kgdb-load-password")
        settings = base_settings().with_overrides(
            neo4j_uri=server.bolt_uri,
            neo4j_password=server.password,
            neo4j_home=server.home,
            neo4j_bolt_port=server.bolt_port,
            neo4j_http_port=server.http_port,
        )
        _load_server.append((server, settings))
    server, settings = _load_server[0]
    if not server.running():
        server.start(log=lambda *_: None)
    return server, settings


@cache
def environment() -> dict[str, str]:
    """The process environment as the session began, for commands run in the background."""
    return dict(os.environ)


def command_env(settings: Settings, **extra: str) -> dict[str, str]:
    """`support.cli.env_for` from the session's first environment: for commands run in the background."""
    return {
        **environment(),
        "COLUMNS": "400",
        "KGDB_NEO4J_URI": settings.neo4j_uri,
        "KGDB_NEO4J_USER": settings.neo4j_user,
        "KGDB_NEO4J_PASSWORD": settings.neo4j_password.get_secret_value(),
        **extra,
    }


def kgdb_in_background(settings: Settings, *args: str) -> subprocess.CompletedProcess:
    """`support.cli.kgdb` for work run in the background."""
    return subprocess.run([*KGDB, *args], capture_output=True, text=True, env=command_env(settings), timeout=300)
