"""`kgdb label --method rapl-relations` (RAPL's relation targeting R_*, §3.4) end to end on a real
Neo4j with the real OpenAI-protocol test server: stored with provenance and resumed, bad replies retried
once or counted, then `kgdb train rapl --relation-targets` on what it stored."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from kgdb.cli import app
from kgdb.data.cache import load_cache
from support.labelling import TRAIN, connection_args, label_env, relation_names
from support.openai_server import OpenAIServer, select_relations
from support.plugins import ToyRetriever  # noqa: F401  (registers toy-test)

pytestmark = pytest.mark.usefixtures("one_thread")


def _label(graph, path, env, *extra: str):
    return CliRunner().invoke(
        app, connection_args(graph) + ["label", "--questions", str(path), "--method", "rapl-relations", *extra], env=env
    )


def _relation_labellings(graph) -> dict[str, dict]:
    rows = graph.run_text(
        "MATCH (l:Labelling {method: 'rapl-relations'}) OPTIONAL MATCH (q:Question)-[:LABELLED]->(l) "
        "RETURN l {.*, created: toString(l.created)} AS l, q.id AS question"
    )
    return {r["l"]["qid"]: {**r["l"], "question": r["question"]} for r in rows}


def test_label_rapl_relations_stores_r_star_with_provenance_and_resumes(toy, tmp_path):
    graph, path = toy
    with OpenAIServer(responder=select_relations) as server:
        env = label_env(tmp_path, server)
        first = _label(graph, path, env, "--concurrency", "2")
        assert first.exit_code == 0, first.output
        assert f"labelled {TRAIN} of {TRAIN} questions of toy/train with rapl-relations" in first.output
        assert server.calls == TRAIN
        prompt = server.requests[0]["messages"]
        assert (
            prompt[0]["role"] == "system" and "→ architecture.structure.architect" in prompt[2]["content"]
        )  # the one-shot example
        tokens = sum(len(m["content"].split()) for r in server.requests for m in r["messages"])
        assert re.search(rf"LLM calls {TRAIN}, tokens: {tokens} prompt \+ \d+ completion", first.output), first.output

        stored = _relation_labellings(graph)
        assert len(stored) == TRAIN
        for qid, lab in stored.items():
            assert lab["status"] == "ok" and lab["question"] == qid
            assert (lab["model"], lab["prompt_version"]) == ("kgdb-test-model", "label_rapl_relations_v1")
            assert lab["created"] and lab["calls"] == 1 and lab["ignored"] == 0
            assert len(lab["relations"]) == len(lab["directions"]) == lab["selected"] >= 1
        total = sum(lab["selected"] for lab in stored.values())
        assert f"selected relations: {TRAIN} questions, {total} relations stored" in first.output
        # "what is the capital of jamaica?": Jamaica's 7 (relation, direction) candidates, the capital one chosen
        q1 = stored["Q-1"]
        assert (q1["relations"], q1["directions"], q1["topics"], q1["candidates"]) == (
            ["location.country.capital"],
            [1],
            ["Jamaica"],
            7,
        )
        # "what language do people in jamaica speak?": both language relations, in listed order
        assert (stored["Q-0"]["relations"], stored["Q-0"]["directions"]) == (
            ["location.country.languages_spoken", "location.country.official_language"],
            [1, 1],
        )
        assert graph.single("counts")["triples"] == 15  # labels are not triples
        # The Browser query draws R_* on the topic's own triples.
        rows = graph.run("browser/question_relation_targets", qid="Q-0", method="rapl-relations")
        drawn = {(r["t"]["id"], r["r"][1], r["o"]["id"]) for r in rows}  # a relationship row: (start, type, end)
        assert drawn == {
            ("Jamaica", "location.country.languages_spoken", "Jamaican Creole English Language"),
            ("Jamaica", "location.country.official_language", "Jamaican English"),
        }
        assert all(r["q"]["id"] == "Q-0" for r in rows)
        assert "browser/question_relation_targets.cypher" in first.output

        second = _label(graph, path, env)
        assert second.exit_code == 0, second.output
        assert (
            f"nothing to do: all {TRAIN} questions of toy/train are already labelled by rapl-relations" in second.output
        )
        assert server.calls == TRAIN

        # Path labelling of the same questions is another method: its own labellings, untouched R_*.
        paths = CliRunner().invoke(
            app,
            connection_args(graph) + ["label", "--questions", str(path), "--method", "rapl", "--limit", "1"],
            env=env,
        )
        assert paths.exit_code == 0 and "labelled 1 of 1" in paths.output
        assert _relation_labellings(graph) == stored


def test_garbage_relation_reply_is_retried_once_then_recorded_as_failure(toy, tmp_path):
    graph, path = toy
    garbage = [{"content": "Kingston is the capital."}, {"content": "It is location.country.capital."}]
    with OpenAIServer(script=garbage, responder=select_relations) as server:
        env = label_env(tmp_path, server)
        run = _label(graph, path, env, "--concurrency", "1", "--limit", "2")
        assert run.exit_code == 0, run.output
        assert server.calls == 3
        follow_up = server.requests[1]["messages"]
        assert follow_up[-2] == {"role": "assistant", "content": "Kingston is the capital."}
        assert "ans: → relation" in follow_up[-1]["content"]
        (failed,) = [lab for lab in _relation_labellings(graph).values() if lab["status"] == "failed"]
        assert failed["relations"] == [] and failed["calls"] == 2 and "after one retry" in failed["error"]
        assert "failed: 1" in run.output
        rerun = _label(graph, path, env, "--limit", "2")
        assert rerun.exit_code == 0 and "labelled 1 of 2" in rerun.output and server.calls == 4


def test_partial_relation_reply_keeps_known_names_and_counts_unknown(toy, tmp_path):
    graph, path = toy
    reply = "ans: → location.country.capital\nans: → made.up.relation\nans: ← location.loc"
    with OpenAIServer(script=[{"content": reply}], responder=select_relations) as server:
        run = _label(graph, path, label_env(tmp_path, server), "--limit", "1")  # Q-0, topic Jamaica
        assert run.exit_code == 0, run.output
    (lab,) = _relation_labellings(graph).values()
    assert lab["status"] == "ok" and lab["relations"] == ["location.country.capital"] and lab["ignored"] == 2
    assert "unknown names ignored: 2" in run.output


def test_train_rapl_with_relation_targets_carries_r_star_into_the_cache(toy, tmp_path):
    graph, path = toy
    with OpenAIServer(responder=select_relations) as server:
        env = label_env(tmp_path, server)
        assert _label(graph, path, env).exit_code == 0
    stored = _relation_labellings(graph)
    runner = CliRunner()
    args = [
        "train",
        "rapl",
        "--questions",
        str(path),
        "--max-epochs",
        "1",
        "--threads",
        "1",
        "--set",
        "hidden=16",
        "--set",
        "samples=5",
    ]
    trained = runner.invoke(app, connection_args(graph) + args + ["--name", "rapl-rt", "--relation-targets"], env=env)
    assert trained.exit_code == 0, trained.output
    assert f"relation targets: rapl-relations (stored by `kgdb label`) for {TRAIN} questions" in trained.output
    cfg = json.loads((tmp_path / "ckpt" / "rapl-rt" / "config.json").read_text())
    rc = cfg["relation_targets"]
    assert rc["questions"] == TRAIN and rc["relations"] == sum(lab["selected"] for lab in stored.values())

    # The cached mask, read back by name: exactly the topic triples whose relation (in that direction) is in R_*.
    rels = relation_names(graph)
    ids = {r["idx"]: r["id"] for r in graph.run_text("MATCH (e:Entity) RETURN e.idx AS idx, e.id AS id")}
    items = load_cache(Path(cfg["data_cache"]["train"]))
    augmented = 0
    for it in items:
        r_star = set(zip(stored[it.qid]["relations"], stored[it.qid]["directions"]))
        topics = set(it.topic.tolist())
        rt = it.relation_targets if it.relation_targets is not None else np.zeros(it.num_triples, np.uint8)
        for i in range(it.num_triples):
            name = rels[int(it.relation[i])]
            assert bool(rt[i] & 1) == (int(it.head[i]) in topics and (name, 1) in r_star)
            assert bool(rt[i] & 2) == (int(it.tail[i]) in topics and (name, -1) in r_star)
        augmented += int(((rt & 1) > 0).sum() + ((rt & 2) > 0).sum())
        if it.qid == "Q-0":
            marked = {(ids[int(it.entity_idx[it.head[i]])], rels[int(it.relation[i])]) for i in np.flatnonzero(rt & 1)}
            assert marked == {
                ("Jamaica", "location.country.languages_spoken"),
                ("Jamaica", "location.country.official_language"),
            }
    assert augmented == rc["augmented_triples"] > 0

    # Without the flag the train split has no R_*; the flag is refused for a retriever whose loss ignores it.
    plain = runner.invoke(app, connection_args(graph) + args + ["--name", "rapl-plain"], env=env)
    assert plain.exit_code == 0, plain.output
    cfg_plain = json.loads((tmp_path / "ckpt" / "rapl-plain" / "config.json").read_text())
    assert cfg_plain["relation_targets"] is None
    assert all(it.relation_targets is None for it in load_cache(Path(cfg_plain["data_cache"]["train"])))
    again = runner.invoke(app, connection_args(graph) + args + ["--name", "rapl-rt2", "--relation-targets"], env=env)
    assert (
        again.exit_code == 0
        and json.loads((tmp_path / "ckpt" / "rapl-rt2" / "config.json").read_text())["data_cache"]["train"]
        == cfg["data_cache"]["train"]
    )
    refused = runner.invoke(
        app, connection_args(graph) + ["train", "toy-test", "--questions", str(path), "--relation-targets"], env=env
    )
    assert refused.exit_code != 0 and "--relation-targets" in str(refused.exception) + refused.output
