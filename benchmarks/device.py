"""SubgraphRAG, RAPL and the RRP path ranker on a device, from an exported tensor cache: no database on the machine that runs it.

    # on a machine with the graph (a running Neo4j holding the question set's graph):
    KGDB_NEO4J_URI=$WEBQSP_URI .venv/bin/python benchmarks/device.py export \\
        --questions $KGDB_DATA/webqsp/questions.jsonl --out bench-device/webqsp
    # anywhere with torch (the device machine has no Java): the same figures per device, side by side
    .venv/bin/python benchmarks/device.py run bench-device/webqsp --device cpu --device cuda
    .venv/bin/python benchmarks/device.py embed bench-device/webqsp --device cpu --device cuda [--model DIR]

`export` writes the train and test splits' labelled subgraphs (the `.npz` cache `kgdb train` reads,
entity rows renumbered into one compact table), that table and the relation table, and the names of
the entities for the embedding figure (32 MiB for WebQSP). `run` prints, per device: SubgraphRAG's
scoring throughput over the test subgraphs (triples/s, the DDE already computed, as at serving time)
and per-question scoring latency p50 / p95 (synchronised, warm), the time of the per-node features
(DDE) for all test subgraphs, one training epoch over the training split (per-question steps,
validation excluded), and RAPL's per-question inference p50 / p95 (line-graph encoding, K x M path
sampling, dedup) with the mean number of triples it passes, and one RAPL training epoch.
SubgraphRAG's weights are a seeded fresh model (its speed does not depend on what was learned);
RAPL's inference uses the shipped checkpoint, since the length of its sampled paths, hence its
time, does, and its epoch a fresh model of that checkpoint's config. `embed` prints
sentence-embedding throughput on the exported names per device, in float32 and (on CUDA) float16;
it needs only `meta.json` and the model, which can be a local folder (`--model`), e.g. the float16
copy `half-model --out DIR` writes (MiniLM's float32 weights, 87 MB, are more than a device call
carries; speed does not depend on the rounding, and `embed` casts the model to each dtype it times).

    # RRP: the portable ranker's examples of question files, each read on its own server (as training reads them)
    .venv/bin/python benchmarks/device.py rrp-export --questions F --on $WEBQSP_URI [--questions F2 --on URI2 ...] \\
        --sample-train 600 --sample-val 300 --out bench-device/rrp
    .venv/bin/python benchmarks/device.py rrp-run bench-device/rrp --device cpu --device cuda

`rrp-run` prints, per device, the shipped portable ranker's scoring per question p50 / p95 on each val
group (file), and one training epoch of a fresh model of its config over all training examples (with
the val pass it ends with, also timed alone); `--epochs 40` trains on to the end, as the recipe does, and
adds the selected epoch, its val figures (mean over the groups) and the training time.

    # the RRP planner and structural reasoner: their training examples on the connected graph
    KGDB_NEO4J_URI=$WEBQSP_URI .venv/bin/python benchmarks/device.py rrp-train-export \\
        --questions $KGDB_DATA/webqsp/questions.jsonl --out bench-device/rrp-train
    .venv/bin/python benchmarks/device.py rrp-train-run bench-device/rrp-train --device cpu --device cuda

`rrp-train-run` prints, per device, one epoch of a fresh planner and of a fresh structural reasoner, and
each one's val pass timed alone.
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
            splits[split] = prepare_split(
                graph,
                cache_dir=settings.cache_dir,
                dataset=qs.dataset,
                split=split,
                source=args.questions,
                questions=qs.split(split),
                embed=embedder.encode,
                graph_fingerprint=fingerprint,
                embedding_model=model_name,
                hops=args.hops,
                cap=args.cap,
                **settings.fetch_bounds,
                on_start=lambda total, task=task: bar.update(task, total=total),
                on_progress=lambda n, task=task: bar.advance(task, n),
            )
            bar.update(task, completed=len(splits[split].items), total=len(splits[split].items))
    vectors, _ = entity_vectors(graph, settings, embedder)
    everything = splits["train"].items + splits["test"].items
    rows, local = vectors.compact([it.entity_idx for it in everything])
    args.out.mkdir(parents=True, exist_ok=True)
    n_train = len(splits["train"].items)
    for split, items in (
        ("train", with_local_entities(splits["train"].items, local[:n_train])),
        ("test", with_local_entities(splits["test"].items, local[n_train:])),
    ):
        save_cache(args.out / f"{split}.npz", items, {"dataset": qs.dataset, "split": split})
    np.savez(args.out / "tables.npz", entity=rows, relation=vectors.tables.relation)
    ids = sorted({e for it in everything for e in it.entity_idx.tolist()})[: args.names]
    names = [
        r["name"]
        for r in graph.run_text(
            "UNWIND $idx AS i MATCH (e:Entity {idx: i}) WHERE NOT e:CVT RETURN e.name AS name ORDER BY e.idx", idx=ids
        )
    ]
    meta = {
        "dataset": qs.dataset,
        "questions": str(args.questions),
        "fingerprint": fingerprint,
        "embedding_model": model_name,
        "hops": args.hops,
        "cap": args.cap,
        "train": n_train,
        "test": len(splits["test"].items),
        "names": names,
    }
    (args.out / "meta.json").write_text(json.dumps(meta, indent=1))
    graph.close()
    size = sum(p.stat().st_size for p in args.out.iterdir()) / 2**20
    print(
        f"exported {n_train} train and {meta['test']} test subgraphs of {qs.dataset}, tables {rows.shape[0]:,} entities x "
        f"{rows.shape[1]}, {len(names):,} names into {args.out} ({size:.1f} MiB)"
    )


def run(args) -> None:
    import torch
    from retrieve import pct, sync  # benchmarks/retrieve.py: percentiles; wait for the device before reading the clock

    from kgdb.data.cache import load_cache
    from kgdb.models.base import TensorTables
    from kgdb.models.checkpoints import check_compatible, find_checkpoint
    from kgdb.models.features import batch_tensors, featurise
    from kgdb.models.retrievers.subgraphrag import SubgraphRAG, SubgraphRAGConfig
    from kgdb.training.trainer import TrainConfig, ensure_node_features, train

    if not (args.folder / "meta.json").is_file():
        raise SystemExit(f"{args.folder}: no meta.json here; write the folder with `benchmarks/device.py export` first")
    meta = json.loads((args.folder / "meta.json").read_text())
    tables_np = np.load(args.folder / "tables.npz")
    train_items, test_items = load_cache(args.folder / "train.npz"), load_cache(args.folder / "test.npz")
    if train_items is None or test_items is None:
        raise SystemExit(
            f"{args.folder}: train.npz / test.npz missing or from another cache version; run `export` again"
        )
    torch.set_num_threads(args.threads)
    if any(d.startswith("cuda") for d in args.device) and not torch.cuda.is_available():
        raise SystemExit(
            f"--device {' '.join(args.device)}: torch sees no CUDA device on this machine (torch {torch.__version__})"
        )
    print(
        f"{meta['dataset']}: {len(train_items)} train / {len(test_items)} test subgraphs (hops {meta['hops']}, cap {meta['cap']}), "
        f"{tables_np['entity'].shape[0]:,} entities; torch {torch.__version__}, {args.threads} CPU thread(s)"
    )
    rapl_ckpt = find_checkpoint(args.rapl, Path(args.rapl).parent) if args.rapl else None
    if rapl_ckpt is not None:
        check_compatible(rapl_ckpt, meta["embedding_model"], int(tables_np["entity"].shape[1]))
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
            batches = [batch_tensors(xs[i : i + args.batch]) for i in range(0, len(xs), args.batch)]
            model.score(batches[0])
            sync(device)
            t = time.perf_counter()
            for b in batches:
                model.score(b)
            sync(device)
            batched_tps = triples / (time.perf_counter() - t)
        ensure_node_features(model, train_items, tables)
        val = test_items[: args.val]
        log = []
        train(
            model,
            train_items,
            val,
            tables,
            TrainConfig(max_epochs=1, patience=1, seed=0, batch_size=args.train_batch),
            on_epoch=log.append,
        )
        epoch = log[0]
        rapl = _rapl_figures(rapl_ckpt, xs, train_items, val, tables, device, args.warmup) if rapl_ckpt else None
        rows.append(
            (device, triples / (sum(lat) / 1000), batched_tps, pct(lat, 50), pct(lat, 95), dde_s, epoch.seconds, rapl)
        )  # EpochLog.seconds: the training pass, validation excluded
    print(
        f"{'device':<8} {'scoring triples/s':>18} {f'batched ({args.batch}) /s':>17} {'per question p50 / p95 ms':>26} {'DDE, all test s':>16} "
        f"{f'epoch s (B={args.train_batch})':>14} {'RAPL p50 / p95 ms':>19} {'RAPL triples':>13} {'RAPL epoch s':>13}"
    )
    for device, tps, batched_tps, p50, p95, dde_s, epoch_s, rapl in rows:
        rapl_cols = (
            f"{rapl[0]:>9.2f} / {rapl[1]:<7.2f} {rapl[2]:>13.1f} {rapl[3]:>13.1f}" if rapl else f"{'skipped':>19}"
        )
        print(
            f"{device:<8} {tps:>18,.0f} {batched_tps:>17,.0f} {p50:>14.2f} / {p95:<9.2f} {dde_s:>16.2f} {epoch_s:>14.1f} {rapl_cols}"
        )


def _rapl_figures(
    ckpt, xs: list, train_items: list, val: list, tables, device: str, warmup: int
) -> tuple[float, float, float, float]:
    """RAPL on `device`: inference per question with the checkpoint's weights (p50 ms, p95 ms, mean
    triples passed), and one training epoch of a fresh model of the same config (s, validation excluded)."""
    import torch
    from retrieve import pct, sync

    from kgdb.models.base import passed_count
    from kgdb.models.checkpoints import build_model, load_model
    from kgdb.training.trainer import TrainConfig, train

    model = load_model(ckpt, device)
    model.prepare(tables)
    for x in xs[:warmup]:
        model.paths(x)
    lat, passed = [], []
    with torch.no_grad():
        for x in xs:
            sync(device)
            t = time.perf_counter()
            scores, _ = model.paths(x)
            passed.append(passed_count(scores))  # reads the scores back, as serving does
            sync(device)
            lat.append((time.perf_counter() - t) * 1000)
    torch.manual_seed(0)
    fresh = build_model(ckpt.config).to(device)
    log = []
    train(fresh, train_items, val, tables, TrainConfig(max_epochs=1, patience=1, seed=0), on_epoch=log.append)
    return pct(lat, 50), pct(lat, 95), sum(passed) / len(passed), log[0].seconds


def embed(args) -> None:
    """Names embedded per second per device and dtype (float16 on CUDA only: CPUs have no fast half path)."""
    import torch

    from kgdb.embeddings import get_embedder

    meta_path = args.folder / "meta.json"
    if not meta_path.is_file():
        raise SystemExit(f"{args.folder}: no meta.json here; write the folder with `benchmarks/device.py export` first")
    meta = json.loads(meta_path.read_text())
    names = meta["names"][: args.names]
    model_name = args.model or meta["embedding_model"]
    torch.set_num_threads(args.threads)
    print(
        f"{len(names):,} names of {meta['dataset']}, model {model_name}, batch {args.batch}, {args.threads} CPU thread(s)"
    )
    print(f"{'device':<8} {'dtype':<8} {'names/s':>9}")
    for device in args.device:
        embedder = get_embedder(model_name, device, args.batch)
        for dtype in (torch.float32, torch.float16) if device.startswith("cuda") else (torch.float32,):
            embedder.model.to(dtype)
            embedder.encode(names)  # warm: every batch shape (padded length) seen once, as in a long load
            t = time.perf_counter()
            embedder.encode(names)  # returns numpy: the device is synchronised when it returns
            print(f"{device:<8} {str(dtype).removeprefix('torch.'):<8} {len(names) / (time.perf_counter() - t):>9,.0f}")


def half_model(args) -> None:
    """A copy of a sentence-transformers folder with its floating-point weights in float16."""
    import shutil

    from safetensors.torch import load_file, save_file

    from kgdb.embeddings import resolve_model_path

    src = Path(resolve_model_path(args.model))
    if not (src / "model.safetensors").is_file():
        raise SystemExit(
            f"{src}: no model.safetensors here (--model names a sentence-transformers folder or the default model)"
        )
    shutil.copytree(src, args.out, ignore=shutil.ignore_patterns("model.safetensors"), dirs_exist_ok=True)
    weights = {
        k: v.half() if v.is_floating_point() else v for k, v in load_file(str(src / "model.safetensors")).items()
    }
    save_file(weights, str(args.out / "model.safetensors"), metadata={"format": "pt"})
    size = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file()) / 2**20
    print(f"wrote {args.out}: {src.name} with {len(weights)} tensors in float16 ({size:.1f} MiB)")


def _pack_examples(examples: list, tokens_of) -> dict:
    """RankerExamples as flat arrays (candidates concatenated, offsets per question), floats in float16:
    only speed is measured from them, and a device call carries at most 64 MiB."""
    cand = np.cumsum([0] + [len(ex.tokens) for ex in examples])
    width = max([ex.tokens.shape[1] for ex in examples if len(ex.tokens)], default=1)
    return {
        "q_emb": np.stack([ex.q_emb for ex in examples]).astype(np.float16),
        "words": np.concatenate([np.asarray(ex.words, np.int64) for ex in examples]).astype(np.int32),
        "word_off": np.cumsum([0] + [len(ex.words) for ex in examples]),
        "cand_off": cand,
        "tokens": np.concatenate(
            [tokens_of(np.pad(ex.tokens, ((0, 0), (0, width - ex.tokens.shape[1])))) for ex in examples]
        ).astype(np.int32),
        "dense": np.concatenate([ex.dense for ex in examples]).astype(np.float16),
        **{
            k: np.concatenate([getattr(ex, k) for ex in examples]).astype(bool if k == "positive" else np.float16)
            for k in ("positive", "hit", "f1")
        },
    }


def _unpack_examples(path: Path) -> list:
    from kgdb.rrp.training.path_ranker import RankerExample

    z = dict(np.load(path))  # an NpzFile decompresses an array again at every access
    c, w = z["cand_off"], z["word_off"]
    return [
        RankerExample(
            str(i),
            z["q_emb"][i].astype(np.float32),
            z["words"][w[i] : w[i + 1]].astype(np.int64).tolist(),
            z["tokens"][c[i] : c[i + 1]].astype(np.int64),
            z["dense"][c[i] : c[i + 1]].astype(np.float32),
            z["positive"][c[i] : c[i + 1]],
            z["hit"][c[i] : c[i + 1]].astype(np.float32),
            z["f1"][c[i] : c[i + 1]].astype(np.float32),
        )
        for i in range(len(c) - 1)
    ]


def rrp_export(args) -> None:
    """The portable RRP ranker's examples (candidates and features of the train and val splits of each
    question file, read on its graph as `kgdb train rrp-ranker --portable` reads them), with the stacked
    relation table cut to the relations they use."""
    from contextlib import ExitStack

    from rich.progress import Progress

    from kgdb.config import load_settings
    from kgdb.cypher import Graph
    from kgdb.cypher.tables import graph_fingerprint
    from kgdb.data.questions import read_questions
    from kgdb.embeddings import get_embedder
    from kgdb.models.default import shipped_checkpoint
    from kgdb.rrp.ranker_training import ExampleRules, split_examples, stacked_relations
    from kgdb.training.events import TrainEvents

    if len(args.on) != len(args.questions):
        raise SystemExit(
            f"{len(args.questions)} --questions need as many --on (the server holding each file's graph), got {len(args.on)}"
        )
    shipped = json.loads((shipped_checkpoint("rrp-ranker") / "config.json").read_text())
    settings = load_settings()
    with ExitStack() as stack, Progress() as bar:
        by_uri = {
            u: stack.enter_context(Graph.connect(settings.with_overrides(neo4j_uri=u))) for u in dict.fromkeys(args.on)
        }
        graphs = [by_uri[u] for u in args.on]
        fingerprints = [graph_fingerprint(g) for g in graphs]
        per_file, stacked = stacked_relations(graphs, fingerprints, settings)
        embedder = get_embedder(shipped["embedding_model"], settings.device, settings.embedding_batch_size)
        task = bar.add_task("candidates", total=None)

        class Bar(TrainEvents):
            def phase(self, description: str, total: int | None) -> None:
                bar.reset(task, total=total, description=description)

            def advance(self, n: int = 1) -> None:
                bar.advance(task, n)

        rules = ExampleRules.of(settings, shipped["model"]["max_hops"], shipped["model"]["buckets"])
        train, val = split_examples(
            [read_questions(p) for p in args.questions],
            graphs,
            per_file,
            embedder,
            rules,
            sample_train=args.sample_train,
            sample_val=args.sample_val,
            events=Bar(),
        )
    if not train or not any(val):
        raise SystemExit(
            f"{', '.join(map(str, args.questions))}: no training or no val question with candidates to export"
        )
    used = np.unique(
        np.concatenate([(ex.tokens[ex.tokens > 0] - 1) // 2 for ex in train + [e for g in val for e in g]])
    )
    remap = np.zeros(len(stacked), np.int64)
    remap[used] = np.arange(len(used))
    tokens_of = lambda t: np.where(t > 0, 1 + 2 * remap[(t - 1).clip(0) // 2] + (t - 1).clip(0) % 2, 0)  # noqa: E731
    args.out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out / "rrp-train.npz", **_pack_examples(train, tokens_of))
    for i, group in enumerate(val):
        np.savez_compressed(args.out / f"rrp-val-{i}.npz", **_pack_examples(group, tokens_of))
    np.savez_compressed(args.out / "rrp-relations.npz", relation=stacked[used].astype(np.float16))
    meta = {
        "files": [str(p) for p in args.questions],
        "on": args.on,
        "sample": {"train": args.sample_train, "val": args.sample_val},
        "train": len(train),
        "val": [len(g) for g in val],
        "relations": int(len(used)),
        "shipped_model": shipped["model"],
    }
    (args.out / "rrp-meta.json").write_text(json.dumps(meta, indent=1))
    size = sum(p.stat().st_size for p in args.out.glob("rrp-*")) / 2**20
    print(
        f"exported {len(train)} train questions ({sum(len(e.tokens) for e in train):,} candidates) and val {meta['val']} of "
        f"{len(args.questions)} file(s), {len(used):,} relations, into {args.out} ({size:.1f} MiB)"
    )


def rrp_run(args) -> None:
    """Per device: the shipped portable ranker's scoring per question (warm, read back as serving does)
    on each val group, and training a fresh model of its config over the train examples: one epoch, or
    up to `--epochs` with the recipe's early stopping."""
    import torch
    from retrieve import pct, sync

    from kgdb.models.checkpoints import read_weights
    from kgdb.models.default import shipped_checkpoint
    from kgdb.rrp.models.path_ranker import PathRanker
    from kgdb.rrp.scoring import RankerConfig
    from kgdb.rrp.training.path_ranker import RankerTrainConfig, evaluate_groups, rank_scores, train_ranker_model
    from kgdb.training.trainer import seed_everything

    if not (args.folder / "rrp-meta.json").is_file():
        raise SystemExit(
            f"{args.folder}: no rrp-meta.json here; write the folder with `benchmarks/device.py rrp-export` first"
        )
    meta = json.loads((args.folder / "rrp-meta.json").read_text())
    table = torch.from_numpy(np.load(args.folder / "rrp-relations.npz")["relation"].astype(np.float32))
    train = _unpack_examples(args.folder / "rrp-train.npz")
    val = [_unpack_examples(args.folder / f"rrp-val-{i}.npz") for i in range(len(meta["val"]))]
    torch.set_num_threads(args.threads)
    if any(d.startswith("cuda") for d in args.device) and not torch.cuda.is_available():
        raise SystemExit(
            f"--device {' '.join(args.device)}: torch sees no CUDA device on this machine (torch {torch.__version__})"
        )
    cfg = RankerConfig(**meta["shipped_model"])
    weights = read_weights(shipped_checkpoint("rrp-ranker") / "model.safetensors")
    sizes = [np.median([len(ex.tokens) for ex in g]) for g in val]
    print(
        f"{len(train)} train questions ({sum(len(e.tokens) for e in train):,} candidates), val groups "
        + ", ".join(f"{len(g)} ({s:.0f} candidates p50)" for g, s in zip(val, sizes))
        + f", {table.shape[0]:,} relations; torch {torch.__version__}, {args.threads} CPU thread(s)"
    )
    print(
        f"{'device':<8} "
        + " ".join(f"{f'val {i} p50 / p95 ms':>20}" for i in range(len(val)))
        + f" {'epoch s':>8} {'of it val s':>11}"
        + (f" {'best / epochs':>13} {'val Hit@1 / F1':>18} {'trained s':>9}" if args.epochs > 1 else "")
    )
    for device in args.device:
        model = PathRanker(cfg, table).to(device)
        model.load_state_dict(weights, strict=False)  # a portable ranker's relation table is not in its weights
        cols = []
        for group in val:
            for ex in group[: args.warmup]:
                rank_scores(model, ex)
            lat = []
            for ex in group:
                sync(device)
                t = time.perf_counter()
                rank_scores(model, ex)  # returns numpy: read back, as serving does
                lat.append((time.perf_counter() - t) * 1000)
            cols.append(f"{pct(lat, 50):>9.2f} / {pct(lat, 95):<8.2f}")
        seed_everything(42)
        fresh = PathRanker(RankerConfig.for_any_graph(max_hops=cfg.max_hops, buckets=cfg.buckets), table).to(device)
        log = []
        t = time.perf_counter()
        fresh, result = train_ranker_model(
            fresh, train, val, RankerTrainConfig(max_epochs=args.epochs), on_epoch=log.append
        )
        trained = time.perf_counter() - t
        t = time.perf_counter()
        evaluate_groups(fresh, val)
        sync(device)
        row = f"{device:<8} " + " ".join(cols) + f" {log[0].seconds:>8.2f} {time.perf_counter() - t:>11.2f}"
        if args.epochs > 1:  # the recipe's training to its end: does the device change what is learned?
            row += f" {result.best_epoch:>5} / {len(log):<3} {result.best_val_hit1:>9.4f} / {result.best_val_f1:<6.4f} {trained:>9.1f}"
        print(row)


def rrp_train_export(args) -> None:
    """The RRP planner's and structural reasoner's training examples on the connected graph, gathered as
    `kgdb train rrp-planner` and `kgdb train rrp` gather them (labelled relation paths; their subgraphs)."""
    import pickle
    from dataclasses import asdict

    from kgdb.config import load_settings
    from kgdb.cypher import Graph
    from kgdb.data.path_subgraphs import EdgesByStep
    from kgdb.data.questions import read_questions
    from kgdb.rrp.models.planner import PlannerConfig
    from kgdb.rrp.models.structural import StructuralConfig
    from kgdb.rrp.planner_training import planner_examples, relation_vocabulary
    from kgdb.rrp.structural import structural_examples

    settings = load_settings()
    graph = Graph.connect(settings)
    qs = read_questions(args.questions)
    vocab = relation_vocabulary(graph, settings)
    planner_cfg, structural_cfg = PlannerConfig(max_hops=args.hops), StructuralConfig(steps=args.hops)
    index = EdgesByStep(vocab.arrays)
    data = {
        "dataset": qs.dataset,
        "relation": vocab.tables.relation.detach().cpu().numpy(),
        "planner_config": asdict(planner_cfg),
        "structural_config": asdict(structural_cfg),
    }
    for split in ("train", "val"):
        records = qs.split(split)
        data[f"planner_{split}"], _ = planner_examples(
            graph, records, vocab.arrays, vocab.embedder.encode, planner_cfg.buckets, args.hops, vocab.relation_index
        )
        data[f"structural_{split}"], _ = structural_examples(
            graph,
            records,
            vocab.arrays,
            index,
            vocab.embedder.encode,
            structural_cfg.buckets,
            args.hops,
            vocab.relation_index,
            seed=42,
        )
    graph.close()
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "rrp-train.pkl", "wb") as f:  # our own benchmark folder, read back only by rrp-train-run
        pickle.dump(data, f)
    sizes = ", ".join(f"{k} {len(v)}" for k, v in data.items() if isinstance(v, list))
    print(
        f"exported {qs.dataset}: {sizes} examples, {len(data['relation']):,} relations, into {args.out} "
        f"({(args.out / 'rrp-train.pkl').stat().st_size / 2**20:.1f} MiB)"
    )


def rrp_train_run(args) -> None:
    """Per device: one training epoch of a fresh RRP planner and of a fresh structural reasoner over the
    exported training examples, and their val passes, timed alone."""
    import pickle

    import torch
    from retrieve import sync

    from kgdb.rrp.models.planner import PathDecoder, PlannerConfig
    from kgdb.rrp.models.structural import StructuralConfig, StructuralReasoner
    from kgdb.rrp.training.planner import PlannerTrainConfig, evaluate_planner, train_planner_model
    from kgdb.rrp.training.structural import StructuralTrainConfig, hit1, train_structural_model
    from kgdb.training.trainer import seed_everything

    if not (args.folder / "rrp-train.pkl").is_file():
        raise SystemExit(
            f"{args.folder}: no rrp-train.pkl here; write the folder with `benchmarks/device.py rrp-train-export` first"
        )
    with open(args.folder / "rrp-train.pkl", "rb") as f:
        data = pickle.load(f)
    table = torch.from_numpy(data["relation"])
    torch.set_num_threads(args.threads)
    if any(d.startswith("cuda") for d in args.device) and not torch.cuda.is_available():
        raise SystemExit(
            f"--device {' '.join(args.device)}: torch sees no CUDA device on this machine (torch {torch.__version__})"
        )
    print(
        f"{data['dataset']}: planner {len(data['planner_train'])} train / {len(data['planner_val'])} val questions, structural "
        f"{len(data['structural_train'])} / {len(data['structural_val'])} subgraphs, {len(table):,} relations; torch {torch.__version__}, "
        f"{args.threads} CPU thread(s)"
    )
    print(f"{'device':<8} {'planner epoch s':>15} {'its val s':>9} {'structural epoch s':>18} {'its val s':>9}")
    for device in args.device:
        seed_everything(42)
        planner = PathDecoder(PlannerConfig(**data["planner_config"]), table).to(device)
        logs = []
        train_planner_model(
            planner,
            data["planner_train"],
            data["planner_val"],
            PlannerTrainConfig(max_epochs=1, patience=1),
            on_epoch=logs.append,
        )
        t = time.perf_counter()
        evaluate_planner(planner, data["planner_val"], PlannerTrainConfig().beam)
        planner_val = time.perf_counter() - t
        seed_everything(42)
        structural = StructuralReasoner(StructuralConfig(**data["structural_config"]), table).to(device)
        t = time.perf_counter()
        train_structural_model(
            structural,
            data["structural_train"],
            data["structural_val"],
            StructuralTrainConfig(max_epochs=1, patience=1),
        )
        sync(device)
        structural_epoch = time.perf_counter() - t
        t = time.perf_counter()
        hit1(structural, data["structural_val"])
        sync(device)
        structural_val = time.perf_counter() - t
        print(
            f"{device:<8} {logs[0].seconds:>15.2f} {planner_val:>9.2f} {structural_epoch - structural_val:>18.2f} {structural_val:>9.2f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="write the tensor cache of a question set's train and test splits")
    ex.add_argument("--questions", type=Path, required=True)
    ex.add_argument("--out", type=Path, required=True)
    ex.add_argument("--hops", type=int, default=2)
    ex.add_argument("--cap", type=int, default=100, help="per-node cap of the fetch (default: the fetch default, 100)")
    ex.add_argument("--names", type=int, default=10_000, help="entity names kept for the embedding figure")
    rn = sub.add_parser(
        "run", help="time SubgraphRAG scoring, DDE and training, RAPL inference and training, on each --device"
    )
    rn.add_argument("folder", type=Path)
    rn.add_argument("--device", action="append", required=True, help="cpu, cuda, cuda:1, ... (repeatable)")
    rn.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    rn.add_argument("--warmup", type=int, default=10, help="questions scored before timing")
    rn.add_argument("--batch", type=int, default=64, help="questions per scoring call for the batched throughput")
    rn.add_argument(
        "--train-batch", type=int, default=1, help="questions per optimiser step in the epoch (1: the paper's)"
    )
    rn.add_argument(
        "--val", type=int, default=20, help="test questions the epoch's validation uses (excluded from its time)"
    )
    rn.add_argument(
        "--rapl",
        default=str(Path(__file__).resolve().parents[1] / "kgdb" / "models" / "default" / "rapl-webqsp"),
        help="RAPL checkpoint folder timed (inference, and an epoch of its config; default: the shipped one; '' skips RAPL)",
    )
    em = sub.add_parser("embed", help="time sentence embedding of the exported names on each --device")
    em.add_argument("folder", type=Path, help="an exported folder (only its meta.json is read)")
    em.add_argument("--device", action="append", required=True, help="cpu, cuda, ... (repeatable)")
    em.add_argument(
        "--model", help="embedding model name or local folder (default: the one the graph was embedded with)"
    )
    em.add_argument("--names", type=int, default=10_000)
    em.add_argument("--batch", type=int, default=256, help="sentences per batch (kgdb's default embedding batch)")
    em.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    rx = sub.add_parser(
        "rrp-export",
        help="write the portable RRP ranker's train and val examples of question files read on their graphs",
    )
    rx.add_argument("--questions", type=Path, action="append", required=True, help="question file (repeatable)")
    rx.add_argument(
        "--on",
        action="append",
        default=[],
        help="bolt URI of the server holding the graph of each --questions, in order",
    )
    rx.add_argument("--out", type=Path, required=True)
    rx.add_argument("--sample-train", type=int, help="training questions per file at random (default: all)")
    rx.add_argument("--sample-val", type=int, help="val questions per file at random (default: all)")
    rr = sub.add_parser(
        "rrp-run", help="time the shipped portable RRP ranker's scoring and a training epoch on each --device"
    )
    rr.add_argument("folder", type=Path)
    rr.add_argument("--device", action="append", required=True, help="cpu, cuda, ... (repeatable)")
    rr.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    rr.add_argument("--warmup", type=int, default=10, help="questions of each val group scored before timing")
    rr.add_argument(
        "--epochs",
        type=int,
        default=1,
        help="train this many epochs at most (the recipe's: 40, patience 6, seed 42) and print the val figures it selects",
    )
    tx = sub.add_parser(
        "rrp-train-export",
        help="write the RRP planner's and structural reasoner's training examples on the connected graph",
    )
    tx.add_argument("--questions", type=Path, required=True)
    tx.add_argument("--out", type=Path, required=True)
    tx.add_argument(
        "--hops", type=int, default=2, help="relation-path hops (planner) and propagation steps (structural reasoner)"
    )
    tr = sub.add_parser(
        "rrp-train-run", help="time an epoch of the RRP planner and of the structural reasoner on each --device"
    )
    tr.add_argument("folder", type=Path)
    tr.add_argument("--device", action="append", required=True, help="cpu, cuda, ... (repeatable)")
    tr.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    hm = sub.add_parser(
        "half-model", help="copy an embedding model with float16 weights (small enough to carry to a device)"
    )
    hm.add_argument("--model", default="all-MiniLM-L6-v2", help="model name or folder (default: the bundled MiniLM)")
    hm.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    from kgdb.errors import KgdbError

    try:
        {
            "export": export,
            "run": run,
            "embed": embed,
            "half-model": half_model,
            "rrp-export": rrp_export,
            "rrp-run": rrp_run,
            "rrp-train-export": rrp_train_export,
            "rrp-train-run": rrp_train_run,
        }[args.command](args)
    except KgdbError as exc:  # a checkpoint or model that does not fit: one line, no traceback
        raise SystemExit(f"benchmarks/device.py {args.command}: {exc}") from None


if __name__ == "__main__":
    main()
