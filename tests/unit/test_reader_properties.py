"""Whatever records and settings the question-file and kgdb.toml readers are fed, there is no
traceback: they read well-typed values, or refuse with one `file:line` error (a question record) or one
`file:` error naming the key (a config file)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, event, given, settings

# -- question files and kgdb.toml: the same property for the readers of `eval`, `train`, `load questions`
# and every command's settings (benchmarks/fuzz_readers.py runs tens of thousands of these cases).
from support.reader_cases import check_config_file, check_question_file, config_files, question_files


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(case=question_files())
def test_question_readers_load_typed_records_or_refuse_with_file_and_line(tmp_path, case):
    suffix, data = case
    folder = tmp_path / "1-hop"
    folder.mkdir(exist_ok=True)
    path = folder / f"qa{suffix}"
    path.write_bytes(data)
    event(check_question_file(path))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=config_files())
def test_config_reader_loads_typed_settings_or_refuses_naming_file_and_key(tmp_path, monkeypatch, data):
    for name in [n for n in os.environ if n.startswith("KGDB_")]:
        monkeypatch.delenv(name)
    path = tmp_path / "kgdb.toml"
    path.write_bytes(data)
    event(check_config_file(path))
