"""Writes triples into Neo4j following kgdb's data model, idempotently, over Bolt.

Phases: entities, relation nodes, triples, dense idx, embeddings. Each phase only adds what is
missing, so a killed load resumes by running again and a repeated load changes nothing.

Embeddings (`--embeddings eager|lazy|auto`, `EmbeddingMode`): relation texts are always embedded
(a few thousand). Eager embeds every entity name during the load; lazy leaves entity names to be
embedded on first use (`kgdb.pipeline.vectors`) or by `kgdb embed`; auto is eager up to
`AUTO_LAZY_ABOVE` names to embed and lazy above (all in `kgdb.config`).

Why the triples phase is fast: relationships are CREATEd (not MERGEd) in large batches of mixed
types with a dynamic type `$(row.r)`. That is safe because the rows are de-duplicated here and
every (h, r, t) already in the database is subtracted first: for the relationship types that
already hold relationships (count store, free) the existing triples of this load's head
entities are read back and dropped from the rows. Each batch is one transaction, so after a kill
the database holds whole batches only, and the rerun's subtraction skips exactly those.
That needs one loader per database at a time (two concurrent loads of the same triples would
both CREATE them), which the load lease (`kgdb.loaders.lease`) enforces in the database. MERGE with a dynamic type was measured at ~1k rels/s, CREATE at 30-45k/s,
and finding nodes by elementId instead of Entity.id lookups gains another ~1.6x.

No torch here: the embedder is passed in.
"""

from __future__ import annotations

import re
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import AbstractSet, Callable, Iterable, Iterator, Mapping, Protocol, Sequence

import numpy as np

from kgdb.config import EmbeddingMode, resolve_embedding_mode
from kgdb.cypher import Graph
from kgdb.errors import DatabaseError, InputError, KgdbError

MID = re.compile(r"^[mg]\.[0-9a-z_]+$")
# Dates, datetimes, years and numbers: the literal values Freebase stores as tails.
LITERAL = re.compile(
    r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$"
    r"|^-?\d{4}(-\d{2}(-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[-+]\d{2}:?\d{2})?)?)?)?$"
)
# Relationship types kgdb itself writes (runs: SCORED, ABOUT, TOPIC, ANSWER; labels: LABELLED, SELECTED,
# STARTS_AT, ENDS_AT); a source relation with one of these names would be mistaken for bookkeeping
# (and excluded from triple counts, or deleted with a relabelling), so it is refused.
RESERVED_TYPES = frozenset({"SCORED", "ABOUT", "TOPIC", "ANSWER", "LABELLED", "SELECTED", "STARTS_AT", "ENDS_AT"})

Triple = tuple[str, str, str]
ProgressFn = Callable[[str, int, int], None]  # (phase, done, total)

# Texts per encode call: large enough for length-sorted batches, small enough to overlap the
# database write of one chunk with the encoding of the next.
ENCODE_CHUNK = 4096


class TextEncoder(Protocol):
    name: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray: ...


def entity_labels(entity_id: str, has_name: bool, is_literal: bool) -> list[str]:
    if is_literal:
        return ["Entity", "Literal"]
    if MID.match(entity_id) and not has_name:
        return ["Entity", "CVT"]
    return ["Entity"]


@dataclass
class LoadStats:
    """What one load read and wrote; `seconds` per phase."""

    triples_in: int = 0
    triples_created: int = 0
    triples_existing: int = 0
    entities: int = 0
    cvt: int = 0
    literals: int = 0
    relation_types: int = 0
    entity_embeddings: int = 0
    relation_embeddings: int = 0
    embeddings: str = "eager"  # the mode used (auto resolved): eager or lazy
    entity_embeddings_left: int = 0  # entity names left without a vector (lazy: filled on use / `kgdb embed`)
    bad_lines: int = 0
    duplicates_removed: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class EntityRow:
    id: str
    name: str
    labels: list[str]
    named: bool = False  # the source gave a readable name (a later load's name replaces the id)


def entity_rows(
    triples: Sequence[Triple], names: Mapping[str, str], literals: AbstractSet[str] = frozenset()
) -> list[EntityRow]:
    """Every entity of `triples` in id order, with its display name and labels.

    Tails that look like dates or numbers and never occur as heads are literals, as are the ids
    in `literals` (values a source marks as literal, e.g. RDF literals); `m.`/`g.` ids without a
    readable name are CVT nodes.
    """
    heads = {h for h, _, _ in triples}
    ids = sorted(heads | {t for _, _, t in triples})
    rows = []
    for entity_id in ids:
        name = names.get(entity_id)
        literal = entity_id in literals or (entity_id not in heads and bool(LITERAL.match(entity_id)))
        rows.append(
            EntityRow(
                entity_id,
                name if name is not None else entity_id,
                entity_labels(entity_id, name is not None, literal),
                named=name is not None and name != entity_id,
            )
        )
    return rows


# Relationship types a store can hold, by format family: record formats keep a type id in 16 bits
# ("Record id 65536 is out of range"), so Community's only format (aligned) stops at 65,536.
STORE_TYPE_LIMITS = {"record-aligned": 2**16, "record-standard": 2**16, "record-high_limit": 2**24, "block": 2**30}
NEW_STORE_TYPE_LIMIT = STORE_TYPE_LIMITS["record-aligned"]  # what neo4j-admin import creates on Community


def check_relations(
    relations: Iterable[str],
    type_limit: int | None = NEW_STORE_TYPE_LIMIT,
    existing: AbstractSet[str] = frozenset(),
    store: str = "a new record-format",
) -> None:
    """Refuse reserved names, and more relationship types than the store can hold.

    The limit is checked before anything is written: Neo4j itself fails only when the type after
    the last one is created, deep in a load, leaving it half done. `existing`: the types the
    database already has tokens for; kgdb's own types count too.
    """
    names = set(relations)
    bad = sorted(names & RESERVED_TYPES)
    if bad:
        raise InputError(f"relation name(s) {', '.join(bad)} are reserved for kgdb's own relationships; rename them")
    needed = len(names | RESERVED_TYPES | existing)
    if type_limit is not None and needed > type_limit:
        raise InputError(
            f"this load has {len(names):,} distinct relation names; with the {len(existing | RESERVED_TYPES):,} "
            f"relationship types the database already has or kgdb adds that makes {needed:,}, more than the "
            f"{type_limit:,} {store} store can hold: load fewer relations (--relation-prefix)"
        )


def relation_type_room(graph: Graph) -> tuple[int | None, set[str], str]:
    """(the relationship-type limit of this database's store format or None when unknown, the types
    it already has tokens for, the format's name), read from the server."""
    try:
        row = graph.single("load_relation_type_tokens")
        existing = set(row["types"] if row else [])
    except DatabaseError:  # db.stats.retrieve is for admins
        existing = set((graph.single("load_relation_types_in_use") or {}).get("types") or [])
    try:
        store = (graph.single("load_store_format", database=graph.database) or {}).get("store") or ""
    except DatabaseError:
        store = ""
    family = next((f for f in STORE_TYPE_LIMITS if store.startswith(f)), None)
    return (STORE_TYPE_LIMITS[family] if family else None), existing, store or "unknown"


def _noop(phase: str, done: int, total: int) -> None:
    pass


def write_graph(
    graph: Graph,
    triples: Sequence[Triple],
    names: Mapping[str, str] | None = None,
    *,
    embedder: TextEncoder | None = None,
    batch_size: int = 10_000,
    progress: ProgressFn = _noop,
    literals: AbstractSet[str] = frozenset(),
    break_lease: bool = False,
    dedupe: bool = False,
    log: Callable[[str], None] = lambda _msg: None,
    embeddings: EmbeddingMode | str = EmbeddingMode.eager,
    relation_type_limit: int | None = None,
) -> LoadStats:
    """Load `triples` (ids already normalised) with optional readable `names` for ids.

    Identical triples are stored once; different relations between the same pair stay distinct.
    Safe to rerun after an interruption: the result equals one uninterrupted load. Holds the load
    lease throughout; `dedupe` first removes duplicate triples an earlier concurrent load left.
    `embeddings` says when entity names are embedded (`EmbeddingMode`; needs `embedder`).
    `relation_type_limit` replaces the limit read from the server's store format (tests).
    """
    from kgdb.cypher.schema import init_schema
    from kgdb.loaders.lease import load_lease, remove_duplicate_triples

    embeddings = EmbeddingMode(embeddings)  # a bad value fails before the lease is taken
    limit, existing, store = relation_type_room(graph)
    check_relations({r for _, r, _ in triples}, relation_type_limit or limit, existing, f"the database's {store}")

    # Constraints first: MERGE on Entity.id is only fast with the uniqueness index behind it, and
    # the lease relies on the KgdbMeta.key constraint.
    init_schema(graph, embedder.name if embedder else None, embedder.dim if embedder else None)
    with load_lease(graph, break_lease=break_lease, log=log):
        removed = 0
        if dedupe:
            t0 = time.perf_counter()
            removed = remove_duplicate_triples(graph)
            dedupe_secs = time.perf_counter() - t0
        stats = _write_locked(graph, triples, names, embedder, batch_size, progress, literals, embeddings)
        if dedupe:
            stats.duplicates_removed = removed
            stats.seconds = {"dedupe": dedupe_secs, **stats.seconds}
        return stats


def _write_locked(
    graph: Graph,
    triples: Sequence[Triple],
    names: Mapping[str, str] | None,
    embedder: TextEncoder | None,
    batch_size: int,
    progress: ProgressFn,
    literals: AbstractSet[str],
    embeddings: EmbeddingMode = EmbeddingMode.eager,
) -> LoadStats:
    from kgdb.embeddings import relation_text  # pure string helper (embeddings.py imports torch lazily)

    stats = LoadStats()
    names = names or {}
    unique = sorted(set(triples))
    stats.triples_in = len(unique)
    relations = sorted({r for _, r, _ in unique})  # checked by write_graph before anything was written
    stats.relation_types = len(relations)

    t0 = time.perf_counter()
    rows = entity_rows(unique, names, literals)
    stats.entities = len(rows)
    stats.cvt = sum("CVT" in r.labels for r in rows)
    stats.literals = sum("Literal" in r.labels for r in rows)
    element: dict[str, str] = {}
    progress("entities", 0, len(rows))
    for batch in graph.iter_batches([asdict(r) for r in rows], batch_size):
        element.update((r["id"], r["element"]) for r in graph.run("load_entities", rows=batch))
        progress("entities", len(element), len(rows))
    stats.seconds["entities"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    graph.run("load_relations", rows=[{"name": r, "text": relation_text(r)} for r in relations])
    stats.seconds["relations"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    todo = _missing_triples(graph, unique, relations, batch_size)
    stats.triples_existing = len(unique) - len(todo)
    done = stats.triples_existing
    progress("triples", done, len(unique))
    for batch in graph.iter_batches(todo, batch_size):
        row = graph.single("load_triples", rows=[{"h": element[h], "r": r, "t": element[t]} for h, r, t in batch])
        if row is None or row["created"] != len(batch):
            raise DatabaseError(
                f"a triples batch created {row and row['created']} of {len(batch)} relationships: "
                "entities vanished during the load (is another process writing?); run the load again"
            )
        stats.triples_created += len(batch)
        done += len(batch)
        progress("triples", done, len(unique))
    stats.seconds["triples"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    assign_idx(graph, batch_size)
    stats.seconds["idx"] = time.perf_counter() - t0

    if embedder is not None:
        t0 = time.perf_counter()
        left = missing_entity_embeddings(graph)
        mode = resolve_embedding_mode(embeddings, left)
        stats.embeddings = mode.value
        kinds = ("entity", "relation") if mode is EmbeddingMode.eager else ("relation",)
        embedded = embed_missing(graph, embedder, progress=progress, kinds=kinds)
        stats.entity_embeddings, stats.relation_embeddings = embedded.get("entity", 0), embedded["relation"]
        stats.entity_embeddings_left = left - stats.entity_embeddings
        stats.seconds["embeddings"] = time.perf_counter() - t0
    return stats


def _missing_triples(graph: Graph, unique: list[Triple], relations: list[str], batch_size: int) -> list[Triple]:
    """`unique` minus the triples already in the database (read back only where some can exist)."""
    counts = {r["type"]: r["count"] for r in graph.run("load_relationship_counts", types=relations)}
    occupied = [r for r in relations if counts.get(r, 0) > 0]
    if not occupied:
        return unique
    occupied_set = set(occupied)
    heads = sorted({h for h, r, _ in unique if r in occupied_set})
    existing: set[Triple] = set()
    for batch in graph.iter_batches(heads, batch_size):
        for row in graph.run("load_existing_triples", heads=batch, types=occupied):
            existing.add((row["h"], row["r"], row["t"]))
    return [t for t in unique if t not in existing]


def assign_idx(graph: Graph, batch_size: int = 10_000) -> None:
    """Give every Entity and Relation without one a dense idx, continuing after the largest.

    New nodes are numbered in key order; an interrupted run continues with the same numbers.
    """
    for kind in ("entity", "relation"):
        row = graph.single(f"load_{kind}_missing_idx")
        if row is None:
            raise DatabaseError(f"query load_{kind}_missing_idx returned no row")
        start, keys = row["next"], row["keys"]
        rows = [{"key": key, "idx": start + i} for i, key in enumerate(keys)]
        for batch in graph.iter_batches(rows, batch_size):
            graph.run(f"load_{kind}_set_idx", rows=batch)


def iter_encoded(embedder: TextEncoder, texts: Iterable[str]) -> Iterator[tuple[list[str], np.ndarray]]:
    """(distinct texts, their unit vectors) in chunks, longest texts first.

    Each distinct text is encoded once, and similar lengths share a padded batch.
    """
    distinct = sorted(set(texts), key=lambda s: (-len(s), s))
    for start in range(0, len(distinct), ENCODE_CHUNK):
        chunk = distinct[start : start + ENCODE_CHUNK]
        yield chunk, embedder.encode(chunk)


def missing_entity_embeddings(graph: Graph) -> int:
    """How many entity names have no vector yet (CVT nodes never get one)."""
    return int((graph.single("entity_missing_count") or {}).get("missing") or 0)


ENTITY_PAGE = 100_000  # idx per page of entities to embed: memory stays flat however large the graph


def embed_missing(
    graph: Graph,
    embedder: TextEncoder,
    batch_size: int = 2_000,
    progress: ProgressFn = _noop,
    kinds: Sequence[str] = ("entity", "relation"),
    scope: Sequence[int] | None = None,
) -> dict[str, int]:
    """Embed the names of entities and the texts of relations that have no vector yet; returns the
    vectors written per kind. Entities are read in idx pages and written only where still missing
    (entity_set_missing_embeddings.cypher), so a killed run resumes where it stopped, runs next to
    retrievals that fill vectors on use, and a rerun writes 0. `scope`: only these entity idx.

    The database write of one chunk overlaps the encoding of the next.
    """
    counts: dict[str, int] = {}
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgdb-embed-write") as pool:
        for kind in kinds:
            if kind == "entity":
                counts[kind] = _embed_entities(graph, embedder, batch_size, progress, pool, scope)
                continue
            todo = graph.run(f"load_{kind}_missing_embeddings")
            if any(r["idx"] is None for r in todo):
                raise KgdbError(f"some {kind} nodes have no idx; run the load again to finish it")
            phase = f"{kind} embeddings"
            progress(phase, 0, len(todo))
            futures = _encode_and_write(
                embedder,
                todo,
                pool,
                lambda rows: _write_embeddings(graph, kind, rows, batch_size),
                lambda n: progress(phase, n, len(todo)),
            )
            counts[kind] = sum(f.result() for f in futures)
    return counts


def _embed_entities(graph: Graph, embedder: TextEncoder, batch_size: int, progress: ProgressFn, pool, scope) -> int:
    """Entity names without a vector, page by idx page (all of them, or those in `scope`)."""
    from kgdb.cypher.tables import write_missing_rows

    info = graph.single("entity_missing_count") or {}
    total = int(info.get("missing") or 0)
    scope_list = sorted({int(i) for i in scope}) if scope is not None else None
    if scope_list is not None:
        total = min(total, len(scope_list))
    phase = "entity embeddings"
    progress(phase, 0, total)
    if not total:
        return 0
    seen = 0
    futures: list[Future] = []
    if info.get("min_idx") is None:  # only entities of an unfinished load (no idx yet): the next load numbers them
        return 0
    lo, hi = int(info["min_idx"]), int(info["max_idx"]) + 1
    if scope_list:
        lo, hi = max(lo, scope_list[0]), min(hi, scope_list[-1] + 1)
    for start in range(lo, hi, ENTITY_PAGE):
        stop = start + ENTITY_PAGE
        page_scope = None if scope_list is None else [i for i in scope_list if start <= i < stop]
        if page_scope == []:
            continue
        todo = graph.run("entity_missing_embeddings_page", start=start, stop=stop, scope=page_scope)

        def report(n: int, base: int = seen) -> None:
            progress(phase, min(base + n, total), total)

        futures += _encode_and_write(
            embedder,
            todo,
            pool,
            lambda rows: len(write_missing_rows(graph, rows, batch_size)),
            report,
        )
        seen += len(todo)
    return sum(f.result() for f in futures)


def _encode_and_write(embedder: TextEncoder, todo: list[dict], pool, write, report) -> list[Future]:
    """Encode the texts of `todo` rows ({idx, text}) chunk by chunk, each chunk written by `write` in
    the background while the next one is encoded; the futures give the vectors written."""
    by_text: dict[str, list[int]] = {}
    for r in todo:
        by_text.setdefault(r["text"], []).append(r["idx"])
    pending: list[Future] = []
    done = 0
    for chunk, vectors in iter_encoded(embedder, by_text):
        rows = [{"idx": idx, "embedding": vec.tolist()} for text, vec in zip(chunk, vectors) for idx in by_text[text]]
        pending.append(pool.submit(write, rows))
        _raise_finished(pending)
        done += len(rows)
        report(done)
    return pending


def _write_embeddings(graph: Graph, kind: str, rows: list[dict], batch_size: int) -> int:
    for batch in graph.iter_batches(rows, batch_size):
        graph.run(f"load_{kind}_set_embeddings", rows=batch)
    return len(rows)


def _raise_finished(pending: list[Future]) -> None:
    for f in pending:
        if f.done():
            f.result()
