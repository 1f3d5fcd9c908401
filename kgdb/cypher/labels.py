"""LLM label selections in the graph: what `kgdb label` writes and `kgdb train --labels` reads.

Model (see `label_write.cypher`): `(:Question)-[:LABELLED]->(:Labelling)-[:SELECTED]->(:LabelPath)`,
one `Labelling` per (question, method, model, prompt version) keyed by `labelling_key`. Relation
targeting (`rapl-relations`) selects relations, not paths: its `Labelling` holds them as the lists
`relations` / `directions` (+1 topic is the head, -1 the tail) beside the `topics` they were read from. Labels are
bookkeeping nodes, never edges between two `:Entity` nodes, so they stay out of triple counts.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

from kgdb.cypher import Graph
from kgdb.errors import KgdbError

FINAL = ("ok", "none", "no_candidates")  # statuses a rerun skips; "failed" is asked again
MAX_REPLY_CHARS = 4000


def labelling_key(qid: str, method: str, model: str, prompt_version: str) -> str:
    return f"{qid}|{method}|{model}|{prompt_version}"


@dataclass
class LabelPathRow:
    """One selected path: its triples as entity ids and relation types, in traversal order."""

    rank: int
    candidate: int  # 1-based number of the prompt line it came from
    kind: str  # "path", "topic" or "answer"
    text: str
    start: str
    end: str
    heads: list[str]
    relations: list[str]
    tails: list[str]


@dataclass
class LabelRelationRow:
    """One selected relation of relation targeting (R_*)."""

    rank: int
    name: str
    direction: int  # +1: a topic is the head of its triples; -1: the tail


@dataclass
class Labelling:
    qid: str
    method: str
    model: str
    prompt_version: str
    status: str  # ok | none | no_candidates | failed
    candidates: int = 0
    raw_candidates: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    reply: str = ""
    paths: list[LabelPathRow] = field(default_factory=list)
    relations: list[LabelRelationRow] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)  # entity ids the candidate relations were read from
    ignored: int = 0  # reply items that named no candidate (out of range, unknown relation)

    @property
    def key(self) -> str:
        return labelling_key(self.qid, self.method, self.model, self.prompt_version)


def write_labelling(graph: Graph, lab: Labelling) -> int:
    """Store (or replace) one question's labelling; returns the number of label paths written
    (relations are properties of the `Labelling`, always written with it)."""
    # the labelling's fields as they are, but the reply bounded and relation targets as two parallel lists
    params = asdict(lab) | {
        "key": lab.key,
        "reply": (lab.reply or "")[:MAX_REPLY_CHARS],
        "relations": [r.name for r in lab.relations],
        "directions": [r.direction for r in lab.relations],
    }
    row = graph.single("label_write", **params)
    if row is None or row["written"] != len(lab.paths):
        raise KgdbError(
            f"labelling {lab.key}: wrote {0 if row is None else row['written']} of {len(lab.paths)} label paths"
        )
    return int(row["written"])


def labelled_qids(graph: Graph, qids: list[str], method: str, model: str, prompt_version: str) -> dict[str, str]:
    """qid -> final status for the questions this method/model/prompt version already labelled."""
    rows = graph.run("label_done", qids=list(qids), method=method, model=model, prompt_version=prompt_version)
    return {r["qid"]: r["status"] for r in rows}


@dataclass
class TrainingLabels:
    """Per question, the label paths as (head Entity.idx, Relation.idx, tail Entity.idx) lists."""

    paths: dict[str, list[list[tuple[int, int, int]]]]
    digest: str  # changes whenever the stored labels of these questions change (cache key part)


def training_paths(graph: Graph, qids: list[str], method: str) -> TrainingLabels:
    rows = graph.run("label_training_paths", qids=list(qids), method=method)
    paths: dict[str, list[list[tuple[int, int, int]]]] = {}
    for r in rows:
        if any(x is None for x in (*r["heads"], *r["relations"], *r["tails"])):
            continue  # an entity or relation deleted since labelling: the path no longer exists
        paths.setdefault(r["qid"], []).append(list(zip(r["heads"], r["relations"], r["tails"])))
    blob = json.dumps(
        [[r["qid"], r["labelling"], r["created"], r["rank"], r["heads"], r["relations"], r["tails"]] for r in rows]
    )
    return TrainingLabels(paths, hashlib.sha256(blob.encode()).hexdigest()[:16])


@dataclass
class TrainingRelations:
    """Per question, R_* as (Relation.idx, direction) pairs from its newest `ok` relation targeting."""

    targets: dict[str, list[tuple[int, int]]]
    digest: str  # changes whenever the stored R_* of these questions change (cache key part)
    unknown: int = 0  # stored relations no longer in the graph (skipped)


def training_relations(graph: Graph, qids: list[str], method: str) -> TrainingRelations:
    rows = graph.run("label_training_relations", qids=list(qids), method=method)
    targets: dict[str, list[tuple[int, int]]] = {}
    unknown = 0
    for r in rows:
        pairs = [(int(i), int(d)) for i, d in zip(r["relations"], r["directions"]) if i is not None]
        unknown += len(r["relations"]) - len(pairs)
        targets[r["qid"]] = pairs
    blob = json.dumps([[r["qid"], r["labelling"], r["created"], r["relations"], r["directions"]] for r in rows])
    return TrainingRelations(targets, hashlib.sha256(blob.encode()).hexdigest()[:16], unknown)
