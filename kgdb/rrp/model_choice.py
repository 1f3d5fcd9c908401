"""Which trained RRP models answer on a graph: the path ranker named or trained on it (`load_ranker`), else
the graph's trained beam planner, else the portable ranker shipped with kgdb (`shipped_ranker`); the
structural reasoner trained on it, if any; and the answering settings the chosen checkpoint was tuned with.
`relation_path_retriever` builds the `RelationPathRetriever` from them."""

from __future__ import annotations

from typing import cast

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.cypher.path_candidates import candidate_hops
from kgdb.cypher.tables import graph_fingerprint
from kgdb.embeddings import get_embedder
from kgdb.models.checkpoints import (
    Checkpoint,
    CheckpointError,
    NoCheckpointError,
    checkpoint_for_graph,
    find_checkpoint,
)
from kgdb.pipeline.vectors import data_fingerprint, trained_on_this_data
from kgdb.rrp.answering import chosen_mode
from kgdb.rrp.path_ranker import RANKER, RankedPathPlanner
from kgdb.rrp.plan import PathPlanner
from kgdb.rrp.planners import load_planner, load_relation_model
from kgdb.rrp.ranker_features import RelationText, graph_relations
from kgdb.rrp.retriever import RelationPathRetriever
from kgdb.rrp.scoring import NumpyPathRanker, RankerConfig
from kgdb.rrp.structural_runner import StructuralRunner, load_structural


def load_ranker(
    graph: Graph, settings: Settings, checkpoint: str | None = None, *, beam: int | None = None
) -> RankedPathPlanner | None:
    """The ranker: the named checkpoint (a name or a folder) if it is one (None when it names another
    kind, e.g. a planner), else the newest ranker trained on this graph, else None. A portable
    ranker reads the connected graph's relation table; a graph's own ranker, its planner's."""
    if checkpoint:
        found = find_checkpoint(checkpoint, settings.checkpoints_dir)
        if found.config.get("retriever") != RANKER:
            return None
    else:
        try:
            found = checkpoint_for_graph(settings.checkpoints_dir, RANKER, graph_fingerprint(graph)[0])
        except NoCheckpointError:
            return None
    relations: list[RelationText] = []

    def build(cfg: dict, state: dict):
        config = RankerConfig(**cfg)
        if not config.portable:
            from kgdb.rrp.models.path_ranker import PathRanker

            return PathRanker(config, state["relation_emb"])
        # Weights without a relation table (the connected graph's), scored in numpy: plain `kgdb ask` imports no torch.
        relations.append(graph_relations(graph, settings))
        return NumpyPathRanker(config, state, relations[0].table)

    portable = bool((found.config.get("model") or {}).get("portable"))
    model, ckpt = load_relation_model(graph, settings, str(found.path), RANKER, build, "--checkpoint", arrays=portable)
    tuned = ckpt.config.get("rethinking") or {}
    common = {
        "hops": candidate_hops(graph),
        "beam": beam or int(tuned.get("beam", 10)),
        "checkpoint": ckpt,
        "hub_scan": settings.fetch_hub_scan,
        "prefixes": settings.rrp_prefixes,
        "step_scan": settings.rrp_step_scan,
    }
    if model.cfg.portable:
        embedder = get_embedder(
            ckpt.config.get("embedding_model") or settings.embedding_model,
            settings.device,
            settings.embedding_batch_size,
        )
        return RankedPathPlanner(model, relations[0], embedder, **common)
    planner = load_planner(graph, settings, ckpt.config.get("planner"))
    return RankedPathPlanner(
        model,
        RelationText.of(planner.relation_names, planner.model.relation_emb),
        planner.embedder,
        planner=planner,
        **common,
    )


def shipped_ranker(graph: Graph, settings: Settings, *, beam: int | None = None) -> RankedPathPlanner | None:
    """The portable ranker shipped with kgdb (`kgdb.models.default`), or None when this install has
    none or it does not fit the graph's embedding model."""
    from kgdb.models.default import shipped_checkpoint

    folder = shipped_checkpoint(RANKER)
    if folder is None:
        return None
    try:
        return load_ranker(graph, settings, str(folder), beam=beam)
    except CheckpointError:  # the graph was embedded with another model
        return None


def relation_path_retriever(
    graph: Graph,
    settings: Settings,
    *,
    checkpoint: str | None = None,
    k: int = 100,
    write: bool = True,
    beam: int | None = None,
    ground_cap: int = 200,
    constrained: bool = True,
    walks: bool = True,
    structural: str | bool | None = None,
    mode: str | None = None,
    lambda1: float | None = None,
    theta: float | None = None,
    planner: PathPlanner | None = None,
    closeness_weight: float | None = None,
) -> RelationPathRetriever:
    """`RelationPathRetriever` with the trained planner for this graph (`NoCheckpointError` when none);
    `constrained`: decode only relation steps that exist from the entities reached so far; `walks`:
    ground as walks (entities may repeat), as the planner's labels are computed.

    `structural`: a structural-reasoner checkpoint name, None = the newest trained on this graph if
    any (else the planner alone), False = the planner alone. `mode` (planner, structural, union,
    rethink), λ1, θ and the planner's `beam` default to the values chosen on the val split and stored
    in that checkpoint (`kgdb train rrp`; the beam by a val sweep, else 3), else rethinking with 0.5 and 0.
    `planner`: a planner used instead of the trained one (the LLM planner, `kgdb.rrp.llm_planner`).
    `closeness_weight` (`answering_rules.weigh_by_answer_closeness`) defaults to `answering.closeness_weight`
    of the checkpoint that chose λ1 and θ (a ranker, else the structural one), else 0."""
    runner = _structural_runner(graph, settings, structural)
    # the checkpoint that chose the answering settings: the structural one, or a ranker, which replaces them
    chose = runner.checkpoint.config if runner is not None and runner.checkpoint else {}
    fallback = None
    # a planner given by the caller (`--planner llm`) answers with rethinking as the structural checkpoint tuned it
    if planner is None:
        planner, chose, fallback = _trained_planner(graph, settings, checkpoint, beam, constrained, chose)
    tuned = chose.get("rethinking") or {}
    if closeness_weight is None:
        closeness_weight = float((chose.get("answering") or {}).get("closeness_weight", 0.0))
    retriever = RelationPathRetriever(
        graph,
        settings,
        planner=planner,
        k=k,
        write=write,
        ground_cap=ground_cap,
        walks=walks,
        structural=runner,
        closeness_weight=closeness_weight,
        mode=chosen_mode(tuned) if mode is None else mode,
        lambda1=tuned.get("lambda1", 0.5) if lambda1 is None else lambda1,
        theta=tuned.get("theta", 0.0) if theta is None else theta,
    )
    retriever.notes += ([fallback] if fallback else []) + _trained_elsewhere(
        graph, [planner.checkpoint, runner.checkpoint if runner else None]
    )
    return retriever


def _structural_runner(graph: Graph, settings: Settings, structural: str | bool | None) -> StructuralRunner | None:
    """The structural reasoner `relation_path_retriever` was asked for: the named one, the newest of
    this graph's if any (None), or none (False)."""
    if structural is False:
        return None
    try:
        return load_structural(graph, settings, structural if isinstance(structural, str) else None)
    except NoCheckpointError:
        if structural:
            raise
        return None


def _trained_planner(
    graph: Graph, settings: Settings, checkpoint: str | None, beam: int | None, constrained: bool, chose: dict
) -> tuple[PathPlanner, dict, str | None]:
    """(the planner of this graph, the config that chose the answering settings, a note when it is the
    shipped one): a ranker (which brings its tuned settings), else the trained beam planner, else the
    portable ranker shipped with kgdb, if it fits."""
    ranker = load_ranker(graph, settings, checkpoint, beam=beam)
    if ranker is not None:
        return ranker, cast(Checkpoint, ranker.checkpoint).config, None  # a loaded ranker names its checkpoint
    try:
        tuned_beam = int((chose.get("rethinking") or {}).get("beam", 3))
        return (
            load_planner(
                graph, settings, checkpoint, beam=tuned_beam if beam is None else beam, constrained=constrained
            ),
            chose,
            None,
        )
    except NoCheckpointError:  # nothing trained on this graph: the portable ranker shipped with kgdb, if it fits
        if checkpoint or (ranker := shipped_ranker(graph, settings, beam=beam)) is None:
            raise
    shipped = cast(Checkpoint, ranker.checkpoint)  # a loaded ranker names its checkpoint
    note = (
        f"no RRP planner or ranker in {settings.checkpoints_dir} was trained on this graph, so the portable rrp-ranker "
        f"shipped with kgdb ranked the relation paths (trained on {shipped.config.get('dataset', '?')}); "
        "`kgdb train rrp-ranker` trains one for this graph"
    )
    return ranker, shipped.config, note


def _trained_elsewhere(graph: Graph, checkpoints: list) -> list[str]:
    """A note for each checkpoint trained on another graph than this one."""
    fingerprint, info = graph_fingerprint(graph)
    data = data_fingerprint(info)
    notes = []
    for ckpt in checkpoints:
        trained_on = ckpt.config.get("graph_fingerprint") if ckpt else None
        if trained_on and trained_on_this_data(ckpt.config, fingerprint, data) is False:
            notes.append(
                f"{ckpt.name} was trained on another graph ({trained_on[:12]}), not this one ({fingerprint[:12]})"
            )
    return notes
