"""`kgdb label` against a real Neo4j and the real OpenAI-protocol test server, and training on its labels."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from kgdb.cli import app
from kgdb.data.cache import load_cache
from support.jamaica import TRIPLES
from support.labelling import TRAIN, connection_args, label_env, relation_names
from support.openai_server import OpenAIServer, select_label_paths
from support.plugins import ToyRetriever  # noqa: F401  (registers toy-test)

pytestmark = pytest.mark.usefixtures("one_thread")


def _label(graph, path, env, *extra: str):
    return CliRunner().invoke(
        app, connection_args(graph) + ["label", "--questions", str(path), "--method", "rapl", *extra], env=env
    )


def _labellings(graph) -> dict[str, dict]:
    rows = graph.run_text(
        "MATCH (l:Labelling) OPTIONAL MATCH (q:Question)-[:LABELLED]->(l) OPTIONAL MATCH (l)-[:SELECTED]->(p:LabelPath) "
        "WITH l, q, p ORDER BY p.rank RETURN l {.*, created: toString(l.created)} AS l, q.id AS question, "
        "collect(p {.*}) AS paths"
    )
    return {r["l"]["qid"]: {**r["l"], "question": r["question"], "paths": r["paths"]} for r in rows}


def test_label_stores_paths_with_provenance_and_resumes(toy, tmp_path):
    graph, path = toy
    with OpenAIServer(responder=select_label_paths) as server:
        env = label_env(tmp_path, server)
        first = _label(graph, path, env, "--concurrency", "3")
        assert first.exit_code == 0, first.output
        assert f"labelled {TRAIN} of {TRAIN} questions of toy/train with rapl" in first.output
        assert server.calls == TRAIN
        tokens = sum(len(m["content"].split()) for r in server.requests for m in r["messages"])
        assert re.search(rf"LLM calls {TRAIN}, tokens: {tokens} prompt \+ \d+ completion", first.output), first.output

        stored = _labellings(graph)
        assert len(stored) == TRAIN
        for qid, lab in stored.items():
            assert lab["status"] == "ok" and lab["question"] == qid
            assert (lab["method"], lab["model"], lab["prompt_version"]) == ("rapl", "kgdb-test-model", "label_rapl_v1")
            assert lab["created"] and lab["calls"] == 1 and lab["prompt_tokens"] > 0 and lab["paths"]
            for p in lab["paths"]:
                assert len(p["heads"]) == len(p["relations"]) == len(p["tails"]) >= 1
        # "where is kingston?" (Q-8, train): the server picks the two 1-hop paths, one against its edge
        assert [p["text"] for p in stored["Q-8"]["paths"]] == [
            "Kingston → location.location.containedby → Jamaica",
            "Kingston ← location.country.capital ← Jamaica",
        ]
        assert stored["Q-8"]["candidates"] == 3  # the two 1-hop paths and the 2-hop one via the postal code
        # Labels are not triples: the graph's triple count is unchanged.
        assert graph.single("counts")["triples"] == len(TRIPLES)
        # The Browser query shows a question's labels on the graph's own triples.
        qid = next(iter(stored))
        rows = graph.run("browser/question_labels", qid=qid, method="rapl")
        assert len(rows) == sum(len(p["relations"]) for p in stored[qid]["paths"])
        assert all(r["r"] is not None and r["q"]["id"] == qid for r in rows)

        second = _label(graph, path, env)
        assert second.exit_code == 0, second.output
        assert f"nothing to do: all {TRAIN} questions of toy/train are already labelled by rapl" in second.output
        assert server.calls == TRAIN  # no request at all

        # Another prompt version or model is another labelling: asked again.
        other = _label(graph, path, {**env, "KGDB_LLM_MODEL": "other-model"}, "--limit", "2")
        assert other.exit_code == 0 and "labelled 2 of 2" in other.output
        assert server.calls == TRAIN + 2


def test_garbage_reply_is_retried_once_then_recorded_as_failure(toy, tmp_path):
    graph, path = toy
    garbage = [{"content": "The answer is obviously Kingston."}, {"content": "Kingston, as I said."}]
    with OpenAIServer(script=garbage, responder=select_label_paths) as server:
        env = label_env(tmp_path, server)
        run = _label(graph, path, env, "--concurrency", "1")
        assert run.exit_code == 0, run.output
        assert server.calls == TRAIN + 1  # the follow-up turn for the first question only
        follow_up = server.requests[1]["messages"]
        assert follow_up[-2] == {"role": "assistant", "content": "The answer is obviously Kingston."}
        assert "ans: Path N" in follow_up[-1]["content"]
        stored = _labellings(graph)
        failed = [lab for lab in stored.values() if lab["status"] == "failed"]
        assert len(failed) == 1 and not failed[0]["paths"]
        assert "after one retry" in failed[0]["error"] and "Kingston, as I said." in failed[0]["reply"]
        assert failed[0]["calls"] == 2
        assert "failed: 1" in run.output and "failed" in run.output

        # A failure is not final: the next run asks that question (and only that one) again.
        rerun = _label(graph, path, env)
        assert rerun.exit_code == 0, rerun.output
        assert f"labelled 1 of {TRAIN}" in rerun.output and server.calls == TRAIN + 2
        assert _labellings(graph)[failed[0]["qid"]]["status"] == "ok"


def test_partial_reply_keeps_its_valid_lines(toy, tmp_path):
    graph, path = toy
    with OpenAIServer(
        script=[{"content": "ans: Path 1\nans: Path 99\nans: Pa"}], responder=select_label_paths
    ) as server:
        run = _label(graph, path, label_env(tmp_path, server), "--concurrency", "1", "--limit", "1")
        assert run.exit_code == 0, run.output
    (lab,) = _labellings(graph).values()
    assert lab["status"] == "ok" and {p["rank"] for p in lab["paths"]} == {1} and lab["calls"] == 1


def test_without_an_llm_label_says_so_and_fails(toy, tmp_path):
    graph, path = toy
    run = _label(graph, path, label_env(tmp_path, None))
    assert run.exit_code != 0
    assert "no LLM configured" in str(run.exception) and "KGDB_LLM_MODEL" in str(run.exception)
    assert "--labels shortest" in str(run.exception)
    assert not _labellings(graph)


def test_a_wrong_endpoint_setting_stops_the_run_with_the_clients_error(toy, tmp_path):
    graph, path = toy
    with OpenAIServer(script=[{"status": 401}] * 20) as server:
        run = _label(graph, path, label_env(tmp_path, server), "--concurrency", "1")
    assert run.exit_code != 0
    assert "refused the API key (401)" in str(run.exception)
    assert not [lab for lab in _labellings(graph).values() if lab["status"] == "failed"]


def _longest(messages) -> str:
    """Selects the last (longest) candidate path: labels that differ from the shortest-path ones."""
    lines = [ln for ln in messages[-1]["content"].splitlines() if re.match(r"^Path \d+\. ", ln)]
    return f"The longest one.\nans: Path {len(lines)}"


def test_train_with_rapl_labels_uses_the_stored_paths(toy, tmp_path):
    graph, path = toy
    with OpenAIServer(responder=_longest) as server:
        env = label_env(tmp_path, server)
        labelled = _label(graph, path, env, "--limit", "5")
        assert labelled.exit_code == 0, labelled.output
    stored = _labellings(graph)
    assert len(stored) == 5

    runner = CliRunner()
    args = ["train", "toy-test", "--questions", str(path), "--max-epochs", "2", "--threads", "1"]
    shortest = runner.invoke(app, connection_args(graph) + args + ["--name", "toy-sp"], env=env)
    assert shortest.exit_code == 0, shortest.output
    trained = runner.invoke(app, connection_args(graph) + args + ["--name", "toy-rapl", "--labels", "rapl"], env=env)
    assert trained.exit_code == 0, trained.output
    assert (
        "labels: rapl (stored by `kgdb label`) for 5 questions (5 paths); 2 without them fall back to shortest-path labels"
        in trained.output
    )

    cfg_sp = json.loads((tmp_path / "ckpt" / "toy-sp" / "config.json").read_text())
    cfg = json.loads((tmp_path / "ckpt" / "toy-rapl" / "config.json").read_text())
    assert cfg["labels"]["source"] == "rapl" and cfg["labels"]["llm"] == 5 and cfg["labels"]["fallback_shortest"] == 2
    assert cfg_sp["labels"] == {"source": "shortest"}
    assert cfg["data_cache"]["train"] != cfg_sp["data_cache"]["train"]  # the label source is part of the cache key
    assert cfg["data_cache"]["val"] == cfg_sp["data_cache"]["val"]  # validation keeps shortest-path labels

    from pathlib import Path

    items_sp = {it.qid: it for it in load_cache(Path(cfg_sp["data_cache"]["train"]))}
    items = {it.qid: it for it in load_cache(Path(cfg["data_cache"]["train"]))}
    differs = 0
    for qid, it in items.items():
        if qid not in stored:
            assert np.array_equal(it.labels, items_sp[qid].labels)  # fallback: shortest
            continue
        ids = {i: e for i, e in zip(it.entity_idx.tolist(), _ids_of(graph, it.entity_idx.tolist()))}
        rels = relation_names(graph)
        learned = {
            (ids[h], rels[r], ids[t])
            for h, r, t in zip(
                it.entity_idx[it.head[it.labels]], it.relation[it.labels], it.entity_idx[it.tail[it.labels]]
            )
        }
        (p,) = stored[qid]["paths"]
        assert learned == set(zip(p["heads"], p["relations"], p["tails"]))
        differs += not np.array_equal(it.labels, items_sp[qid].labels)
    assert differs >= 1  # the longest paths are not the shortest ones

    # Labelling more questions changes the stored labels, so the next training run re-derives its cache.
    with OpenAIServer(responder=_longest) as server:
        more = _label(graph, path, label_env(tmp_path, server))
        assert more.exit_code == 0 and "labelled 2 of 7" in more.output
    again = runner.invoke(app, connection_args(graph) + args + ["--name", "toy-rapl2", "--labels", "rapl"], env=env)
    assert again.exit_code == 0, again.output
    assert "for 7 questions (7 paths); 0 without them fall back" in again.output


def _ids_of(graph, idx: list[int]) -> list[str]:
    rows = {
        r["idx"]: r["id"]
        for r in graph.run_text("MATCH (e:Entity) WHERE e.idx IN $idx RETURN e.idx AS idx, e.id AS id", idx=idx)
    }
    return [rows[i] for i in idx]
