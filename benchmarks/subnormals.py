"""Subnormal weights: how many each checkpoint holds, and what reading them as zero
(`kgdb.scoring.weights.read_arrays`) changes for the shipped portable RRP ranker on a graph; and the
ranker as plain `kgdb ask` serves it (numpy, `kgdb.rrp.scoring`) against its torch module.

    KGDB_NEO4J_URI=$DISTRACTOR_URI .venv/bin/python benchmarks/subnormals.py \\
        --questions $KGDB_DATA/webqsp/questions.jsonl --split val [--n 300] [--checkpoint DIR ...]

Prints the subnormal floats of every shipped checkpoint (and of each `--checkpoint` folder), tensor by
tensor. Then, for the first N questions of the split (their own topics), it enumerates the candidate
relation paths once and scores them three times, alternating the order: the torch module with the
weights as the file holds them and as kgdb reads them (how many questions get bitwise-equal scores,
how many the same top path), and the numpy ranker kgdb serves (the same top path as torch? the largest
score difference); and the scoring ms per question of each (p50 / mean). Only the scoring is timed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np


def subnormal_counts(folder: Path) -> dict[str, int]:
    """Subnormal floats per tensor of `folder/model.safetensors` as the file holds it."""
    import torch
    from safetensors.torch import load_file

    state = load_file(str(folder / "model.safetensors"))
    return {
        k: int(((t != 0) & (t.abs() < torch.finfo(t.dtype).tiny)).sum())
        for k, t in state.items()
        if t.is_floating_point()
    }


def main() -> None:
    from kgdb.errors import KgdbError

    try:
        run()
    except KgdbError as exc:  # a missing file, a server that does not answer: one line, no traceback
        raise SystemExit(f"benchmarks/subnormals.py: {exc}") from None


def run() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--split", default="val")
    ap.add_argument("--n", type=int, default=300, help="first N questions of the split")
    ap.add_argument(
        "--checkpoint", type=Path, action="append", default=[], help="another checkpoint folder to count (repeatable)"
    )
    args = ap.parse_args()

    import torch
    from safetensors.torch import load_file

    from kgdb.config import load_settings
    from kgdb.cypher import Graph
    from kgdb.cypher.path_candidates import relation_paths_around
    from kgdb.data.questions import read_questions
    from kgdb.models.checkpoints import read_weights
    from kgdb.models.default import shipped_checkpoint
    from kgdb.reading import read_question
    from kgdb.rrp.model_choice import shipped_ranker
    from kgdb.rrp.models.path_ranker import PathRanker
    from kgdb.rrp.ranker_features import candidate_features, prefix_score
    from kgdb.rrp.training.path_ranker import RankerExample, rank_scores
    from kgdb.scoring.path_tokens import text_features

    shipped = shipped_checkpoint("rrp-ranker")
    folders = sorted({p.parent for p in (shipped.parent).glob("*/model.safetensors")}) + args.checkpoint
    for folder in folders:
        counts = subnormal_counts(folder)
        print(
            f"{folder.name}: {sum(counts.values()):,} subnormal weights"
            + "".join(f"; {k} {n:,}" for k, n in counts.items() if n)
        )

    settings = load_settings()
    graph = Graph.connect(settings)
    ranker = shipped_ranker(graph, settings)
    if ranker is None:
        raise SystemExit(f"{settings.neo4j_uri}: the shipped portable ranker does not fit this graph's embedding model")
    served, table = ranker.model, torch.from_numpy(ranker.model.relation_emb)  # served: numpy, kgdb's weights
    modules = {}
    for name, weights in (
        ("as stored", load_file(str(shipped / "model.safetensors"))),
        ("as read", read_weights(shipped / "model.safetensors")),
    ):
        modules[name] = PathRanker(served.cfg, table)
        modules[name].load_state_dict(weights, strict=False)  # its relation table is the graph's, not stored
        modules[name].eval()
    questions = read_questions(args.questions).split(args.split)[: args.n]
    same = top = served_top = n = 0
    served_diff = 0.0
    ms: dict[str, list[float]] = {"torch, weights as stored": [], "torch, weights as read": [], "numpy, as served": []}
    sizes = []
    for i, q in enumerate(questions):
        read = ranker.encode(read_question(q.text), [])
        text, emb = read.text, read.vector
        candidates = relation_paths_around(
            graph,
            q.topics,
            max_hops=ranker.hops[0],
            cvt_hops=ranker.hops[1],
            cap=ranker.frontier_cap,
            hub_scan=ranker.hub_scan,
            prefixes=ranker.prefixes,
            prefix_score=prefix_score(ranker.relations, emb),
        )
        kept, tokens, dense = candidate_features(
            ranker.relations, text, emb, q.topics, candidates, max_hops=served.cfg.max_hops
        )
        if not kept:
            continue
        none = np.zeros(len(kept), np.float32)
        words = text_features(text, served.cfg.buckets)
        ex = RankerExample(q.id, np.asarray(emb, np.float32), words, tokens, dense, none.astype(bool), none, none)
        runs = [
            ("torch, weights as stored", lambda: rank_scores(modules["as stored"], ex)),
            ("torch, weights as read", lambda: rank_scores(modules["as read"], ex)),
            ("numpy, as served", lambda: served.scores(emb, words, tokens, dense)),
        ]
        scores = {}
        for name, run_one in runs[:: 1 if i % 2 else -1]:  # alternating which goes first
            t = time.perf_counter()
            scores[name] = run_one()
            ms[name].append((time.perf_counter() - t) * 1000)
        stored, read = scores["torch, weights as stored"], scores["torch, weights as read"]
        n += 1
        sizes.append(len(kept))
        same += bool(np.array_equal(stored, read))
        top += int(np.argmax(stored) == np.argmax(read))
        served_top += int(np.argmax(scores["numpy, as served"]) == np.argmax(read))
        served_diff = max(served_diff, float(np.abs(scores["numpy, as served"] - read).max()))
    graph.close()
    if not n:
        raise SystemExit(
            f"{args.questions}: none of the first {args.n} {args.split} questions has a candidate path on {settings.neo4j_uri}"
        )
    print(
        f"{n} {args.split} questions with candidates ({statistics.median(sizes):.0f} per question p50, {max(sizes):,} max) on "
        f"{settings.neo4j_uri}: scores bitwise equal {same}, same top path {top}; numpy as served against torch: same top path "
        f"{served_top}, largest score difference {served_diff:.1e}"
    )
    for name, values in ms.items():
        print(
            f"  scoring ms per question, {name}: p50 {statistics.median(values):.2f}, mean {statistics.mean(values):.2f}"
        )


if __name__ == "__main__":
    main()
