"""The trained relation-path planner end to end on a real Neo4j: `kgdb train rrp-planner` on tiny
MetaQA-style question files, then `kgdb ask --reasoner rrp` answers a 2-hop question from the end
entities of the grounded relation path, without an LLM; bad relation paths get clear messages."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kgdb.cli import app
from kgdb.cypher.paths import UnknownRelationError, UnknownTopicError, ground_relation_path
from kgdb.data.relation_paths import TripleArrays
from kgdb.qa.ask import AskPipeline
from kgdb.rrp.model_choice import relation_path_retriever
from kgdb.rrp.retriever import RelationPathRetriever
from support.movies import TRIPLES, path_answers
from support.plugins import FixedPlanner

pytestmark = pytest.mark.usefixtures("one_thread")


def test_trained_planner_answers_a_two_hop_question_without_an_llm(movie_files):
    graph, settings, files, env, base = movie_files
    runner = CliRunner()
    out = runner.invoke(
        app,
        base
        + [
            "train",
            "rrp-planner",
            *(a for f in files for a in ("--questions", str(f))),
            "--max-epochs",
            "40",
            "--patience",
            "40",
            "--lr",
            "0.01",
            "--threads",
            "1",
        ],
        env=env,
    )
    assert out.exit_code == 0, out.output
    assert "val path Hit@1" in out.output
    (ckpt,) = settings.checkpoints_dir.iterdir()
    config = json.loads((ckpt / "config.json").read_text())
    assert (
        config["retriever"] == "rrp-planner" and config["relation_names"] and config["metrics"]["val_path_hit@1"] > 0.5
    )

    arrays = TripleArrays.from_triples(TRIPLES)
    gold = path_answers(arrays, "Lise Meitner", (("movie.starred_actors", -1), ("movie.directed_by", 1)))
    pipe = AskPipeline(graph, settings, retriever="relation-paths", reasoner="rrp", write=True)
    res = pipe.ask("who directed the films starring Lise Meitner", ["Lise Meitner"])
    assert res.reasoning and not res.reasoning.llm_used
    assert sorted(a.answer for a in res.answers) == gold
    assert all(a.grounded for a in res.answers) and res.run
    paths = pipe.retrieval.retrieve("who directed the films starring Lise Meitner", ["Lise Meitner"]).paths
    assert paths[0].relations == ("movie.starred_actors", "movie.directed_by") and paths[0].directions == (-1, 1)

    out = runner.invoke(
        app,
        base
        + [
            "ask",
            "who directed the films starring Lise Meitner",
            "--topic",
            "Lise Meitner",
            "--reasoner",
            "rrp",
            "--json",
        ],
        env=env,
    )
    assert out.exit_code == 0, out.output
    payload = json.loads(out.output)
    assert payload["retriever"] == "relation-paths" and payload["llm_used"] is False
    assert sorted(a["answer"] for a in payload["answers"]) == gold
    # other readings: lower-scored relation paths reaching other entities, never the answers' own
    alts = payload["alternatives"]
    assert all(a["score"] < 1 and not set(a["ends"]) <= set(gold) for a in alts) and len(alts) <= 3

    out = runner.invoke(
        app,
        base
        + ["eval", "qa", "--questions", str(files[1]), "--split", "all", "--reasoner", "rrp", "--concurrency", "1"],
        env=env,
    )
    assert out.exit_code == 0, out.output
    assert "relation-paths + rrp" in out.output


def test_rrp_without_a_trained_model_uses_the_shipped_ranker_and_needs_paths(movie_files, monkeypatch):
    graph, settings, *_ = movie_files
    import kgdb.qa.ask

    froze: list[int] = []  # the heap is frozen once something is loaded and answered (kgdb.heap)
    monkeypatch.setattr(kgdb.qa.ask, "freeze_loaded", lambda: froze.append(1))
    from kgdb.models.checkpoints import NoCheckpointError
    from kgdb.models.default import shipped_checkpoint

    with pytest.raises(NoCheckpointError, match="no checkpoint 'rrp-planner-movies'"):
        relation_path_retriever(graph, settings, checkpoint="rrp-planner-movies")  # a name given is never replaced
    retriever = relation_path_retriever(
        graph, settings, write=False
    )  # nothing trained here: the portable ranker shipped with kgdb
    assert retriever.planner.checkpoint.path == shipped_checkpoint("rrp-ranker") and retriever.planner.planner is None
    assert "portable rrp-ranker shipped with kgdb" in retriever.notes[0] and retriever.mode == "planner"
    res = AskPipeline(graph, settings, retriever="relation-paths", reasoner="rrp", write=False).ask(
        "who directed [Film A]", ["Film A"]
    )
    assert [a.answer for a in res.answers] == ["Ada Lovelace"] and "shipped with kgdb" in res.retriever_note
    assert froze == [1]
    pipe = AskPipeline(graph, settings, retriever="cosine", reasoner="rrp", write=False)
    with pytest.raises(Exception, match="--retriever relation-paths"):
        pipe.ask("who directed Film A", ["Film A"])


def test_bad_relation_paths_get_clear_messages(movie_files):
    graph, *_ = movie_files
    with pytest.raises(UnknownRelationError, match="'movie.produced_by', not a relation of this graph"):
        ground_relation_path(graph, "Film A", ["movie.directed_by", "movie.produced_by"])
    with pytest.raises(UnknownTopicError, match="'Film Z' is not an entity of this graph"):
        ground_relation_path(graph, "Film Z", ["movie.directed_by"])
    # A known relation that simply leads nowhere is no error.
    assert ground_relation_path(graph, "Ada Lovelace", ["movie.directed_by"], directions=[1]) == []
    assert [t[3] for (t,) in ground_relation_path(graph, "Film A", ["movie.directed_by"], directions=[1])] == [
        "Ada Lovelace"
    ]
    # Walks (the planner's grounding) may come back to an entity by another relationship (Film C was
    # directed and written by Alan Turing), never by the one just taken.
    path, dirs = ["movie.directed_by", "movie.written_by"], [1, -1]
    assert {p[-1][1] for p in ground_relation_path(graph, "Film C", path, directions=dirs)} == {"Film B"}
    assert {p[-1][1] for p in ground_relation_path(graph, "Film C", path, directions=dirs, walks=True)} == {
        "Film B",
        "Film C",
    }
    back = ground_relation_path(graph, "Film C", ["movie.directed_by"] * 2, directions=[1, -1], walks=True)
    assert {p[-1][1] for p in back} == {"Film F", "Film I"}
    # The retriever skips a planned path naming an unknown relation and says why.
    r = RelationPathRetriever(
        graph, graph.settings, planner=FixedPlanner(("movie.produced_by",), ("movie.directed_by",)), write=False
    )
    res = r.retrieve("who directed Film A", ["Film A"])
    assert [e.id for e in res.entities] == ["Ada Lovelace"]
    assert any("movie.produced_by" in n and "not a relation of this graph" in n for n in res.notes)
    # and says when the answers do not follow the best-scored reading of the question
    assert (
        "the best-scored relation path, movie.produced_by (1), reaches nothing from Film A; the answers follow the best one that does"
        in res.notes
    )
    none = RelationPathRetriever(
        graph, graph.settings, planner=FixedPlanner(("movie.produced_by",)), write=False
    ).retrieve("who produced Film A", ["Film A"])
    assert not none.entities and any(n.endswith("no planned path reaches anything") for n in none.notes)
