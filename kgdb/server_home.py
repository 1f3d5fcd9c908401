"""Where a local server lives and listens: its home folder (made and checked as kgdb's own), its ports, the
addresses it binds and the links that open Browser on it, and its default memory."""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

import psutil

from kgdb.errors import KgdbError


def default_memory() -> tuple[str, str]:
    """Heap and page cache: a quarter of available memory each, between 512 MiB and 4 GiB."""
    avail_mib = psutil.virtual_memory().available // (1024 * 1024)
    quarter = max(512, min(4096, avail_mib // 4))
    return f"{quarter}m", f"{quarter}m"


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        try:
            return s.connect_ex((host, port)) == 0
        except OSError:  # e.g. an unresolvable listen address
            return False


def is_loopback(address: str) -> bool:
    if address in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def url_host(host: str) -> str:
    """A host as a URI spells it: an IPv6 address in brackets (`bolt://[::1]:7687`)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


HOME_MARKER = ".kgdb-neo4j-home"


def is_kgdb_home(folder: Path) -> bool:
    """A folder kgdb made a Neo4j home (the marker), or one from before the marker (its conf)."""
    return (
        (folder / HOME_MARKER).is_file()
        or (folder / "conf" / "neo4j.conf").is_file()
        or (folder / "lib" / ".kgdb-complete").is_file()
    )


def check_home(home: Path | str) -> None:
    """Refuse a home kgdb must not take over: it chmods the home to 0700 and fills it with a store.

    A symlink would hand that to its target, a non-empty folder that is not a kgdb home (a shared
    1777 folder, a project) would be taken over, and another user's folder cannot be made private.
    """
    if not str(home).strip():
        raise KgdbError(
            "KGDB_NEO4J_HOME / --home is empty: name the folder for the Neo4j server (or unset it for the default)"
        )
    path = Path(home).expanduser()
    if path.is_symlink():
        raise KgdbError(
            f"KGDB_NEO4J_HOME / --home {path} is a symbolic link: name the real folder ({path.resolve()}) or a new one"
        )
    if not path.exists():
        return
    if not path.is_dir():
        raise KgdbError(f"KGDB_NEO4J_HOME / --home {path} is not a folder")
    if path.stat().st_uid != os.getuid():
        raise KgdbError(f"KGDB_NEO4J_HOME / --home {path} belongs to another user: name a folder of your own")
    # Contents first, then the marker: a concurrent `make_home` writes the marker before anything else,
    # so a home seen non-empty already shows its marker (the other order refused a home being made).
    if any(path.iterdir()) and not is_kgdb_home(path):
        raise KgdbError(
            f"KGDB_NEO4J_HOME / --home {path} is a non-empty folder that is not a kgdb Neo4j home: "
            "name a new or empty folder (kgdb makes it private and puts the database in it)"
        )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def browser_link(host: str, http_port: int, bolt_port: int) -> str:
    """A Browser URL whose connect form is filled in with this server's Bolt address.

    Without `connectURL` Browser offers the address it remembers (often another server's 7687).
    """
    from urllib.parse import quote

    host = url_host(host)
    return f"http://{host}:{http_port}/browser/?connectURL={quote(f'bolt://{host}:{bolt_port}', safe='')}"
