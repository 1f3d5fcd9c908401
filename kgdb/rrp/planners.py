"""Relation-path planners: what proposes the relation paths a question's answers lie at the end of,
before Cypher grounds them. `CosinePathPlanner` is the untrained baseline (a beam over the question's
cosine with relation texts), `TrainedPathPlanner` RRP's trained planner (`kgdb train rrp-planner`)
with graph-constrained decoding; both are `kgdb.rrp.plan.PathPlanner`s. The path ranker
(`kgdb.rrp.path_ranker.RankedPathPlanner`) and the LLM planner (`kgdb.rrp.llm_planner`) are too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

import numpy as np

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.embeddings import get_embedder
from kgdb.errors import InputError
from kgdb.limits import RRP_STEP_SCAN
from kgdb.models.checkpoints import Checkpoint, CheckpointError, check_compatible, checkpoint_for_graph, find_checkpoint
from kgdb.private_files import make_private, private_dir
from kgdb.reading import QuestionReading, Topics
from kgdb.rrp.plan import PathPlanner, Plan, PlannedPath, RelationPath, names_of
from kgdb.scoring.path_tokens import step_of, text_features, token_of
from kgdb.scoring.weights import read_arrays

if TYPE_CHECKING:
    import torch  # imported where a trained planner runs: answering with the portable ranker needs none


def walk(anchor: str, triples) -> tuple[list[str], list[int]]:
    """Entity sequence and step directions of a grounded path (triples are (eid, head, rel, tail))."""
    nodes, dirs = [anchor], []
    for _, head, _, tail in triples:
        forward = head == nodes[-1]
        nodes.append(tail if forward else head)
        dirs.append(1 if forward else -1)
    return nodes, dirs


class CosinePathPlanner(PathPlanner):
    """Beam search over relation sequences leaving the topic entities, scored by the cosine of the
    question (topic names removed) and the relation-path text. Untrained: the baseline a trained
    planner (RRP) replaces through the same `plan()` call. Its plan reads the whole question (the
    structural reasoner too)."""

    name = "cosine"

    def __init__(self, embedder, *, max_hops: int = 2, beam: int = 5, ground_cap: int = 200):
        self.embedder, self.max_hops, self.beam, self.ground_cap = embedder, max_hops, beam, ground_cap

    def plan(self, graph: Graph, reading: QuestionReading, topics: Topics, names: Mapping[str, str]) -> Plan:
        named = names_of(topics, names)
        return Plan(topics, named, tuple(self.paths(graph, reading, topics.ids, list(named))), reading.plain())

    def paths(
        self, graph: Graph, reading: QuestionReading, topics: list[str], topic_names: list[str]
    ) -> list[PlannedPath]:
        from kgdb.cypher.paths import ground_relation_path, relations_around
        from kgdb.embeddings import relation_text

        q = reading.encoded(self.embedder.encode, topic_names).vector
        frontier: list[tuple[tuple[str, ...], list[str]]] = [((), list(topics))]
        kept: list[PlannedPath] = []
        for _ in range(self.max_hops):
            steps = [
                (rels + (rel,))
                for rels, ends in frontier
                for rel in sorted({r for r, _ in relations_around(graph, ends)})
            ]
            steps = list(dict.fromkeys(steps))
            if not steps:
                break
            sims = self.embedder.encode([" ; ".join(relation_text(r) for r in rels) for rels in steps]) @ q
            order = np.argsort(-sims, kind="stable")[: self.beam]
            kept += [PlannedPath(steps[i], float(sims[i])) for i in order]
            frontier = []
            for i in order:
                ends = {
                    walk(a, path)[0][-1]
                    for a in topics
                    for path in ground_relation_path(graph, a, list(steps[i]), cap=self.ground_cap)
                }
                frontier.append((steps[i], sorted(ends)))
        return sorted(kept, key=lambda p: (-p.score, len(p.relations), p.relations))[: self.beam]


PLANNER = "rrp-planner"


class TrainedPathPlanner(PathPlanner):
    """`plan()` with a trained `kgdb.rrp.models.planner.PathDecoder`: beam search over (relation,
    direction) steps given the question (topic names removed); scores are path probabilities."""

    name = PLANNER

    def __init__(
        self,
        model,
        relation_names: list[str],
        embedder,
        *,
        beam: int = 3,
        checkpoint: Checkpoint | None = None,
        constrained: bool = True,
        frontier_cap: int = 200,
        step_scan: int | None = RRP_STEP_SCAN,
    ):
        self.model, self.relation_names, self.embedder, self.beam = model.eval(), relation_names, embedder, beam
        self.checkpoint, self.constrained, self.frontier_cap, self.step_scan = (
            checkpoint,
            constrained,
            frontier_cap,
            step_scan,
        )
        self.relation_index = {r: i for i, r in enumerate(relation_names)}
        self._table: torch.Tensor | None = None

    def table(self) -> torch.Tensor:
        """The decoder's token table (every relation projected), computed once: the weights are fixed here."""
        import torch

        if self._table is None:
            with torch.no_grad():
                self._table = self.model.tokens()
        return self._table

    def _allowed(self, graph: Graph, topics: list[str]):
        """Graph-constrained decoding: after a prefix, only the (relation, direction) steps that leave
        the entities the prefix reaches; one `beam_step.cypher` call per decoding step answers the
        whole beam (one query per prefix made the planner most of the latency)."""
        from kgdb.cypher.paths import beam_step

        reached: dict[tuple[int, ...], tuple[list[str], list[int]]] = {}

        def allowed(prefixes: list[tuple[int, ...]]) -> list[list[int]]:
            new = [p for p in dict.fromkeys(prefixes) if p not in reached]
            asks: list[tuple[list[str], str | None, int]] = []
            keys: list[tuple[int, ...]] = []
            for p in new:
                if not p:
                    asks.append((list(topics), None, 0))
                    keys.append(p)
                    continue
                parent = reached.get(p[:-1], ([], []))[0]
                if not parent:  # nothing to step from (a prefix the beam never checked)
                    reached[p] = ([], [])
                    continue
                r, d = step_of(p[-1])
                asks.append((parent, self.relation_names[r], d))
                keys.append(p)
            for p, (ids, steps) in zip(
                keys, beam_step(graph, asks, cap=self.frontier_cap, step_scan=self.step_scan) if asks else []
            ):
                reached[p] = (ids, [token_of(self.relation_index[r], d) for r, d in steps if r in self.relation_index])
            return [reached[p][1] for p in prefixes]

        return allowed

    def plan(self, graph: Graph, reading: QuestionReading, topics: Topics, names: Mapping[str, str]) -> Plan:
        named = names_of(topics, names)
        q = reading.encoded(self.embedder.encode, named)
        return Plan(topics, named, tuple(self.plan_encoded(graph, q.text, q.vector, topics.ids)), q.text, q.vector)

    def path_probability(self, plan: Plan, paths: list[RelationPath]) -> list[float]:
        """P(γ | q) of given relation paths (teacher-forced); 0 for a path naming an unknown relation."""
        text = plan.text
        q_emb = plan.text_emb if plan.text_emb is not None else self.embedder.encode([text])[0]
        return self.probability(text, q_emb, paths)

    def probability(self, text: str, q_emb: np.ndarray, paths: list[RelationPath]) -> list[float]:
        """`path_probability` of the question read as `text` with vector `q_emb`."""
        import torch

        from kgdb.rrp.models.planner import pack_questions

        known = [
            all(r in self.relation_index for r in rels) and 0 < len(rels) <= self.model.cfg.max_hops
            for rels, _ in paths
        ]
        rows = [
            [token_of(self.relation_index[r], d) for r, d in zip(rels, dirs)] + [0]
            for (rels, dirs), ok in zip(paths, known)
            if ok
        ]
        if not rows:
            return [0.0] * len(paths)
        width = max(len(r) for r in rows)
        tokens = torch.full((len(rows), width), -1, dtype=torch.long)
        for i, r in enumerate(rows):
            tokens[i, : len(r)] = torch.tensor(r)
        q = torch.from_numpy(np.asarray(q_emb, np.float32))[None].expand(len(rows), -1)
        words, offsets = pack_questions([text_features(text, self.model.cfg.buckets)] * len(rows))
        with torch.no_grad():
            probs = iter(self.model.log_prob(q, words, offsets, tokens, table=self.table()).exp().tolist())
        return [next(probs) if ok else 0.0 for ok in known]

    def plan_encoded(self, graph: Graph, text: str, q_emb: np.ndarray, topics: list[str]) -> list[PlannedPath]:
        import torch

        q = torch.from_numpy(np.asarray(q_emb, np.float32))
        words = torch.tensor(text_features(text, self.model.cfg.buckets))
        out = []
        allowed = self._allowed(graph, topics) if self.constrained else None
        for tokens, logp in self.model.beam_search(q, words, self.beam, allowed, table=self.table()):
            steps = [step_of(t) for t in tokens]
            out.append(
                PlannedPath(
                    tuple(self.relation_names[r] for r, _ in steps), float(np.exp(logp)), tuple(d for _, d in steps)
                )
            )
        return out


def load_relation_model(
    graph: Graph, settings: Settings, checkpoint: str | None, kind: str, build, flag: str, *, arrays: bool = False
):
    """A model over the relation vocabulary (the planner, the structural reasoner) and its checkpoint:
    the named one, else the newest of `kind` trained on this graph (`NoCheckpointError`).
    `build(model_config_dict, weights)` makes the module the weights are loaded into (from the
    weights' `relation_emb`, or, for a model that stores none, from the graph's table); with
    `arrays`, the weights are numpy arrays and `build` makes a model that holds them (no torch)."""
    from kgdb.cypher.tables import graph_fingerprint as fingerprint_of
    from kgdb.models.checkpoints import WEIGHTS, read_weights

    fingerprint, info = fingerprint_of(graph)
    ckpt = (
        find_checkpoint(checkpoint, settings.checkpoints_dir)
        if checkpoint
        else checkpoint_for_graph(settings.checkpoints_dir, kind, fingerprint)
    )
    if ckpt.config.get("retriever") != kind:
        raise InputError(f"checkpoint {ckpt.name} holds a {ckpt.config.get('retriever')} model, not {kind}", path=flag)
    check_compatible(ckpt, info.get("model") or settings.embedding_model, int(ckpt.config.get("embedding_dim") or 0))
    state = read_arrays(ckpt.path / WEIGHTS) if arrays else read_weights(ckpt.path / WEIGHTS)
    try:
        model = build(ckpt.config["model"], state)
        if not arrays:
            model.load_state_dict(state)
    except (KeyError, TypeError, RuntimeError) as exc:  # written by another version of the model, or by hand
        raise CheckpointError(
            f"checkpoint {ckpt.path} does not hold a {kind} model this kgdb can load ({type(exc).__name__}: "
            f"{str(exc)[:200]}); train it again with `kgdb train {kind}`, or move it out of "
            f"{settings.checkpoints_dir}"
        ) from None
    return model, ckpt


def save_relation_model(out, model, kind: str, config: dict) -> None:
    """`model.safetensors` + `config.json` of a relation-vocabulary model (`kind` recorded in both)."""
    from safetensors.torch import save_file

    from kgdb.config import dump_json
    from kgdb.models.checkpoints import CONFIG, WEIGHTS, kgdb_version

    private_dir(out)
    save_file(
        {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
        str(out / WEIGHTS),
        metadata={"retriever": kind},
    )
    make_private(out / WEIGHTS)
    dump_json({"retriever": kind, "kgdb_version": kgdb_version(), "model": model.cfg.to_json(), **config}, out / CONFIG)


def load_planner(
    graph: Graph, settings: Settings, checkpoint: str | None = None, *, beam: int = 3, constrained: bool = True
) -> TrainedPathPlanner:
    """The named planner checkpoint, else the newest trained on this graph (`NoCheckpointError`)."""

    def build(cfg: dict, state: dict):
        from kgdb.rrp.models.planner import PathDecoder, PlannerConfig  # torch, once a checkpoint was found

        return PathDecoder(PlannerConfig(**cfg), state["relation_emb"])

    model, ckpt = load_relation_model(graph, settings, checkpoint, PLANNER, build, "--checkpoint")
    cfg = ckpt.config
    embedder = get_embedder(
        cfg.get("embedding_model") or settings.embedding_model, settings.device, settings.embedding_batch_size
    )
    return TrainedPathPlanner(
        model,
        list(cfg["relation_names"]),
        embedder,
        beam=beam,
        checkpoint=ckpt,
        constrained=constrained,
        step_scan=settings.rrp_step_scan,
    )
