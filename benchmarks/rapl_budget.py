"""RAPL's inference budget, chosen on a validation split: how many triples it may pass per question
(`max_triples`, whole paths first) and whether kept paths are completed with their sibling triples
(`complete`). Each setting of the grid is evaluated with `kgdb eval retrieval --set ...`; the rule
keeps the settings whose mean number of passed triples is within `--mean-triples` (the prompt size
the issue asks for, 50) and picks the best answer recall, then shortest-path-triple recall, then the
fewest triples. `--write` stores the choice in the checkpoint's config.json (with the grid), so
`kgdb ask/retrieve/eval` use it.

    KGDB_NEO4J_URI=$METAQA_URI .venv/bin/python benchmarks/rapl_budget.py --checkpoint rapl-metaqa3 \\
        --questions $KGDB_DATA/metaqa/3-hop/qa.txt --hops 3 --cap 100 --limit 150 [--write]

Validation only: the split is fixed to val.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from val_eval import eval_val

from kgdb.config import load_settings
from kgdb.models.checkpoints import CONFIG, find_checkpoint

GRID = [(0, False), (0, True), (50, False), (50, True), (100, False), (100, True)]


def evaluate(args, budget: int, complete: bool, out: Path) -> dict:
    extra = ["--hops", str(args.hops), "--set", f"max_triples={budget}", "--set", f"complete={complete}"]
    extra += (["--cap", str(args.cap)] if args.cap else []) + (["--limit", str(args.limit)] if args.limit else [])
    overall = eval_val(args.questions, "rapl", args.checkpoint, extra, out)
    return {k: overall[k]["mean"] for k in ("answer_recall@passed", "triple_recall@passed", "triples_passed")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--hops", type=int, default=2)
    ap.add_argument("--cap", type=int)
    ap.add_argument("--limit", type=int, help="first N val questions (as the checkpoint was validated)")
    ap.add_argument("--mean-triples", type=float, default=50.0, help="largest mean number of passed triples allowed")
    ap.add_argument("--write", action="store_true", help="store the choice in the checkpoint's config.json")
    args = ap.parse_args()
    if not args.questions.is_file():
        sys.exit(f"error: --questions {args.questions}: no such file")
    ckpt = find_checkpoint(args.checkpoint, load_settings().checkpoints_dir)
    if ckpt.config.get("retriever") != "rapl":
        sys.exit(f"error: --checkpoint {args.checkpoint} holds a {ckpt.config.get('retriever')} model, not rapl")

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (budget, complete) in enumerate(GRID):
            print(f"[{i + 1}/{len(GRID)}] max_triples={budget} complete={complete} ...", flush=True)
            rows.append(
                {"max_triples": budget, "complete": complete, **evaluate(args, budget, complete, Path(tmp) / str(i))}
            )
    print(f"\n{'max_triples':>11} {'complete':>8} {'ans R passed':>12} {'SP R passed':>11} {'triples':>8}")
    for r in rows:
        print(
            f"{r['max_triples']:>11} {str(r['complete']):>8} {r['answer_recall@passed']:>12.3f} {r['triple_recall@passed']:>11.3f} {r['triples_passed']:>8.1f}"
        )
    fitting = [r for r in rows if r["triples_passed"] <= args.mean_triples]
    if not fitting:
        sys.exit(f"no setting passes at most {args.mean_triples} triples on average; nothing chosen")
    best = max(
        fitting,
        key=lambda r: (round(r["answer_recall@passed"], 4), round(r["triple_recall@passed"], 4), -r["triples_passed"]),
    )
    print(
        f"chosen (mean triples <= {args.mean_triples:g}, best answer then SP recall): max_triples={best['max_triples']} complete={best['complete']}"
    )
    if args.write:
        model = {**(ckpt.config.get("model") or {}), "max_triples": best["max_triples"], "complete": best["complete"]}
        config = {
            **ckpt.config,
            "model": model,
            "inference_tuning": {
                "split": "val",
                "questions": str(args.questions),
                "limit": args.limit,
                "mean_triples": args.mean_triples,
                "grid": rows,
            },
        }
        (ckpt.path / CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        print(f"wrote max_triples and complete into {ckpt.path / CONFIG}")


if __name__ == "__main__":
    main()
