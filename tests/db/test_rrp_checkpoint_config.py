"""The RRP settings chosen on val live in the structural checkpoint's config.json (`rethinking`):
`relation_path_retriever` must read the planner's beam, λ1, θ and the answering mode from there
(explicit arguments still win), and fall back to beam 3 / λ1 0.5 / θ 0 when they are absent.
The checkpoints are written untrained (random weights) with the helpers the trainers use: what is
tested is where the settings come from, not what the models learnt."""

from __future__ import annotations

import pytest
import torch

from kgdb.reading import Topics, read_question
from kgdb.rrp.model_choice import relation_path_retriever
from kgdb.rrp.models.planner import PathDecoder, PlannerConfig
from kgdb.rrp.models.structural import StructuralConfig, StructuralReasoner
from kgdb.rrp.planner_training import relation_vocabulary
from kgdb.rrp.planners import PLANNER, save_relation_model
from kgdb.rrp.structural_runner import STRUCTURAL
from support.movies import TRIPLES

pytestmark = pytest.mark.usefixtures("one_thread")

ABLATION = {"hit1": 50.0, "macro_f1": 40.0, "n": 10, "reachable": 90.0}


@pytest.fixture
def rrp_checkpoints(kept_graph, tmp_path):
    """An (untrained) planner and structural checkpoint for the tiny movie graph; returns a function
    writing the structural one with a given `rethinking` block."""
    graph = kept_graph(TRIPLES)
    settings = graph.settings.with_overrides(
        cache_dir=tmp_path / "cache", checkpoints_dir=tmp_path / "ckpt", runs_dir=tmp_path / "runs"
    )
    vocab = relation_vocabulary(graph, settings)
    relation_emb = vocab.tables.relation.detach().cpu()
    common = {
        "relation_names": vocab.relation_names,
        "embedding_model": vocab.model_name,
        "embedding_dim": vocab.tables.dim,
        "graph_fingerprint": vocab.fingerprint,
    }
    torch.manual_seed(0)
    save_relation_model(
        settings.checkpoints_dir / "planner",
        PathDecoder(PlannerConfig(hidden=32, word_dim=16, buckets=256), relation_emb),
        PLANNER,
        common,
    )

    def structural(rethinking: dict | None):
        extra = {"rethinking": rethinking} if rethinking is not None else {}
        model = StructuralReasoner(StructuralConfig(hidden=16, word_dim=8, buckets=256, steps=2), relation_emb)
        save_relation_model(settings.checkpoints_dir / "structural", model, STRUCTURAL, {**common, **extra})

    return graph, settings, structural


FILM_A = Topics(["Film A"], "given", [], [])


def test_beam_lambda_theta_and_mode_come_from_the_structural_checkpoint(rrp_checkpoints):
    graph, settings, structural = rrp_checkpoints
    ablation = {"planner": ABLATION, "structural": ABLATION, "union": ABLATION, "rethink": {**ABLATION, "hit1": 60.0}}
    structural({"beam": 7, "lambda1": 0.3, "lambda2": 0.7, "theta": 0.2, "ablation_val": ablation})
    retriever = relation_path_retriever(graph, settings, write=False)
    assert (
        retriever.planner.beam == 7
        and retriever.lambda1 == 0.3
        and retriever.theta == 0.2
        and retriever.mode == "rethink"
    )
    assert retriever.describe()["beam"] == 7 and retriever.describe()["rethinking"] == {
        "lambda1": 0.3,
        "lambda2": 0.7,
        "theta": 0.2,
    }
    # the stored beam is the beam decoded: 7 relation paths leave Film A within 3 hops (3 already at 1 hop)
    plans = retriever.planner.plan(graph, read_question("who directed Film A"), FILM_A, {"Film A": "Film A"}).paths
    assert len(plans) == 7 and len(set((p.relations, p.directions) for p in plans)) == 7
    # explicit arguments override the stored settings
    chosen = relation_path_retriever(graph, settings, write=False, beam=2, lambda1=0.9, theta=0.5, mode="union")
    assert chosen.planner.beam == 2 and chosen.lambda1 == 0.9 and chosen.theta == 0.5 and chosen.mode == "union"
    assert (
        len(chosen.planner.plan(graph, read_question("who directed Film A"), FILM_A, {"Film A": "Film A"}).paths) == 2
    )
    # the planner alone won on val: that is the mode answering
    structural(
        {"beam": 5, "lambda1": 0.3, "theta": 0.2, "ablation_val": {**ablation, "planner": {**ABLATION, "hit1": 70.0}}}
    )
    retriever = relation_path_retriever(graph, settings, write=False)
    assert retriever.planner.beam == 5 and retriever.mode == "planner"


def test_defaults_when_the_checkpoint_stores_no_rethinking_settings(rrp_checkpoints):
    graph, settings, structural = rrp_checkpoints
    structural(None)
    retriever = relation_path_retriever(graph, settings, write=False)
    assert (
        retriever.planner.beam == 3
        and retriever.lambda1 == 0.5
        and retriever.theta == 0.0
        and retriever.mode == "rethink"
    )
    # without a structural checkpoint the planner answers alone, with beam 3
    planner_only = relation_path_retriever(graph, settings, write=False, structural=False)
    assert planner_only.structural is None and planner_only.mode == "planner" and planner_only.planner.beam == 3
