"""Choose how much the closeness of a relation path's answers to the question weighs
(`kgdb.rrp.closeness`), on val splits, for an RRP path-ranker checkpoint.

    python benchmarks/answer_closeness.py --checkpoint kgdb/models/default/rrp-ranker-portable \\
        --graph $WEBQSP_URI,/work/cache-webqsp,$KGDB_DATA/webqsp/questions.jsonl \\
        --graph $METAQA_URI,/work/cache-metaqa,$KGDB_DATA/metaqa/3-hop/qa.txt [--per-file 300] [--write]

Each `--graph URI,CACHE_DIR,QUESTIONS` names a server, its tensor cache and a question file: the
first `--per-file` val questions (never test) are answered once with the checkpoint (gold topics, as
`kgdb eval rrp`; the answering mode, λ1 and θ the checkpoint chose), then scored with every weight of
`answer_closeness.WEIGHTS`. Printed: Hit@1 / Macro-F1 per file and weight, and the mean over the files.
The choice: the best mean Hit@1, then the best mean Macro-F1, then the smaller weight. `--write` stores
it, with the grid, as `answering` in the checkpoint's config.json, where `kgdb ask` / `eval rrp` read it.
`kgdb train rrp-ranker` makes the same choice when it trains (`--portable`: on each file's own graph, as
here), and `kgdb train rrp` for the beam planner with its structural reasoner; this script chooses it for
a ranker trained before, such as the shipped portable ranker.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="a checkpoint folder or a name in the checkpoints folder")
    ap.add_argument("--graph", action="append", required=True, metavar="URI,CACHE_DIR,QUESTIONS", help="repeatable")
    ap.add_argument("--per-file", type=int, default=300, help="val questions per file (the first ones)")
    ap.add_argument("--write", action="store_true", help="store the chosen weight in the checkpoint's config.json")
    args = ap.parse_args()

    from contextlib import ExitStack

    from rich.progress import Progress

    from kgdb.config import load_settings
    from kgdb.cypher import Graph
    from kgdb.errors import InputError
    from kgdb.models.checkpoints import find_checkpoint
    from kgdb.rrp.closeness import WEIGHTS, mean_over
    from kgdb.rrp.ranker_training import choose_closeness_weight

    specs = []
    for spec in args.graph:
        parts = spec.split(",")
        if len(parts) != 3:
            raise SystemExit(f"--graph {spec!r}: expected URI,CACHE_DIR,QUESTIONS")
        specs.append(parts)
    t = time.perf_counter()
    with ExitStack() as stack, Progress() as bar:
        pairs = [
            (stack.enter_context(Graph.connect(load_settings(neo4j_uri=uri, cache_dir=Path(cache)))), Path(questions))
            for uri, cache, questions in specs
        ]
        task = bar.add_task("val questions", total=None)
        ranker = find_checkpoint(args.checkpoint, pairs[0][0].settings.checkpoints_dir)
        try:
            answering = choose_closeness_weight(
                ranker,
                pairs,
                per_file=args.per_file,
                write=args.write,
                on_start=lambda n: bar.update(task, total=n),
                on_progress=lambda n: bar.advance(task, n),
            )
        except InputError as exc:
            raise SystemExit(str(exc)) from None
    grid = answering["val"]
    grids = list(grid.values())
    print(f"answered the val questions of {len(specs)} question files in {time.perf_counter() - t:.0f} s")

    print(
        f"\n{'weight':>6} "
        + " ".join(f"{'file ' + str(i + 1) + ' Hit@1/F1':>20}" for i in range(len(grid)))
        + f" {'mean Hit@1/F1':>16}"
    )
    for w in WEIGHTS:
        print(
            f"{w:>6} "
            + " ".join(f"{grid[f][str(w)]['hit1']:>11.2f} / {grid[f][str(w)]['macro_f1']:>5.2f}" for f in grid)
            + f" {mean_over(grids, w, 'hit1'):>8.2f} / {mean_over(grids, w, 'macro_f1'):>5.2f}"
        )
    for i, f in enumerate(grid):
        print(f"file {i + 1}: {f}")
    print(
        f"chosen closeness weight: {answering['closeness_weight']} (best mean val Hit@1, then Macro-F1, then the smaller); load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    if args.write:
        print(f"wrote answering.closeness_weight = {answering['closeness_weight']} to {ranker.path / 'config.json'}")


if __name__ == "__main__":
    main()
