"""The RRP path ranker on a real Neo4j: the Cypher enumeration of relation paths around the topics
equals a brute-force enumeration of a hand-made multigraph (parallel relationships, both directions, a
CVT node, a write-back copy that is no relation); trained through `kgdb train rrp-ranker` on tiny
question files, it replaces the beam planner in `kgdb ask` and ranks paths on another graph; and the
benchmarks that export, time and replay it run."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest
from typer.testing import CliRunner

from kgdb.cli import app
from kgdb.cypher.path_candidates import relation_paths_around, relation_steps
from kgdb.cypher.paths import entity_names
from kgdb.errors import InputError
from kgdb.reading import Encoded, Topics, read_question
from kgdb.reading.question import asks_for_an_entity
from kgdb.rrp.closeness import WEIGHTS
from kgdb.rrp.scoring import PORTABLE_FEATURES
from support import ROOT
from support.graphs import load

pytestmark = pytest.mark.usefixtures("one_thread")

CVT = "m.0cvt1"  # an m. id without a name: a compound-value node
TRIPLES = [
    ("Jamaica", "location.country.languages_spoken", "Jamaican English"),
    ("Jamaica", "location.country.official_language", "Jamaican English"),  # parallel relationship
    ("Jamaican English", "language.human_language.countries_spoken_in", "Jamaica"),  # the other direction
    ("Jamaica", "location.country.capital", "Kingston"),
    ("Kingston", "location.location.containedby", "Jamaica"),
    ("Kingston", "location.location.containedby", "Surrey County"),
    ("Jamaica", "government.governmental_jurisdiction.governing_officials", CVT),
    (CVT, "government.government_position_held.office_holder", "Andrew Holness"),
    (CVT, "government.government_position_held.basic_title", "Prime Minister"),
    ("Andrew Holness", "people.person.place_of_birth", "Saint Andrew Parish"),
    ("Prime Minister", "government.government_office_category.officeholders", CVT),
    ("Saint Andrew Parish", "location.location.containedby", "Jamaica"),
    ("Jamaica", "location.country.administrative_divisions", "Saint Andrew Parish"),
    ("Saint Andrew Parish", "government.governmental_jurisdiction.governing_officials", CVT),
]


def brute_force(topics, max_hops=2, cvt_hops=3):
    """Relation path -> (ends, topics it leaves), walks with set semantics; past max_hops only from CVT nodes."""

    def step(nodes):
        out = {}
        for h, r, t in TRIPLES:
            if h in nodes:
                out.setdefault((r, 1), set()).add(t)
            if t in nodes:
                out.setdefault((r, -1), set()).add(h)
        return out

    found = {}
    for topic in topics:
        frontier = {(): {topic}}
        for hop in range(1, cvt_hops + 1):
            nxt = {}
            for path, nodes in frontier.items():
                for s, ends in step(nodes).items():
                    nxt[path + (s,)] = ends
                    ends_all, by = found.setdefault(path + (s,), (set(), set()))
                    ends_all |= ends
                    by.add(topic)
            frontier = {p: (e if hop < max_hops else e & {CVT}) for p, e in nxt.items()}
            frontier = {p: e for p, e in frontier.items() if e}
    return found


def _scored_copy(graph) -> None:
    graph.run_text(
        "MATCH (h:Entity {id: 'Jamaica'}), (t:Entity {id: 'Kingston'}) CREATE (h)-[:SCORED {run: 'r1', score: 1.0}]->(t)"
    )


@pytest.fixture
def jamaica(kept_graph):
    graph = kept_graph(TRIPLES, then=_scored_copy)
    assert entity_names(graph, [CVT])[CVT].cvt, "the fixture's CVT node must be labelled CVT"
    return graph


def test_enumeration_equals_brute_force(jamaica):
    for topics in (["Jamaica"], ["Kingston", "Prime Minister"], ["Nowhere"]):
        got = relation_paths_around(jamaica, topics)
        want = brute_force([t for t in topics if t != "Nowhere"])
        assert {c.steps: (c.ends, c.topics) for c in got} == want
        assert [c.steps for c in got] == sorted(want, key=lambda p: (len(p), p))
        for c in got:
            assert c.cvt == c.ends & {CVT} and c.reached == sum(len(brute_force([t])[c.steps][0]) for t in c.topics)
    paths = {c.steps for c in relation_paths_around(jamaica, ["Jamaica"])}
    # parallel relationships are separate paths, both directions are taken, :SCORED is no relation
    assert {
        (("location.country.languages_spoken", 1),),
        (("location.country.official_language", 1),),
        (("language.human_language.countries_spoken_in", -1),),
    } <= paths
    assert not any(r == "SCORED" for p in paths for r, _ in p)
    # three hops only through the CVT node: the parish's office holder, never on through a named entity
    three = {p for p in paths if len(p) == 3}
    assert (
        ("location.country.administrative_divisions", 1),
        ("government.governmental_jurisdiction.governing_officials", 1),
        ("government.government_position_held.office_holder", 1),
    ) in three
    assert all(CVT in brute_force(["Jamaica"])[p[:2]][0] for p in three)
    assert not any(p[:2] == (("location.country.capital", 1), ("location.location.containedby", 1)) for p in three)


def test_enumeration_caps_the_frontier_and_refuses_bad_hops(jamaica):
    capped = {c.steps: c for c in relation_paths_around(jamaica, ["Kingston"], cap=1)}
    c = capped[(("location.location.containedby", 1),)]
    assert c.ends == {"Jamaica"} and c.reached == 2  # the first in id order kept, both counted
    with pytest.raises(InputError, match="max_hops"):
        relation_paths_around(jamaica, ["Jamaica"], max_hops=0)
    with pytest.raises(InputError, match="max_hops"):
        relation_paths_around(jamaica, ["Jamaica"], max_hops=3, cvt_hops=2)


def test_enumeration_keeps_the_first_ids_and_the_cvt_nodes_among_them(graph):
    # one step reaching two named entities and two CVT nodes: ids in id order, cut at the cap, and the
    # CVT nodes listed only where they are among the ids kept (the next hop continues from those)
    load(graph, [("A", "r", "B"), ("A", "r", "C"), ("A", "r", "m.0cvt1"), ("A", "r", "m.0cvt2"), ("m.0cvt1", "s", "D")])
    for cap, ids, cvt in (
        (4, ["B", "C", "m.0cvt1", "m.0cvt2"], ["m.0cvt1", "m.0cvt2"]),
        (3, ["B", "C", "m.0cvt1"], ["m.0cvt1"]),
        (2, ["B", "C"], []),
    ):
        (step,) = relation_steps(graph, [["A"]], cap)[0]
        assert step == ("r", 1, 4, ids, cvt)


def test_enumeration_bounds_hubs_beyond_the_first_hop(jamaica):
    def paths(**bound):
        return {c.steps: c.ends for c in relation_paths_around(jamaica, ["Kingston"], cap=2, **bound)}

    full, none, roomy = paths(), paths(hub_scan=0), paths(hub_scan=100)
    assert roomy == full  # the budget covers every hub: the same candidates
    # Jamaica (more relationships than cap=2) is a hub: with no budget it is not expanded at the second
    # hop, Surrey County (one relationship) still is; the topic's own hop is never bounded
    via_jamaica = (("location.location.containedby", 1), ("location.country.capital", 1))
    via_surrey = (("location.location.containedby", 1), ("location.location.containedby", -1))
    assert via_jamaica in full and via_jamaica not in none
    assert full[via_surrey] == {"Kingston", "Saint Andrew Parish"} and none[via_surrey] == {"Kingston"}
    assert {p: e for p, e in full.items() if len(p) == 1} == {p: e for p, e in none.items() if len(p) == 1}


def test_enumeration_continues_only_the_best_prefixes(jamaica):
    def paths(**bound):
        return {c.steps: c.ends for c in relation_paths_around(jamaica, ["Jamaica"], **bound)}

    capital, officials = (
        ("location.country.capital", 1),
        ("government.governmental_jurisdiction.governing_officials", 1),
    )
    full = paths()
    one = paths(prefixes=1, prefix_score=lambda steps: float(steps[-1] == capital))
    # every 1-hop path is still a candidate; only the capital's path is continued, exactly as without the bound
    assert {p: e for p, e in one.items() if len(p) == 1} == {p: e for p, e in full.items() if len(p) == 1}
    assert {p: e for p, e in one.items() if len(p) > 1} == {
        p: e for p, e in full.items() if len(p) > 1 and p[0] == capital
    }
    assert any(p[0] == capital for p in one if len(p) > 1)
    assert paths(prefixes=100, prefix_score=lambda steps: 0.0) == full
    # equal scores: the smallest steps win, so the choice never depends on the order rows come back in
    assert {p[0] for p in paths(prefixes=1, prefix_score=lambda steps: 0.0) if len(p) > 1} == {officials}
    with pytest.raises(
        InputError, match="KGDB_RRP_PREFIXES: relation paths continued per hop must be 1 or more, got 0"
    ):
        paths(prefixes=0, prefix_score=lambda steps: 0.0)
    with pytest.raises(InputError, match="needs a score"):
        paths(prefixes=1)


def test_trained_ranker_replaces_the_beam_planner_in_ask(movie_files):
    from kgdb.data.relation_paths import TripleArrays
    from kgdb.qa.ask import AskPipeline
    from kgdb.rrp.model_choice import relation_path_retriever
    from kgdb.rrp.path_ranker import RankedPathPlanner
    from kgdb.rrp.planners import TrainedPathPlanner
    from support.movies import TRIPLES as MOVIE_TRIPLES
    from support.movies import path_answers

    graph, settings, files, env, base = movie_files
    runner = CliRunner()
    questions = [a for f in files for a in ("--questions", str(f))]
    out = runner.invoke(
        app,
        base + ["train", "rrp-planner", *questions, "--max-epochs", "5", "--patience", "5", "--threads", "1"],
        env=env,
    )
    assert out.exit_code == 0, out.output
    out = runner.invoke(
        app, base + ["train", "rrp-ranker", *questions, "--set", "planner=no-such-planner", "--threads", "1"], env=env
    )
    assert out.exit_code == 1 and "no checkpoint 'no-such-planner'" in str(out.exception)
    out = runner.invoke(
        app,
        base
        + [
            "train",
            "rrp-ranker",
            *questions,
            "--name",
            "ranker",
            "--max-epochs",
            "30",
            "--patience",
            "30",
            "--lr",
            "0.01",
            "--threads",
            "1",
            "--tune-per-file",
            "10",
        ],
        env=env,
    )
    assert out.exit_code == 0, out.output
    assert "val answer Hit@1" in out.output and "answering mode" in out.output
    config = json.loads((settings.checkpoints_dir / "ranker" / "config.json").read_text())
    assert config["retriever"] == "rrp-ranker"
    assert config["planner"].startswith("rrp-planner") and config["rethinking"]["mode"] in (
        "planner",
        "structural",
        "union",
        "rethink",
    )
    assert config["metrics"]["val_expected_hit@1"] > 0.5
    # the answers' closeness weight, chosen on each file's val questions in the chosen mode (one grid per file)
    assert "answer closeness weight" in out.output and sorted(config["answering"]["val"]) == sorted(
        str(f) for f in files
    )
    assert config["answering"]["closeness_weight"] in WEIGHTS and config["answering"]["per_file"] == 10

    retriever = relation_path_retriever(graph, settings, write=False)  # the newest ranker of this graph
    assert isinstance(retriever.planner, RankedPathPlanner) and retriever.describe()["checkpoint"] == "ranker"
    assert retriever.closeness_weight == config["answering"]["closeness_weight"]
    # results record the enumeration's bounds, so a run with other KGDB_RRP_PREFIXES / KGDB_FETCH_HUB_SCAN / KGDB_RRP_STEP_SCAN is told apart
    assert retriever.describe()["planner_settings"]["candidates"] == {
        "hops": [3, 3],
        "frontier_cap": 200,
        "hub_scan": settings.fetch_hub_scan,
        "prefixes": settings.rrp_prefixes,
        "step_scan": settings.rrp_step_scan,
    }
    question = "who directed the films starring Lise Meitner"
    paths = retriever.retrieve(question, ["Lise Meitner"]).paths
    assert paths[0].relations == ("movie.starred_actors", "movie.directed_by") and paths[0].directions == (-1, 1)
    gold = path_answers(
        TripleArrays.from_triples(MOVIE_TRIPLES),
        "Lise Meitner",
        (("movie.starred_actors", -1), ("movie.directed_by", 1)),
    )
    # rethinking's S1 of a traced path reads the ranking its own plan holds, whatever other threads
    # planned in between (eval qa --concurrency shares one ranker): nothing is kept on the ranker
    ranker, wanted = retriever.planner, (("movie.starred_actors", "movie.directed_by"), (-1, 1))
    plan = ranker.plan(
        graph, read_question(question), Topics(["Lise Meitner"], "given", [], []), {"Lise Meitner": "Lise Meitner"}
    )
    other = threading.Thread(
        target=lambda: ranker.plan(graph, read_question("who wrote Film C"), Topics(["Film C"], "given", [], []), {})
    )
    other.start()
    other.join()
    probability = ranker.path_probability(plan, [wanted])[0]
    ranked = {
        (tuple(r for r, _ in c.steps), tuple(d for _, d in c.steps)): p
        for c, p in ranker.scored(
            graph, Encoded(plan.text, plan.text_emb, asks_for_an_entity(plan.text)), ["Lise Meitner"]
        )
    }
    assert 0 < probability == ranked[wanted] and plan.paths[0].relations == wanted[0]
    res = AskPipeline(graph, settings, retriever="relation-paths", reasoner="rrp", write=False).ask(
        question, ["Lise Meitner"]
    )
    assert sorted(a.answer for a in res.answers) == gold and not res.reasoning.llm_used
    # a planner checkpoint named explicitly keeps the beam planner
    assert isinstance(
        relation_path_retriever(graph, settings, checkpoint=config["planner"], write=False).planner, TrainedPathPlanner
    )
    # weights another version wrote (here: the relation table missing) are refused by path, with what to do
    from safetensors.torch import load_file, save_file

    from kgdb.models.checkpoints import CheckpointError

    broken = settings.checkpoints_dir / "broken-ranker"
    shutil.copytree(settings.checkpoints_dir / "ranker", broken)
    weights = {k: v for k, v in load_file(str(broken / "model.safetensors")).items() if k != "relation_emb"}
    save_file(weights, str(broken / "model.safetensors"))
    with pytest.raises(
        CheckpointError,
        match=r"broken-ranker does not hold a rrp-ranker model this kgdb can load \(KeyError.*kgdb train rrp-ranker",
    ):
        relation_path_retriever(graph, settings, checkpoint="broken-ranker", write=False)


def test_portable_ranker_trained_on_one_graph_ranks_paths_on_another(movie_files):
    """`--portable`: no planner, no relation ids, no relation table in the weights; the checkpoint
    reads the connected graph's relation table, so it ranks the paths of a graph whose relations are
    named otherwise. `--on` pairs one URI with each question file."""
    from safetensors.torch import load_file

    from kgdb.models.base import resolve_device
    from kgdb.rrp.model_choice import relation_path_retriever
    from kgdb.rrp.path_ranker import RankedPathPlanner
    from support.graphs import wipe
    from support.movies import TRIPLES as MOVIE_TRIPLES

    graph, settings, files, env, base = movie_files
    runner = CliRunner()
    questions = [a for f in files for a in ("--questions", str(f))]
    out = runner.invoke(
        app, base + ["train", "rrp-ranker", "--portable", *questions, "--on", settings.neo4j_uri], env=env
    )
    assert out.exit_code == 1 and "one --on URI per --questions file: 1 for 2" in str(out.exception)
    out = runner.invoke(
        app, base + ["train", "rrp-ranker", *questions, "--on", settings.neo4j_uri, "--on", settings.neo4j_uri], env=env
    )
    assert out.exit_code == 1 and "--on needs --portable" in str(out.exception)
    out = runner.invoke(app, base + ["train", "rrp-planner", "--questions", str(files[0]), "--portable"], env=env)
    assert out.exit_code == 2 and "No such option: --portable" in out.output
    out = runner.invoke(
        app,
        base
        + [
            "train",
            "rrp-ranker",
            "--portable",
            *questions,
            "--on",
            settings.neo4j_uri,
            "--on",
            settings.neo4j_uri,
            "--positive-margin",
            "-0.1",
        ],
        env=env,
    )
    assert out.exit_code == 1 and "margin must be 0 or more, got -0.1" in str(out.exception)
    out = runner.invoke(
        app,
        base
        + [
            "train",
            "rrp-ranker",
            "--portable",
            *questions,
            "--on",
            settings.neo4j_uri,
            "--on",
            settings.neo4j_uri,
            "--name",
            "portable",
            "--max-epochs",
            "30",
            "--patience",
            "30",
            "--lr",
            "0.01",
            "--threads",
            "1",
            "--positive-margin",
            "0.1",
        ],
        env=env,
    )
    assert out.exit_code == 0, out.output
    folder = settings.checkpoints_dir / "portable"
    config = json.loads((folder / "config.json").read_text())
    assert config["model"]["portable"] and config["relation_names"] is None and config["planner"] is None
    assert (
        config["candidates"]["positive_margin"] == 0.1
        and "within 0.1 of the best cos_max" in config["candidates"]["rule"]
    )
    assert config["dense_features"] == list(PORTABLE_FEATURES) and config["metrics"]["val_expected_hit@1"] > 0.5
    # the answers' closeness weight, chosen on each file's val questions read on its own --on graph
    assert "answer closeness weight" in out.output and config["answering"]["closeness_weight"] in WEIGHTS
    assert [label.split(" on graph ")[0] for label in config["answering"]["val"]] == [str(f) for f in files]
    assert config["train"]["device"] == resolve_device(settings.device)  # the GPU when present (KGDB_DEVICE auto)
    weights = load_file(str(folder / "model.safetensors"))
    assert "relation_emb" not in weights and not any(k.startswith("token.") for k in weights)

    wipe(graph)  # the same films, their relations named otherwise
    load(graph, [(h, r.replace("movie.", "film.film."), t) for h, r, t in MOVIE_TRIPLES])
    retriever = relation_path_retriever(graph, settings, checkpoint=str(folder), write=False)
    assert isinstance(retriever.planner, RankedPathPlanner) and retriever.planner.planner is None
    assert retriever.planner.relations.names[0].startswith("film.film.")
    paths = retriever.retrieve("who directed the films starring Lise Meitner", ["Lise Meitner"]).paths
    assert paths[0].relations == ("film.film.starred_actors", "film.film.directed_by") and paths[0].directions == (
        -1,
        1,
    )


BENCH = ROOT / "benchmarks"


def _bench_env(settings, env: dict) -> dict:
    """The environment a benchmark script needs to reach the test server (and the fixture's folders)."""
    return {
        **os.environ,
        **env,
        "KGDB_NEO4J_URI": settings.neo4j_uri,
        "KGDB_NEO4J_PASSWORD": settings.neo4j_password.get_secret_value(),
    }


def _side_by_side(*runs: tuple[list[str], dict | None]) -> list[subprocess.CompletedProcess]:
    """Commands that do not depend on each other run at once (each mostly keeps one core busy); what each
    printed and its exit code, in the order given."""
    procs = [
        subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for args, env in runs
    ]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


def test_device_bench_exports_the_portable_rankers_examples_and_times_them_per_device(movie_files, tmp_path):
    """benchmarks/device.py rrp-export reads each file on its server as training does; rrp-run needs no
    database and prints one row per device."""
    from support.movies import TRIPLES as MOVIE_TRIPLES

    graph, settings, files, env, base = movie_files
    script = BENCH / "device.py"
    env = _bench_env(settings, env)
    out_dir = tmp_path / "bench"
    args = [
        sys.executable,
        str(script),
        "rrp-export",
        "--questions",
        str(files[0]),
        "--questions",
        str(files[1]),
        "--out",
        str(out_dir),
    ]
    one_on = [*args[:-1], str(tmp_path / "bench-refused"), "--on", settings.neo4j_uri]
    refused, out, nowhere = _side_by_side(
        (one_on, env),
        (args + ["--on", settings.neo4j_uri] * 2, env),
        ([sys.executable, str(script), "rrp-run", str(tmp_path / "nowhere"), "--device", "cpu"], None),
    )
    assert refused.returncode == 1 and "2 --questions need as many --on" in refused.stderr, refused.stderr
    assert nowhere.returncode == 1 and "no rrp-meta.json here" in nowhere.stderr
    assert out.returncode == 0, out.stderr
    meta = json.loads((out_dir / "rrp-meta.json").read_text())
    assert meta["train"] > 0 and len(meta["val"]) == 2 and meta["relations"] <= len({r for _, r, _ in MOVIE_TRIPLES})
    run = [sys.executable, str(script), "rrp-run", str(out_dir), "--device", "cpu", "--warmup", "1"]
    out, trained = _side_by_side((run, None), ([*run, "--epochs", "2"], None))
    assert out.returncode == 0, out.stderr
    assert f"{meta['train']} train questions" in out.stdout
    assert re.search(r"^cpu(\s+[\d.]+ / [\d.]+){2}\s+[\d.]+\s+[\d.]+$", out.stdout, re.M), out.stdout
    # then the selected epoch of those trained, its val expected Hit@1 / Macro-F1 and the training time
    row = re.search(
        r"^cpu(\s+[\d.]+ / [\d.]+){2}\s+[\d.]+\s+[\d.]+\s+([12]) / ([12])\s+([\d.]+) / ([\d.]+)\s+[\d.]+$",
        trained.stdout,
        re.M,
    )
    assert trained.returncode == 0 and row, trained.stdout + trained.stderr
    assert 0.0 <= float(row.group(4)) <= 1.0 and 0.0 <= float(row.group(5)) <= 1.0


def test_subnormal_benchmark_counts_the_shipped_rankers_and_finds_its_scores_unchanged(movie_files, tmp_path):
    """benchmarks/subnormals.py: subnormal weights counted per checkpoint folder; reading them as zero
    changes no score of the shipped portable ranker, here on a tiny movie graph; a missing question file
    is one line."""
    from safetensors.numpy import load_file, save_file

    from kgdb.models.default import shipped_checkpoint

    graph, settings, files, env, base = movie_files
    script = BENCH / "subnormals.py"
    env = _bench_env(settings, env)
    # a copy of the shipped ranker (trained with subnormals flushed to zero) holding five of them
    tiny = tmp_path / "with-subnormals"
    shutil.copytree(shipped_checkpoint("rrp-ranker"), tiny)
    weights = load_file(tiny / "model.safetensors")
    # set as bits: a float assignment in this process may be flushed to zero (torch.set_flush_denormal)
    weights["words.weight"].view(np.uint32)[0, :5] = 1
    save_file(weights, tiny / "model.safetensors")
    out, missing = _side_by_side(
        ([sys.executable, str(script), "--questions", str(files[1]), "--split", "all", "--checkpoint", str(tiny)], env),
        ([sys.executable, str(script), "--questions", str(tmp_path / "nowhere.jsonl")], env),
    )
    assert out.returncode == 0, out.stderr
    assert "rrp-ranker-portable: 0 subnormal weights" in out.stdout
    assert "with-subnormals: 5 subnormal weights; words.weight 5" in out.stdout
    found = re.search(
        r"^(\d+) all questions with candidates .*: scores bitwise equal (\d+), same top path (\d+); "
        r"numpy as served against torch: same top path (\d+), largest score difference ([\d.e+-]+)$",
        out.stdout,
        re.M,
    )
    assert found and int(found.group(1)) > 0 and found.group(1) == found.group(2) == found.group(3) == found.group(4), (
        out.stdout
    )
    assert float(found.group(5)) < 1e-4
    assert (
        missing.returncode == 1
        and "nowhere.jsonl: question file not found" in missing.stderr
        and "Traceback" not in missing.stderr
    ), missing.stderr


def test_db_calls_benchmark_replays_the_reads_of_rrp_answers_with_the_same_results(movie_files, tmp_path):
    """benchmarks/db_calls.py: a first run records the enumeration's and grounding's calls while answering,
    a second (as another checkout would) replays the same calls and prints the same result digests."""
    graph, settings, files, env, base = movie_files
    args = [
        sys.executable,
        str(BENCH / "db_calls.py"),
        "--questions",
        str(files[1]),
        "--n",
        "4",
        "--calls",
        str(tmp_path / "calls.pkl"),
        "--rounds",
        "2",
    ]
    first, second = (
        subprocess.run(args, capture_output=True, text=True, env=_bench_env(settings, env), timeout=600)
        for _ in range(2)
    )
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    recorded = re.search(
        r"^recorded (\d+) relation_steps, (\d+) ground_relation_paths calls of 4 questions", first.stdout, re.M
    )
    assert recorded and int(recorded.group(1)) > 0 and int(recorded.group(2)) > 0, first.stdout
    assert "replaying the calls in" in second.stdout and "recorded" not in second.stdout
    rows = [
        re.findall(
            r"^(\w+)\s+(\d+) calls\s+[\d.]+ ms per call \(rounds: [\d.]+, [\d.]+\)  results sha256 (\w+)$",
            out.stdout,
            re.M,
        )
        for out in (first, second)
    ]
    assert [name for name, _, _ in rows[0]] == ["relation_steps", "ground_relation_paths"] and rows[0] == rows[1], (
        first.stdout + second.stdout
    )


def test_device_bench_times_the_planner_and_structural_reasoner_from_their_exported_examples(movie_files, tmp_path):
    """benchmarks/device.py rrp-train-export gathers both models' training examples as their `kgdb train`
    commands do; rrp-train-run needs no database and prints one row per device."""
    graph, settings, files, env, base = movie_files
    out_dir = tmp_path / "bench"
    device = [sys.executable, str(BENCH / "device.py")]
    out, nowhere = _side_by_side(
        ([*device, "rrp-train-export", "--questions", str(files[1]), "--out", str(out_dir)], _bench_env(settings, env)),
        ([*device, "rrp-train-run", str(tmp_path / "nowhere"), "--device", "cpu"], None),
    )
    assert out.returncode == 0, out.stderr
    sizes = re.search(
        r"planner_train (\d+), structural_train (\d+), planner_val (\d+), structural_val (\d+) examples", out.stdout
    )
    assert sizes and all(int(n) > 0 for n in sizes.groups()), out.stdout
    assert nowhere.returncode == 1 and "no rrp-train.pkl here" in nowhere.stderr
    out = subprocess.run(
        [*device, "rrp-train-run", str(out_dir), "--device", "cpu"], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    assert re.search(r"^cpu(\s+[\d.]+){4}$", out.stdout, re.M), out.stdout
