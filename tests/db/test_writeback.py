import threading

import numpy as np
import pytest

from kgdb.cypher.retrieval import fetch_subgraph
from kgdb.cypher.writeback import list_runs, prune_runs, show_run, write_scores
from kgdb.errors import KgdbError
from support.graphs import LOU_SEAL


def _scored(graph, run):
    rows = graph.run_text(
        "MATCH (h)-[s:SCORED {run: $run}]->(t) RETURN h.id AS h, s.rel AS rel, t.id AS t, s.score AS score, "
        "s.rank AS rank ORDER BY rank",
        run=run,
    )
    return [(r["h"], r["rel"], r["t"], r["score"], r["rank"]) for r in rows]


def test_write_show_list_prune(kept_graph):
    graph = kept_graph(LOU_SEAL)
    sg = fetch_subgraph(graph, ["Lou Seal"], None, hops=2, question="q?", qid="Q1")
    scores = np.linspace(0.1, 0.9, sg.num_triples)
    run = write_scores(graph, sg, scores, "cosine", k=3)
    rows = _scored(graph, run)
    assert [r[4] for r in rows] == [1, 2, 3]
    best = np.argsort(-scores)[:3]
    assert [r[:3] for r in rows] == [sg.triple(i) for i in best]  # ids equal names in this graph
    assert [r[3] for r in rows] == pytest.approx(scores[best].tolist())
    shown = show_run(graph, run)
    assert shown["topics"] == ["Lou Seal"] and shown["qid"] == "Q1" and len(shown["triples"]) == 3
    assert [r.run for r in list_runs(graph)] == [run]
    # rewriting the same run replaces it
    write_scores(graph, sg, scores[::-1].copy(), "cosine", k=2, run=run)
    assert len(_scored(graph, run)) == 2
    assert prune_runs(graph, [run]) == (1, 2)
    assert list_runs(graph) == [] and _scored(graph, run) == []
    with pytest.raises(KgdbError, match="scores"):
        write_scores(graph, sg, scores[:2], "cosine", k=2)


def test_concurrent_runs_on_one_question_never_mix(kept_graph, neo4j_settings):
    from kgdb.cypher import Graph

    graph = kept_graph(LOU_SEAL)
    sg = fetch_subgraph(graph, ["Lou Seal"], None, hops=2, qid="Q1")
    rng = np.random.default_rng(0)
    scores = {name: rng.random(sg.num_triples) for name in ("a", "b", "c", "d")}
    runs, errors = {}, []

    def write(name):
        try:
            with Graph.connect(neo4j_settings) as g:
                for _ in range(3):  # repeated rewrites interleave with the other writers
                    runs[name] = write_scores(g, sg, scores[name], f"retriever-{name}", k=4, run=f"run-{name}")
        except Exception as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in scores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for name, run in runs.items():
        rows = _scored(graph, run)
        best = np.argsort(-scores[name], kind="stable")[:4]
        assert [r[:3] for r in rows] == [sg.triple(i) for i in best]
        assert [r[3] for r in rows] == pytest.approx(scores[name][best].tolist())
    assert {r.retriever for r in list_runs(graph)} == {f"retriever-{n}" for n in scores}
    # pruning by filter touches only the matching run
    assert prune_runs(graph, retriever="retriever-a") == (1, 4)
    assert len(_scored(graph, "run-b")) == 4


def test_browser_queries_run_on_written_runs(kept_graph):
    """The analyst queries in kgdb/cypher/browser/ return what the docs promise."""
    graph = kept_graph(LOU_SEAL)
    graph.run_text(
        "CREATE (:Question {id: 'Q1', text: 'q?', answers: ['2012 World Series'], answer_entities: ['2012 World Series']})"
    )
    sg = fetch_subgraph(graph, ["Lou Seal"], None, hops=2, question="q?", qid="Q1")
    names = [sg.triple(i) for i in range(sg.num_triples)]
    good = np.array([1.0 if t[2] in ("San Francisco Giants", "2012 World Series") else 0.1 for t in names])
    bad = np.array([1.0 if t[2] in ("San Francisco Giants", "AT&T Park") else 0.1 for t in names])
    run_a = write_scores(graph, sg, good, "good", k=2)
    run_b = write_scores(graph, sg, bad, "bad", k=2)
    rows = graph.run("browser/scored_subgraph", run=run_a, top=10)
    assert len(rows) == 2 and all(r["p"] and r["anchor"]["id"] == "Lou Seal" for r in rows)
    chains = graph.run("browser/evidence_chains", run=run_a)
    assert [r["relations"] for r in chains] == [
        ["sports.mascot.team"],
        ["sports.mascot.team", "sports.sports_team.championships"],
    ] or {tuple(r["relations"]) for r in chains} == {
        ("sports.mascot.team",),
        ("sports.mascot.team", "sports.sports_team.championships"),
    }
    compared = graph.run("browser/compare_retrievers", qid="Q1", retriever_a="good", retriever_b="bad")
    assert sorted(r["kept_by"] for r in compared) == ["both", "only bad", "only good"]
    missed = graph.run("browser/missed_answers", retriever=None)
    assert [r["run"] for r in missed] == [run_b]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_scores_are_never_written(kept_graph, bad):
    graph = kept_graph(LOU_SEAL)
    sg = fetch_subgraph(graph, ["Lou Seal"], None, hops=2, question="q?", qid="Q1")
    scores = np.linspace(0.1, 0.9, sg.num_triples)
    scores[1] = bad
    with pytest.raises(KgdbError, match="non-finite"):
        write_scores(graph, sg, scores, "cosine", k=3)
    assert list_runs(graph) == []
    assert graph.run_text("MATCH ()-[s:SCORED]->() RETURN count(s) AS n")[0]["n"] == 0
