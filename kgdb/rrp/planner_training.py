"""Training RRP's relation-path planner: labels (the shortest relation paths from a topic to the
answers, computed in numpy on the whole graph) and the question texts the planner and the structural
reasoner read, then the decoder's loop (`kgdb.rrp.training.planner`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.data.questions import QuestionRecord
from kgdb.embeddings import Embedder
from kgdb.errors import KgdbError
from kgdb.models.base import TensorTables, resolve_device
from kgdb.models.checkpoints import find_checkpoint
from kgdb.pipeline.vectors import entity_vectors
from kgdb.rrp.options import PlannerOptions
from kgdb.rrp.planners import PLANNER, save_relation_model
from kgdb.scoring.path_tokens import text_features, token_of
from kgdb.training.events import TrainEvents

if TYPE_CHECKING:
    from kgdb.data.relation_paths import TripleArrays


@dataclass
class RelationVocabulary:
    """What the relation-path models (planner, structural reasoner) train from: the graph's relation
    embedding table, its relation names, all its triples as arrays (labels are computed on the whole
    graph, not a fetched subgraph) and the question encoder."""

    fingerprint: str
    graph_data: str  # kgdb.pipeline.vectors.data_fingerprint
    tables: TensorTables  # the relation table (no entity rows)
    model_name: str
    relation_names: list[str]
    relation_index: dict[str, int]
    arrays: TripleArrays
    embedder: Embedder

    def checkpoint_config(self, datasets: str, questions: list[Path]) -> dict:
        """What the config.json of a model trained from it records of the graph and the question files."""
        return {
            "relation_names": self.relation_names,
            "embedding_model": self.model_name,
            "embedding_dim": self.tables.dim,
            "graph_fingerprint": self.fingerprint,
            "graph_data": self.graph_data,
            "dataset": datasets,
            "questions": [str(p) for p in questions],
        }


def relation_vocabulary(graph: Graph, settings: Settings) -> RelationVocabulary:
    from kgdb.cypher.paths import graph_triples
    from kgdb.data.relation_paths import TripleArrays

    vectors, model_name = entity_vectors(graph, settings)
    names = vectors.tables.relation_names
    return RelationVocabulary(
        vectors.fingerprint,
        vectors.data_fingerprint,
        vectors.relation_tables(resolve_device(settings.device)),
        model_name,
        names,
        {r: i for i, r in enumerate(names)},
        TripleArrays.from_triples(graph_triples(graph), names),
        vectors.embedder,
    )


def question_texts(graph: Graph, records: list[QuestionRecord], embed) -> tuple[list[str], np.ndarray, set[str]]:
    """What the relation-path models read of each question: its text without the gold topics' names
    and that text's sentence embedding (`embed(texts)`); and the topics that are entities of the graph."""
    from kgdb.cypher.paths import entity_names
    from kgdb.reading.words import strip_mentions

    names = {i: e.name for i, e in entity_names(graph, [t for q in records for t in q.topics]).items()}
    texts = [strip_mentions(q.text, [names.get(t, t) for t in q.topics]) for q in records]
    return texts, embed(texts), set(names)


def labelled_questions(graph: Graph, records: list[QuestionRecord], arrays, embed, max_hops: int, best_f1: bool = True):
    """Per question: (record, text without the topic names, its embedding, Eq. 2's Γ*): the shortest
    relation paths from a topic to the answers (exact hop count when the question file states it,
    else up to `max_hops`; with `best_f1` only those whose reached entities match the answers best).
    The planner and the structural reasoner learn from the same labels."""
    from kgdb.data.relation_paths import shortest_relation_paths

    texts, embs, _ = question_texts(graph, records, embed)
    for q, text, emb in zip(records, texts, embs):
        paths = shortest_relation_paths(
            arrays,
            q.topics,
            q.answers,
            max_hops=max_hops,
            exact_hops=q.hop if q.hop and q.hop <= max_hops else None,
            best_f1=best_f1,
        )
        yield q, text, np.asarray(emb, np.float32), paths


def planner_examples(
    graph: Graph,
    records: list[QuestionRecord],
    arrays,
    embed,
    buckets: int,
    max_hops: int,
    relation_index: dict[str, int],
    best_f1: bool = True,
):
    """Labelled planner examples of a split (`labelled_questions`), as decoder tokens."""
    from kgdb.rrp.training.planner import PlannerExample

    out, counts = [], {"no_path": 0, "paths": 0}
    for q, text, emb, paths in labelled_questions(graph, records, arrays, embed, max_hops, best_f1):
        tokens = [tuple(token_of(relation_index[r], d) for r, d in p) for p in paths]
        counts["no_path"] += not tokens
        counts["paths"] += len(tokens)
        out.append(PlannerExample(q.id, emb, text_features(text, buckets), tokens))
    return out, counts


def train_planner(
    graph: Graph,
    settings: Settings,
    questions: list[Path],
    options: PlannerOptions | None = None,
    events: TrainEvents | None = None,
    best_f1: bool = True,
):
    """Train the relation-path planner on the train split of every question file together, select on
    their val splits, save `<checkpoints_dir>/<name>/model.safetensors` + `config.json`. `options`
    are `kgdb train rrp-planner`'s (`PlannerOptions`: `hops` is the longest path).

    Labels are computed in numpy on the whole graph's triples (one paged read), so they are not
    limited by a fetched subgraph's radius (MetaQA 3-hop). Returns `(Checkpoint, PlannerResult)`."""
    from kgdb.data.questions import read_questions
    from kgdb.rrp.models.planner import PathDecoder, PlannerConfig
    from kgdb.rrp.training.planner import PlannerTrainConfig, train_planner_model
    from kgdb.training.trainer import prepare_cpu, seed_everything

    opts = options or PlannerOptions()
    events = events or TrainEvents()
    name, max_hops, threads = opts.name, opts.hops, opts.thread_count()
    prepare_cpu(settings.device, threads)
    t0 = time.perf_counter()
    sets = [read_questions(p) for p in questions]
    vocab = relation_vocabulary(graph, settings)
    tables, relation_index, arrays, embedder = vocab.tables, vocab.relation_index, vocab.arrays, vocab.embedder
    model_cfg = PlannerConfig(max_hops=max_hops)
    examples = {}
    for split in ("train", "val"):
        records = [q for qs in sets for q in qs.split(split)]
        examples[split], counts = planner_examples(
            graph, records, arrays, embedder.encode, model_cfg.buckets, max_hops, relation_index, best_f1
        )
        events.message(
            f"{split}: {len(records)} questions labelled, "
            f"{counts['no_path']} without a relation path (topic to answer), "
            f"{counts['paths']} labelled paths"
        )
    data_seconds = time.perf_counter() - t0
    if not any(ex.paths for ex in examples["train"]) or not examples["val"]:
        raise KgdbError("nothing to train on: no training question has a relation path from a topic to an answer")
    cfg = PlannerTrainConfig(lr=opts.lr, max_epochs=opts.max_epochs, patience=opts.patience, seed=opts.seed)
    seed_everything(opts.seed)
    model = PathDecoder(model_cfg, tables.relation.detach().cpu())
    model, result = train_planner_model(model, examples["train"], examples["val"], cfg, events=events)
    datasets = "+".join(qs.dataset for qs in sets)
    out = settings.checkpoints_dir / (name or f"{PLANNER}-{datasets}")
    save_relation_model(
        out,
        model,
        PLANNER,
        {
            **vocab.checkpoint_config(datasets, questions),
            "train": {**cfg.__dict__, "threads": threads},
            "labels": {
                "max_hops": max_hops,
                "best_f1": best_f1,
                "rule": "shortest relation paths topic->answer (exact hop count when the file states it)",
            },
            "data_seconds": round(data_seconds, 2),
            "result": result.to_json(),
            "metrics": {"best_epoch": result.best_epoch, "val_path_hit@1": result.best_val_hit1},
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
    )
    return find_checkpoint(str(out), settings.checkpoints_dir), result
