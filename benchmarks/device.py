"""SubgraphRAG on a device, from an exported tensor cache: no database on the machine that runs it.

    # on a machine with the graph (a running Neo4j holding the question set's graph):
    KGDB_NEO4J_URI=bolt://localhost:7701 .venv/bin/python benchmarks/device.py export \\
        --questions ../shared/data/webqsp/questions.jsonl --out bench-device/webqsp
    # anywhere with torch (the device machine has no Java): the same figures per device, side by side
    .venv/bin/python benchmarks/device.py run bench-device/webqsp --device cpu --device cuda

`export` writes the train and test splits' labelled subgraphs (the `.npz` cache `kgdb train` reads,
entity rows renumbered into one compact table), that table and the relation table, and the names of
the entities for the embedding figure (a few MB for WebQSP). `run` prints, per device: scoring
throughput over the test subgraphs (triples/s, the DDE already computed, as at serving time) and
per-question scoring latency p50 / p95 (synchronised, warm), the time of the per-node features (DDE)
for all test subgraphs, one training epoch over the training split (per-question steps, validation
excluded), and sentence-embedding throughput on the exported names when the embedding model loads
there. Weights are a seeded fresh SubgraphRAG: speed does not depend on what was learned.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def export(args) -> None:
    from rich.progress import Progress

    from kgdb.config import load_settings
    from kgdb.cypher import Graph
    from kgdb.cypher.tables import graph_fingerprint
    from kgdb.data.cache import save_cache
    from kgdb.data.questions import read_questions
    from kgdb.embeddings import get_embedder
    from kgdb.pipeline.splits import prepare_split
    from kgdb.pipeline.vectors import entity_vectors, with_local_entities

    settings = load_settings()
    graph = Graph.connect(settings)
    qs = read_questions(args.questions)
    fingerprint, info = graph_fingerprint(graph)
    model_name = info.get("model") or settings.embedding_model
    embedder = get_embedder(model_name, settings.device, settings.embedding_batch_size)
    splits = {}
    with Progress() as bar:  # subgraphs already in the tensor cache are read, not fetched
        for split in ("train", "test"):
            task = bar.add_task(f"{split} subgraphs", total=None)
            splits[split] = prepare_split(graph, cache_dir=settings.cache_dir, dataset=qs.dataset, split=split, source=args.questions,
                                          questions=qs.split(split), embed=embedder.encode, graph_fingerprint=fingerprint,
                                          embedding_model=model_name, hops=args.hops, cap=args.cap, chunk=settings.fetch_chunk,
                                          max_triples=settings.fetch_max_triples, hub_scan=settings.fetch_hub_scan,
                                          on_start=lambda total, task=task: bar.update(task, total=total),
                                          on_progress=lambda n, task=task: bar.advance(task, n))
            bar.update(task, completed=len(splits[split].items), total=len(splits[split].items))
    vectors, _ = entity_vectors(graph, settings, embedder)
    everything = splits["train"].items + splits["test"].items
    rows, local = vectors.compact([it.entity_idx for it in everything])
    args.out.mkdir(parents=True, exist_ok=True)
    n_train = len(splits["train"].items)
    for split, items in (("train", with_local_entities(splits["train"].items, local[:n_train])),
                         ("test", with_local_entities(splits["test"].items, local[n_train:]))):
        save_cache(args.out / f"{split}.npz", items, {"dataset": qs.dataset, "split": split})
    np.savez(args.out / "tables.npz", entity=rows, relation=vectors.tables.relation)
    ids = sorted({e for it in everything for e in it.entity_idx.tolist()})[: args.names]
    names = [r["name"] for r in graph.run_text("UNWIND $idx AS i MATCH (e:Entity {idx: i}) WHERE NOT e:CVT "
                                               "RETURN e.name AS name ORDER BY e.idx", idx=ids)]
    meta = {"dataset": qs.dataset, "questions": str(args.questions), "fingerprint": fingerprint, "embedding_model": model_name,
            "hops": args.hops, "cap": args.cap, "train": n_train, "test": len(splits["test"].items), "names": names}
    (args.out / "meta.json").write_text(json.dumps(meta, indent=1))
    graph.close()
    size = sum(p.stat().st_size for p in args.out.iterdir()) / 2**20
    print(f"exported {n_train} train and {meta['test']} test subgraphs of {qs.dataset}, tables {rows.shape[0]:,} entities x "
          f"{rows.shape[1]}, {len(names):,} names into {args.out} ({size:.1f} MiB)")


def run(args) -> None:
    import torch

    from kgdb.data.cache import load_cache
    from kgdb.models.base import TensorTables
    from kgdb.models.features import featurise
    from kgdb.models.retrievers.subgraphrag import SubgraphRAG, SubgraphRAGConfig
    from kgdb.training.trainer import TrainConfig, ensure_node_features, train
    from retrieve import pct, sync  # benchmarks/retrieve.py: percentiles; wait for the device before reading the clock

    if not (args.folder / "meta.json").is_file():
        raise SystemExit(f"{args.folder}: no meta.json here; write the folder with `benchmarks/device.py export` first")
    meta = json.loads((args.folder / "meta.json").read_text())
    tables_np = np.load(args.folder / "tables.npz")
    train_items, test_items = load_cache(args.folder / "train.npz"), load_cache(args.folder / "test.npz")
    if train_items is None or test_items is None:
        raise SystemExit(f"{args.folder}: train.npz / test.npz missing or from another cache version; run `export` again")
    torch.set_num_threads(args.threads)
    if any(d.startswith("cuda") for d in args.device) and not torch.cuda.is_available():
        raise SystemExit(f"--device {' '.join(args.device)}: torch sees no CUDA device on this machine (torch {torch.__version__})")
    print(f"{meta['dataset']}: {len(train_items)} train / {len(test_items)} test subgraphs (hops {meta['hops']}, cap {meta['cap']}), "
          f"{tables_np['entity'].shape[0]:,} entities; torch {torch.__version__}, {args.threads} CPU thread(s)")
    rows = []
    for device in args.device:
        tables = TensorTables.from_numpy(tables_np["entity"], tables_np["relation"], meta["fingerprint"], device)
        torch.manual_seed(0)
        model = SubgraphRAG(SubgraphRAGConfig(), tables.dim).to(device).eval()
        for it in train_items + test_items:
            it.features.clear()  # each device computes its own DDE, timed below
        t = time.perf_counter()
        ensure_node_features(model, test_items, tables)
        sync(device)
        dde_s = time.perf_counter() - t
        xs = [featurise(it, tables) for it in test_items]
        model.prepare(tables)
        lat, triples = [], 0
        with torch.no_grad():
            for x in xs[: args.warmup]:
                model.score(x)
            for x, it in zip(xs, test_items):
                sync(device)
                t = time.perf_counter()
                model.score(x)
                sync(device)
                lat.append((time.perf_counter() - t) * 1000)
                triples += it.num_triples
        ensure_node_features(model, train_items, tables)
        val = test_items[: args.val]
        log = []
        train(model, train_items, val, tables, TrainConfig(max_epochs=1, patience=1, seed=0), on_epoch=log.append)
        epoch = log[0]
        names_s = _embedding_rate(meta, device, args.names)
        rows.append((device, triples / (sum(lat) / 1000), pct(lat, 50), pct(lat, 95), dde_s,
                     epoch.seconds - epoch.val_seconds, names_s))
    print(f"{'device':<8} {'scoring triples/s':>18} {'per question p50 / p95 ms':>26} {'DDE, all test s':>16} "
          f"{'train epoch s':>14} {'names/s':>9}")
    for device, tps, p50, p95, dde_s, epoch_s, names_s in rows:
        print(f"{device:<8} {tps:>18,.0f} {p50:>14.2f} / {p95:<9.2f} {dde_s:>16.2f} {epoch_s:>14.1f} "
              f"{f'{names_s:,.0f}' if names_s else 'skipped':>9}")


def _embedding_rate(meta: dict, device: str, limit: int) -> float | None:
    """Names embedded per second on `device`, or None (printed as skipped) when the model does not load."""
    from kgdb.embeddings import get_embedder

    names = meta["names"][:limit]
    if not names:
        return None
    try:
        embedder = get_embedder(meta["embedding_model"], device, 256)
        embedder.encode(names[:64])  # load and warm
    except Exception as exc:  # no model files on this machine: say so, keep the other figures
        print(f"embedding on {device} skipped: {type(exc).__name__}: {exc}")
        return None
    t = time.perf_counter()
    embedder.encode(names)
    return len(names) / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="write the tensor cache of a question set's train and test splits")
    ex.add_argument("--questions", type=Path, required=True)
    ex.add_argument("--out", type=Path, required=True)
    ex.add_argument("--hops", type=int, default=2)
    ex.add_argument("--cap", type=int, default=100, help="per-node cap of the fetch (default: the fetch default, 100)")
    ex.add_argument("--names", type=int, default=10_000, help="entity names kept for the embedding figure")
    rn = sub.add_parser("run", help="time scoring, DDE, one training epoch and embedding on each --device")
    rn.add_argument("folder", type=Path)
    rn.add_argument("--device", action="append", required=True, help="cpu, cuda, cuda:1, ... (repeatable)")
    rn.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    rn.add_argument("--warmup", type=int, default=10, help="questions scored before timing")
    rn.add_argument("--val", type=int, default=20, help="test questions the epoch's validation uses (excluded from its time)")
    rn.add_argument("--names", type=int, default=10_000, help="names to embed (0: no embedding figure)")
    args = ap.parse_args()
    export(args) if args.command == "export" else run(args)


if __name__ == "__main__":
    main()
