"""A source or question file with an over-long line is refused while the line is read, with the file, the
line and the limit named, and with memory bounded by the limit, not by the line (a 2 GB file of one line
was read whole before it was refused). Under --skip-bad the line is skipped and reading goes on."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path
from typing import Callable

import pytest

from kgdb.data.questions import read_questions
from kgdb.errors import InputError
from kgdb.limits import MAX_LINE_BYTES, MAX_RECORD_BYTES
from kgdb.loaders.badlines import BadLines
from kgdb.loaders.ntriples import read_mids, read_ntriples
from kgdb.loaders.questions import read_question_file
from kgdb.loaders.rog import read_rog
from kgdb.loaders.triple_files import read_triple_file

LONG = 50_000_000  # bytes of the long line of a triple or text file
LONG_RECORD = 4 * MAX_RECORD_BYTES  # bytes of the long line of a JSONL file
MiB = 1 << 20

_QUESTION = {"id": "q1", "question": "who?", "q_entity": ["a"], "a_entity": ["b"], "answer": ["b"]}
_ROG = {**_QUESTION, "graph": [["a", "r.s", "b"]]}


def _write(path: Path, good: bytes, long_size: int) -> Path:
    """Two good lines, a line of `long_size` bytes at line 3, one more good line."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wb") as fh:  # type: ignore[operator]
        fh.write(good + good)
        chunk = b"x" * MiB
        for _ in range(long_size // MiB):
            fh.write(chunk)
        fh.write(b"x" * (long_size % MiB) + b"\n" + good)
    return path


def _jsonl(row: dict) -> bytes:
    return json.dumps(row).encode() + b"\n"


# (reader, file name, a good line, size of the long line, limit that applies)
CASES: dict[str, tuple[Callable[[Path], object], str, bytes, int, int]] = {
    "tsv": (read_triple_file, "kg.tsv", b"a\tr.s\tb\n", LONG, MAX_LINE_BYTES),
    "csv": (read_triple_file, "kg.csv", b"a,r.s,b\n", LONG, MAX_LINE_BYTES),
    "names": (
        lambda p: read_triple_file(p.with_name("kg.tsv"), p),
        "names.tsv",
        b"a\tThe A\n",
        LONG,
        MAX_LINE_BYTES,
    ),
    "ntriples": (read_ntriples, "kg.nt", b"<a> <r.s> <b> .\n", LONG, MAX_LINE_BYTES),
    "ntriples-gz": (read_ntriples, "kg.nt.gz", b"<a> <r.s> <b> .\n", LONG, MAX_LINE_BYTES),
    "mids": (read_mids, "mids.txt", b"m.0abc\n", LONG, MAX_LINE_BYTES),
    "metaqa": (read_questions, "qa.txt", b"who is [a]\tb\n", LONG, MAX_LINE_BYTES),
    "rog-jsonl": (lambda p: read_rog([p]), "rog.jsonl", _jsonl(_ROG), LONG_RECORD, MAX_RECORD_BYTES),
    "load-questions": (read_question_file, "qs.jsonl", _jsonl(_QUESTION), LONG_RECORD, MAX_RECORD_BYTES),
    "eval-questions": (read_questions, "questions.jsonl", _jsonl(_QUESTION), LONG_RECORD, MAX_RECORD_BYTES),
}


@pytest.mark.parametrize("case", CASES)
def test_an_over_long_line_is_refused_with_bounded_memory(tmp_path, case):
    reader, name, good, size, limit = CASES[case]
    (tmp_path / "kg.tsv").write_bytes(b"a\tr.s\tb\n")  # the triples beside the names file
    path = _write(tmp_path / name, good, size)
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as err:
            reader(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(err.value)
    assert message.startswith(f"{path}:3: "), message
    assert f"{limit:,} bytes" in message, message
    # Reading the whole line holds it at least once as bytes (and again as text); a bounded read holds
    # about one chunk of the limit's size.
    assert peak < 2.5 * limit + 2 * MiB, f"{case}: peak {peak / MiB:.1f} MiB for a {size / MiB:.0f} MiB line"


def test_skip_bad_skips_the_long_line_and_reads_on(tmp_path):
    path = _write(tmp_path / "kg.tsv", b"a\tr.s\tb\n", 3 * MAX_LINE_BYTES + 17)
    with path.open("ab") as fh:
        fh.write(b"c\tr.s\td\n")
    bad = BadLines(skip=True)
    src = read_triple_file(path, bad=bad)
    assert bad.count == 1 and bad.examples[0].startswith(f"{path}:3: ")
    assert src.triples == [("a", "r.s", "b")] * 3 + [("c", "r.s", "d")]
    assert src.lines == 5


def test_a_line_at_the_limit_is_read(tmp_path):
    head = b"a\tr.s\t"
    path = tmp_path / "kg.tsv"
    path.write_bytes(head + b"b" * (MAX_LINE_BYTES - len(head) - 1) + b"\n")
    with pytest.raises(InputError, match="4,000 bytes"):  # read whole, then refused for Neo4j's key limit
        read_triple_file(path)
    path.write_bytes(head + b"b" * (MAX_LINE_BYTES - len(head)) + b"\n")
    with pytest.raises(InputError, match=f"{MAX_LINE_BYTES:,} bytes"):
        read_triple_file(path)


def test_a_process_short_of_memory_still_refuses_the_line(tmp_path):
    """The whole process, not only Python's own allocations: with its address space capped at 48 MiB over
    what it holds before reading, a 50 MB line is refused with the file and line, not a MemoryError."""
    path = _write(tmp_path / "kg.tsv", b"a\tr.s\tb\n", LONG)
    script = textwrap.dedent(
        f"""
        import resource
        import kgdb.loaders.writer  # what reading imports (numpy), before the cap
        from kgdb.errors import InputError
        from kgdb.loaders.triple_files import read_triple_file

        with open("/proc/self/status") as fh:
            size = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (size + 48 * 2**20, resource.RLIM_INFINITY))
        try:
            read_triple_file(__import__("pathlib").Path({str(path)!r}))
        except InputError as exc:
            print("refused:", exc)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith(f"refused: {path}:3: line is longer than"), proc.stdout
