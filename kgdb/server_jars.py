"""The Neo4j community and Browser jars a local server runs from, resolved once from Maven Central into a
cache every home shares (the default server, test servers, CI)."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from platformdirs import user_cache_dir

from kgdb.errors import KgdbError

NEO4J_VERSION = "5.26.30"
BROWSER_VERSION = "5.24.0"
_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kgdb.local</groupId><artifactId>neo4j-runtime</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.neo4j</groupId><artifactId>neo4j</artifactId><version>{neo4j}</version></dependency>
    <dependency><groupId>org.neo4j.app</groupId><artifactId>neo4j-server</artifactId><version>{neo4j}</version></dependency>
    <dependency><groupId>org.neo4j</groupId><artifactId>neo4j-command-line</artifactId><version>{neo4j}</version></dependency>
    <dependency><groupId>org.neo4j</groupId><artifactId>neo4j-import-tool</artifactId><version>{neo4j}</version></dependency>
    <dependency><groupId>org.neo4j.client</groupId><artifactId>neo4j-browser</artifactId><version>{browser}</version></dependency>
  </dependencies>
</project>
"""


def jar_cache(cache_dir: Path | None = None) -> Path:
    """Where the jars of this Neo4j version are resolved once and shared by every home (the
    default server, test servers, CI): installing never has to touch a server's own folder."""
    base = Path(cache_dir) if cache_dir is not None else Path(user_cache_dir("kgdb"))
    return base / "neo4j-lib" / f"{NEO4J_VERSION}-{BROWSER_VERSION}"


def require_tool(name: str, fix: str) -> str:
    path = shutil.which(name)
    if not path:
        raise KgdbError(f"`{name}` not found on PATH: {fix}")
    return path


def jars_installed(lib: Path) -> bool:
    marker = lib / ".kgdb-complete"
    return marker.is_file() and marker.read_text().strip() == f"{NEO4J_VERSION} {BROWSER_VERSION}"


def install_jars(lib: Path, log: Callable[[str], object] = print) -> None:
    """Resolve the jars with Maven (reusing ~/.m2), unless this version is already there.

    Serialised by a lock file beside the jar folder: starters on a fresh machine share one jar
    cache, and a second resolution would swap the folder out under the first one's JVM.
    """
    if jars_installed(lib):
        log(f"Neo4j {NEO4J_VERSION} jars already in {lib}")
        return
    lib.parent.mkdir(parents=True, exist_ok=True)
    with open(lib.with_name(lib.name + ".lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"another kgdb is installing the Neo4j jars into {lib}: waiting for it to finish ...")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if jars_installed(lib):
            log(f"Neo4j {NEO4J_VERSION} jars installed in {lib}")
            return
        _resolve_jars(lib, log)


def _resolve_jars(lib: Path, log: Callable[[str], object]) -> None:
    mvn = require_tool("mvn", "install Maven (Debian: `apt-get install maven`)")
    require_tool("java", "install Java 17 or 21 (Debian: `apt-get install openjdk-17-jre-headless`)")
    build = lib.with_name(lib.name + ".maven")  # beside the lib: never inside a server's home
    build.mkdir(parents=True, exist_ok=True)
    (build / "pom.xml").write_text(_POM.format(neo4j=NEO4J_VERSION, browser=BROWSER_VERSION))
    staging = lib.with_name(lib.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    log(f"Resolving Neo4j {NEO4J_VERSION} + Browser {BROWSER_VERSION} from Maven Central ...")
    proc = subprocess.run(
        [mvn, "-B", "-q", "dependency:copy-dependencies", f"-DoutputDirectory={staging}", "-DincludeScope=runtime"],
        cwd=build,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
        raise KgdbError("Maven could not resolve the Neo4j jars:\n" + "\n".join(tail))
    # Swap in atomically so an interrupted install never leaves a half-filled lib.
    shutil.rmtree(lib, ignore_errors=True)
    staging.rename(lib)
    (lib / ".kgdb-complete").write_text(f"{NEO4J_VERSION} {BROWSER_VERSION}\n")
    log(f"Installed {sum(1 for _ in lib.glob('*.jar'))} jars into {lib}")


# The flags the official launcher passes to the server JVM; --add-opens are required on 17+.
JVM_FLAGS = [
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dlog4j2.disable.jmx=true",
    "-Dfile.encoding=UTF-8",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
]
