"""RRP planner beam size on the VAL split, rethinking (λ1, θ) re-tuned per beam; one JSON line per beam
with Hit@1 / Macro-F1 / reachable % of each ablation mode. Chooses nothing itself: the chosen beam,
λ1, θ and mode go into the structural checkpoint's `rethinking` (read by `relation_path_retriever`).

    KGDB_NEO4J_URI=$WEBQSP_URI .venv/bin/python benchmarks/rrp_beam_sweep.py \\
        --questions $KGDB_DATA/webqsp/questions.jsonl --beam 3 --beam 6 --beam 10
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--beam", type=int, action="append", required=True)
    ap.add_argument("--limit", type=int)
    args = ap.parse_args()

    from kgdb.config import load_settings
    from kgdb.cypher import Graph
    from kgdb.data.questions import read_questions
    from kgdb.rrp.model_choice import relation_path_retriever
    from kgdb.rrp.structural import ABLATIONS, gather_questions, score_mode, tune_rethinking

    settings = load_settings()
    graph = Graph.connect(settings)
    records = read_questions(args.questions).split("val")[: args.limit]
    for beam in args.beam:
        start = time.time()
        retriever = relation_path_retriever(graph, settings, write=False, beam=beam, structural=True, mode="rethink")
        items = gather_questions(retriever, records)
        tuned = tune_rethinking(items)
        rows = {m: score_mode(items, m, tuned["lambda1"], tuned["theta"]) for m in ABLATIONS}
        print(
            json.dumps(
                {
                    "beam": beam,
                    "n": len(records),
                    "lambda1": tuned["lambda1"],
                    "theta": tuned["theta"],
                    **{
                        m: [round(v["hit1"], 2), round(v["macro_f1"], 2), round(v["reachable"], 2)]
                        for m, v in rows.items()
                    },
                    "s": round(time.time() - start),
                }
            ),
            flush=True,
        )
    graph.close()


if __name__ == "__main__":
    main()
