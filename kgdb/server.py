"""A real Neo4j 5.26 community server assembled from Maven Central, run without Docker.

`install` resolves the server, Bolt, admin tool and Neo4j Browser jars with Maven into
`<home>/lib`, writes `<home>/conf/neo4j.conf` and sets the initial password. `start` runs one
JVM (`org.neo4j.server.CommunityEntryPoint`) in its own process session, so it outlives the
command, and waits until Bolt answers and every database is online: a database can fail to start
(a full disk, most often) while Bolt and Browser answer, and then `start` says why from the server's
log and the free space of the data folder. This module never imports torch.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import signal
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import psutil

from kgdb.config import Settings
from kgdb.errors import KgdbError
from kgdb.limits import DENSE_THRESHOLD
from kgdb.server_disk import databases_down, databases_down_message, disk_problem, log_offsets
from kgdb.server_home import (
    HOME_MARKER,
    browser_link,
    check_home,
    default_memory,
    is_loopback,
    port_in_use,
    url_host,
)
from kgdb.server_jars import JVM_FLAGS, NEO4J_VERSION, install_jars, jar_cache, jars_installed, require_tool

ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
DEFAULT_PASSWORD = "kgdb-password"  # the documented one: fine on loopback, refused beyond it
# Variables the server JVM must not inherit: it never needs them, and /proc/<pid>/environ of a
# long-running JVM is where a password would otherwise sit for its whole life.
_SECRET_ENV = ("KGDB_NEO4J_PASSWORD", "KGDB_LLM_API_KEY", "KGDB_TEST_NEO4J_PASSWORD", "NEO4J_AUTH", "NEO4J_PASSWORD")
ADMIN_TOOL = "org.neo4j.cli.AdminTool"
# The fields of `LocalServer` that the settings hold as `neo4j_<field>`.
SETTINGS_OF_SERVER = ("bolt_port", "http_port", "listen_address", "heap", "pagecache", "dense_threshold")


@dataclass
class LocalServer:
    """One Neo4j home folder: jars, configuration, data and logs."""

    home: Path
    password: str
    bolt_port: int = 7687
    http_port: int = 7474
    listen_address: str = "127.0.0.1"
    heap: str | None = None
    pagecache: str | None = None
    dense_threshold: int = DENSE_THRESHOLD
    # Jars may be shared between homes (tests start throw-away servers on the same jars).
    lib_dir: Path | None = None
    extra_conf: dict[str, str] = field(default_factory=dict)
    # Added to the server's and neo4j-admin's JVM flags: ("-XX:TieredStopAtLevel=1",) halves the CPU a start
    # takes, for servers that live minutes (throw-away test servers) rather than days.
    jvm_options: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not str(self.home).strip():  # Path("") is the current directory
            check_home("")
        # The JVM runs with the home as working directory: a relative --home-dir would point elsewhere.
        self.home = Path(self.home).expanduser().absolute()

    @property
    def lib(self) -> Path:
        return self.lib_dir or self.home / "lib"

    @property
    def conf_dir(self) -> Path:
        return self.home / "conf"

    @property
    def pid_file(self) -> Path:
        return self.home / "run" / "kgdb-neo4j.pid"

    @property
    def console_log(self) -> Path:
        return self.home / "logs" / "console.log"

    @property
    def data_dir(self) -> Path:
        return self.home / self.extra_conf.get("server.directories.data", "data")

    @property
    def logs_dir(self) -> Path:
        return self.home / self.extra_conf.get("server.directories.logs", "logs")

    @property
    def bolt_uri(self) -> str:
        return f"bolt://{url_host(self._client_host())}:{self.bolt_port}"

    @property
    def browser_url(self) -> str:
        return f"http://{url_host(self._client_host())}:{self.http_port}/browser/"

    @property
    def browser_link(self) -> str:
        """Browser with its connect form pointing at this server's Bolt port (not another's 7687)."""
        return browser_link(self._client_host(), self.http_port, self.bolt_port)

    def _client_host(self) -> str:
        return "localhost" if self.listen_address in ("127.0.0.1", "0.0.0.0", "::", "") else self.listen_address

    def _probe_host(self) -> str:
        """The address the readiness check connects to: where the server listens, not always 127.0.0.1."""
        if self.listen_address in ("0.0.0.0", ""):
            return "127.0.0.1"
        if self.listen_address == "::":
            return "::1"
        return self.listen_address

    # -- install -------------------------------------------------------------------------
    def jars_installed(self) -> bool:
        return jars_installed(self.lib)

    def install_jars(self, log=print) -> None:
        """Resolve the jars with Maven (reusing ~/.m2), unless this version is already there."""
        install_jars(self.lib, log)

    def make_home(self) -> None:
        """The home with owner-only permissions: it holds the auth file, the store and the logs."""
        check_home(self.home)
        self.home.mkdir(parents=True, exist_ok=True)
        os.chmod(self.home, 0o700)
        (self.home / HOME_MARKER).touch()

    def write_conf(self) -> Path:
        if self.dense_threshold < 1:
            raise KgdbError(f"KGDB_NEO4J_DENSE_THRESHOLD must be at least 1, got {self.dense_threshold}")
        heap, pagecache = default_memory()
        host = self._client_host()
        addr = url_host(host)
        conf = {
            "server.default_listen_address": self.listen_address,
            # Advertised addresses feed the discovery endpoint Browser reads: without them it
            # offers bolt://localhost:7687, possibly another server on the machine.
            "server.default_advertised_address": host,
            "server.bolt.enabled": "true",
            "server.bolt.listen_address": f":{self.bolt_port}",
            "server.bolt.advertised_address": f"{addr}:{self.bolt_port}",
            "server.http.enabled": "true",
            "server.http.listen_address": f":{self.http_port}",
            "server.http.advertised_address": f"{addr}:{self.http_port}",
            "server.https.enabled": "false",
            "dbms.security.auth_enabled": "true",
            "server.directories.data": "data",
            "server.directories.logs": "logs",
            "server.directories.plugins": "plugins",
            "server.directories.import": "import",
            "server.directories.run": "run",
            "server.directories.lib": str(self.lib),
            "server.memory.heap.initial_size": "512m",
            "server.memory.heap.max_size": self.heap or heap,
            "server.memory.pagecache.size": self.pagecache or pagecache,
            # Read by neo4j-admin import too (it runs with this conf folder): see DENSE_THRESHOLD.
            "db.relationship_grouping_threshold": str(self.dense_threshold),
            "db.transaction.timeout": "0",
            "dbms.usage_report.enabled": "false",
        }
        conf.update(self.extra_conf)
        self.make_home()
        for sub in ("conf", "data", "logs", "plugins", "import", "run"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        path = self.conf_dir / "neo4j.conf"
        path.write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
        return path

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _SECRET_ENV}
        return {**env, "NEO4J_HOME": str(self.home), "NEO4J_CONF": str(self.conf_dir)}

    def admin(
        self, *args: str, check: bool = True, on_output: Callable[[str], None] | None = None
    ) -> subprocess.CompletedProcess:
        """Run neo4j-admin in-process (AdminTool), e.g. `database import full ...`.

        `on_output` gets its output as it comes (an import prints its progress for minutes)."""
        java = require_tool("java", "install Java 17 or 21")
        cmd = [java, "-Xmx1g", *self.jvm_options, "-cp", f"{self.lib}/*", ADMIN_TOOL, *args]
        if on_output is None:
            proc = subprocess.run(cmd, cwd=self.home, env=self._env(), capture_output=True, text=True)
        else:
            with subprocess.Popen(
                cmd,
                cwd=self.home,
                env=self._env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                bufsize=1,
            ) as popen:
                assert popen.stdout is not None
                out = []
                while chunk := popen.stdout.read(256):
                    out.append(chunk)
                    on_output(chunk)
            proc = subprocess.CompletedProcess(cmd, popen.returncode, "".join(out), "")
        if check and proc.returncode != 0:
            raise KgdbError(f"neo4j-admin {' '.join(args[:3])} failed:\n{(proc.stdout + proc.stderr).strip()[-2000:]}")
        return proc

    def password_set(self) -> bool:
        return (self.home / "data" / "dbms" / "auth.ini").exists() or (
            self.home / "data" / "databases" / "system"
        ).exists()

    def set_initial_password(self) -> None:
        """neo4j-admin's set-initial-password, with the password in a 0600 argument file.

        On the command line it would be visible to every user through `ps` while the admin JVM
        runs; picocli (neo4j-admin's parser) expands `@file` arguments itself.
        """
        run = self.home / "run"
        run.mkdir(parents=True, exist_ok=True)
        secret = run / f"kgdb-initial-password.{os.getpid()}"
        fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            quoted = '"' + self.password.replace("\\", "\\\\").replace('"', '\\"') + '"'
            os.write(fd, quoted.encode("utf-8") + b"\n")
            os.close(fd)
            self.admin("dbms", "set-initial-password", f"@{secret}")
        finally:
            secret.unlink(missing_ok=True)

    def install(self, log=print) -> None:
        """Jars, conf and the initial password; a running server's conf is left untouched."""
        self.install_jars(log)
        with self._home_lock():  # a concurrent start must not set the initial password a second time
            if self.running():
                log(
                    f"Neo4j is running from {self.home}: left its neo4j.conf as it is "
                    "(`kgdb neo4j stop` first to apply new settings)"
                )
                return
            conf = self.write_conf()
            log(f"Wrote {conf}")
            if not self.password_set():
                self.set_initial_password()
                log("Set the initial password for user 'neo4j'")

    @contextmanager
    def _home_lock(self) -> Iterator[None]:
        """One installer or starter per home at a time (the second waits, then finds the work done)."""
        self.make_home()
        (self.home / "run").mkdir(parents=True, exist_ok=True)
        with open(self.home / "run" / "kgdb-start.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    # -- run -----------------------------------------------------------------------------
    def pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            proc = psutil.Process(pid)
            cmdline = proc.cmdline()
            homes = [arg.split("=", 1)[1] for arg in cmdline if arg.startswith("--home-dir=")]
            # The pid file alone proves nothing (a copied home, a reused pid): the process must be
            # a Neo4j server started on this very home.
            if (
                proc.is_running()
                and proc.status() != psutil.STATUS_ZOMBIE
                and ENTRY_POINT in cmdline
                and any(Path(h).resolve() == self.home.resolve() for h in homes)
            ):
                return pid
        except psutil.Error:
            pass
        return None

    def running(self) -> bool:
        return self.pid() is not None

    def start(self, log=print, timeout: float = 180.0) -> bool:
        """Start in the background; returns False when it was already running.

        Concurrent starts on one home are serialised by a lock file: the second waits, then finds
        the server running and says so instead of launching a second JVM on the same store.
        """
        self.check_exposure(log)
        with self._home_lock():
            return self._start_locked(log, timeout)

    def check_exposure(self, log=print) -> None:
        if is_loopback(self.listen_address):
            return
        if self.password == DEFAULT_PASSWORD:
            raise KgdbError(
                f"refusing to listen on {self.listen_address} (beyond this machine) with the documented default "
                "password: set KGDB_NEO4J_PASSWORD to your own before the first start, or keep "
                "KGDB_NEO4J_LISTEN_ADDRESS=127.0.0.1"
            )
        log(
            f"warning: Neo4j listens on {self.listen_address}; Bolt and Browser (HTTP) are not encrypted, so "
            "the password and data cross the network in plain text: use a firewall or an SSH tunnel"
        )

    def _start_locked(self, log, timeout: float) -> bool:
        if self.running():
            log(f"Neo4j is already running (pid {self.pid()}), Bolt {self.bolt_uri}")
            self.warn_if_password_differs(log)
            down = self.databases_down(wait_s=min(timeout, 30.0))
            if down:
                logs = [(path, 0) for path, _ in log_offsets(self.logs_dir)]  # not this start's: the end of each log
                raise KgdbError(
                    self._unavailable(f"Neo4j is running, but {databases_down_message(down)}", logs, running=True)
                )
            return False
        if not self.jars_installed():
            raise KgdbError(f"Neo4j is not installed in {self.home}: run `kgdb neo4j install` first")
        for port, what in ((self.bolt_port, "Bolt"), (self.http_port, "HTTP")):
            if port_in_use(port, self._probe_host()) or port_in_use(port):
                raise KgdbError(
                    f"port {port} ({what}) is already in use by another program: stop it, or choose "
                    f"another port with KGDB_NEO4J_{what.upper()}_PORT / --{what.lower()}-port"
                )
        fresh_password = not self.password_set()
        if not fresh_password and not is_loopback(self.listen_address):
            self._refuse_default_password(log, timeout)
        self.write_conf()
        if fresh_password:
            self.set_initial_password()
        java = require_tool("java", "install Java 17 or 21")
        heap = self.heap or default_memory()[0]
        cmd = [
            java,
            "-cp",
            f"{self.home}/plugins/*:{self.conf_dir}/*:{self.lib}/*",
            "-Xms512m",
            f"-Xmx{heap}",
            *JVM_FLAGS,
            *self.jvm_options,
            ENTRY_POINT,
            f"--home-dir={self.home}",
            f"--config-dir={self.conf_dir}",
            "--console-mode",
        ]
        self.console_log.parent.mkdir(parents=True, exist_ok=True)
        offsets = log_offsets(self.logs_dir)
        with open(self.console_log, "ab") as out:
            proc = subprocess.Popen(
                cmd,
                cwd=self.home,
                env=self._env(),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        self.pid_file.write_text(f"{proc.pid}\n")
        log(f"Starting Neo4j {NEO4J_VERSION} (pid {proc.pid}) ...")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise KgdbError(self._unavailable(f"Neo4j exited during start-up (code {proc.returncode})", offsets))
            if self.http_ready():
                down = self.databases_down(wait_s=max(10.0, deadline - time.monotonic()))
                if down:
                    self.stop(log=lambda _msg: None)  # up without its database is not started: no half server
                    raise KgdbError(
                        self._unavailable(
                            f"Neo4j started, but {databases_down_message(down)}; stopped it again", offsets
                        )
                    )
                log(f"Neo4j is up: Bolt {self.bolt_uri}, Browser {self.browser_link}")
                if not fresh_password:
                    self.warn_if_password_differs(log)
                return True
            time.sleep(0.5)
        raise KgdbError(f"Neo4j did not answer within {timeout:.0f} s at {self._probe_host()}; see {self.console_log}")

    def _refuse_default_password(self, log, timeout: float) -> None:
        """Before this home listens beyond the machine: start it on loopback only and refuse when the
        documented default password still opens it. The password a home has is the one set at its
        first start (or changed in Neo4j since), not whatever KGDB_NEO4J_PASSWORD says today."""
        probe = dataclasses.replace(self, listen_address="127.0.0.1")
        log(
            f"checking the password this server really has before it listens on {self.listen_address} "
            "(a start on 127.0.0.1 first) ..."
        )
        probe._start_locked(log=lambda _msg: None, timeout=timeout)
        try:
            default_opens = probe.password_works(DEFAULT_PASSWORD)
        finally:
            probe.stop(log=lambda _msg: None)
        fix = (
            "Start it on 127.0.0.1, change the password (ALTER CURRENT USER SET PASSWORD FROM 'old' TO 'new'), "
            "then start it here again"
        )
        refusing = f"refusing to listen on {self.listen_address} (beyond this machine)"
        if default_opens:
            raise KgdbError(
                f"{refusing}: the server in {self.home} still has the documented default password for "
                f"user 'neo4j', whatever KGDB_NEO4J_PASSWORD says. {fix}"
            )
        if default_opens is None:
            raise KgdbError(
                f"{refusing}: could not check that the server in {self.home} no longer has the "
                f"documented default password. {fix}"
            )

    def password_works(self, password: str | None = None) -> bool | None:
        """Whether the configured password (or `password`) opens this server (None: could not tell)."""
        from neo4j import GraphDatabase
        from neo4j.exceptions import AuthError

        try:
            uri = f"bolt://{url_host(self._probe_host())}:{self.bolt_port}"
            with GraphDatabase.driver(uri, auth=("neo4j", password if password is not None else self.password)) as d:
                d.verify_connectivity()
            return True
        except AuthError:
            return False
        except Exception:  # not up yet, network: no verdict
            return None

    def warn_if_password_differs(self, log=print) -> None:
        if self.password_works() is False:
            log(
                "warning: KGDB_NEO4J_PASSWORD does not open this server. The password is set only at the first "
                "install/start of a home; a later one is not applied. Change it in Neo4j (Browser or cypher-shell: "
                "ALTER CURRENT USER SET PASSWORD FROM 'old' TO 'new'), or set KGDB_NEO4J_PASSWORD to the old one"
            )

    def databases_down(self, wait_s: float = 30.0) -> list[dict] | None:
        """The databases asked to be online that are not (`kgdb.server_disk.databases_down`)."""
        return databases_down(f"bolt://{url_host(self._probe_host())}:{self.bolt_port}", self.password, wait_s)

    def _unavailable(self, what: str, logs: list[tuple[Path, int]], running: bool = False) -> str:
        """The error for a start that left a database unavailable: the full disk when that is why."""
        debug_log = self.logs_dir / "debug.log"
        again = "`kgdb neo4j stop`, then `kgdb neo4j start`" if running else "`kgdb neo4j start` again"
        problem = disk_problem(self.data_dir, logs)
        if problem:
            return f"{what}: {problem}. Free space there, then {again} (details in {debug_log})"
        return f"{what}; see {debug_log} and {self.console_log}"

    def http_ready(self) -> bool:
        try:
            host = self._probe_host()
            url_host = f"[{host}]" if ":" in host else host
            with urllib.request.urlopen(f"http://{url_host}:{self.http_port}/", timeout=1) as resp:
                return resp.status == 200 and port_in_use(self.bolt_port, host)
        except OSError:
            return False

    def stop(self, log=print, timeout: float = 60.0) -> bool:
        pid = self.pid()
        if pid is None:
            log("Neo4j is not running")
            return False
        os.kill(pid, signal.SIGTERM)
        try:
            psutil.Process(pid).wait(timeout=timeout)
        except psutil.TimeoutExpired:
            os.kill(pid, signal.SIGKILL)
            psutil.Process(pid).wait(timeout=10)
        except psutil.NoSuchProcess:
            pass
        self.pid_file.unlink(missing_ok=True)
        log(f"Stopped Neo4j (pid {pid})")
        return True

    def log_tail(self, lines: int = 50) -> str:
        for path in (self.home / "logs" / "neo4j.log", self.console_log):
            if path.is_file():
                return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        return ""


def server_from_settings(settings: Settings) -> LocalServer:
    if str(settings.neo4j_home) in ("", ".") and not os.environ.get("KGDB_NEO4J_HOME", ".").strip():
        check_home("")  # an empty value would otherwise mean the current directory
    home = Path(settings.neo4j_home).expanduser()
    # Homes installed before the shared jar cache keep using their own complete lib.
    own_lib = LocalServer(home=home, password="").jars_installed()
    return LocalServer(
        lib_dir=None if own_lib else jar_cache(settings.cache_dir),
        home=home,
        password=settings.neo4j_password.get_secret_value(),
        **{name: getattr(settings, f"neo4j_{name}") for name in SETTINGS_OF_SERVER},
    )
