"""`kgdb runs prune --all` cannot be undone: on a terminal it asks first, a script must pass --yes."""

from __future__ import annotations

import os
import pty
import subprocess

import numpy as np

from kgdb.cypher.retrieval import fetch_subgraph
from kgdb.cypher.writeback import list_runs, write_scores
from support.cli import KGDB, env_for, kgdb, one_line_error
from support.graphs import LOU_SEAL, load


def _one_run(graph) -> str:
    load(graph, LOU_SEAL)
    sg = fetch_subgraph(graph, ["Lou Seal"], None, hops=2, question="q?", qid="Q1")
    return write_scores(graph, sg, np.linspace(0.1, 0.9, sg.num_triples), "cosine", k=3)


def test_prune_all_without_a_terminal_needs_yes(graph):
    run = _one_run(graph)
    one_line_error(kgdb(graph.settings, "runs", "prune", "--all"), "--all deletes every run (1)", "--yes")
    assert [r.run for r in list_runs(graph)] == [run]
    ok = kgdb(graph.settings, "runs", "prune", "--all", "--yes")
    assert ok.returncode == 0 and "deleted 1 runs" in ok.stdout, ok.stderr
    assert list_runs(graph) == []


def test_prune_all_on_a_terminal_deletes_only_after_yes(graph):
    run = _one_run(graph)
    for answer, left in ((b"n\n", [run]), (b"y\n", [])):
        leader, follower = pty.openpty()
        proc = subprocess.Popen(
            [*KGDB, "runs", "prune", "--all"],
            stdin=follower,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env_for(graph.settings),
        )
        os.close(follower)
        os.write(leader, answer)
        out, err = proc.communicate(timeout=120)
        os.close(leader)
        assert b"Delete all 1 runs" in out, out + err
        assert [r.run for r in list_runs(graph)] == left
