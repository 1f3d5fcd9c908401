"""One `kgdb eval retrieval --split val` run in a subprocess, for the benchmarks that choose a
checkpoint's inference settings on its validation split (`rapl_budget.py`, `inference_cap.py`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def eval_val(questions: Path, retriever: str, checkpoint: str, extra: list[str], out: Path) -> dict:
    """The overall recall block (`answer_recall@100` etc., each with `mean` and `n`) of the results file."""
    cmd = [
        sys.executable,
        "-c",
        "from kgdb.cli import main; main()",
        "eval",
        "retrieval",
        "--questions",
        str(questions),
        "--split",
        "val",
        "--retriever",
        retriever,
        "--checkpoint",
        checkpoint,
        "--no-write",
        "--out",
        str(out),
        *extra,
    ]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    (result,) = out.glob(f"eval-*-{retriever}-cap*.json")
    recall = json.loads(result.read_text())["recall"]
    return recall.get("all") or next(iter(recall.values()))
