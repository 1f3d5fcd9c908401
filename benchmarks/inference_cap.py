"""The fetch cap a trained checkpoint serves with, chosen on validation splits.

A checkpoint's `fetch.cap` records how its training subgraphs were fetched; served at a smaller cap
it may be as accurate and several times faster on dense graphs (docs/retrieval.md, "The default cap"). Each cap
of the grid is evaluated on every `--val` set with `kgdb eval retrieval --split val --cap C`; the rule
picks the best mean answer recall@100 over the sets, then the best mean shortest-path-triple
recall@100 (both to 3 decimals), then the smallest cap. A path retriever (RAPL) is judged on the
triples it passes (answer / SP recall of its passed set) instead of the top 100. Give the sets of every graph the checkpoint
is meant to serve: a shipped default serves graphs it was not trained on. `--write` stores the choice
as `fetch.inference_cap` in the checkpoint's config.json, with the grid, so `kgdb ask/retrieve/eval`
fetch with it unless `--cap` is given; `fetch.cap` stays as trained.

    .venv/bin/python benchmarks/inference_cap.py --checkpoint kgdb/models/default/cosine-dde-webqsp \\
        --val $KGDB_DATA/webqsp/questions.jsonl@$WEBQSP_URI \\
        --val $KGDB_DATA/metaqa/3-hop/qa.txt@$METAQA_URI,hops=3,limit=300 [--write]

`--val FILE[@BOLT_URI][,hops=K][,limit=N|,sample=N]`: the graph is the URI's (default: the configured
one), hops default to the checkpoint's; `limit` takes the first N val questions, `sample` N at random
(`kgdb eval retrieval --sample`, which covers every template of a MetaQA file). Validation only: the
split is fixed to val.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from val_eval import eval_val

from kgdb.config import load_settings
from kgdb.models.checkpoints import CONFIG, find_checkpoint

RULE = (
    "best mean val answer recall over the sets, then mean SP triple recall (3 decimals), then the smallest cap; "
    "at 100 triples, or of the triples a path retriever passes"
)
# (answer recall, SP triple recall, a third column shown), with their table headers
TOP_K = (("answer_recall@100", "ans R@100"), ("triple_recall@100", "SP R@100"), ("answer_recall@50", "ans R@50"))
PASSED = (("answer_recall@passed", "ans R pass"), ("triple_recall@passed", "SP R pass"), ("triples_passed", "triples"))


@dataclass(frozen=True)
class ValSet:
    questions: Path
    uri: str | None
    hops: int | None
    limit: int | None
    sample: int | None

    @property
    def label(self) -> str:
        return (
            f"{self.questions.parent.name}/{self.questions.name}"
            + (f"@{self.uri}" if self.uri else "")
            + (f" hops={self.hops}" if self.hops else "")
            + (f" first {self.limit}" if self.limit else "")
            + (f" sample {self.sample}" if self.sample else "")
        )


def parse_val(spec: str) -> ValSet:
    head, *options = spec.split(",")
    path, _, uri = head.partition("@")
    values: dict[str, int] = {}
    for option in options:
        key, _, value = option.partition("=")
        if key not in ("hops", "limit", "sample") or not value.isdigit() or int(value) < 1:
            sys.exit(
                f"error: --val {spec!r}: expected FILE[@BOLT_URI][,hops=K][,limit=N|,sample=N] with positive K, N; got {option!r}"
            )
        values[key] = int(value)
    if not Path(path).is_file():
        sys.exit(f"error: --val {spec!r}: no such file {path}")
    return ValSet(Path(path), uri or None, values.get("hops"), values.get("limit"), values.get("sample"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument(
        "--val",
        action="append",
        required=True,
        metavar="FILE[@URI][,hops=K][,limit=N|,sample=N]",
        help="a val set (repeatable)",
    )
    ap.add_argument("--caps", default="50,100,200,500", help="comma-separated caps to try")
    ap.add_argument("--write", action="store_true", help="store the choice in the checkpoint's config.json")
    args = ap.parse_args()
    sets = [parse_val(v) for v in args.val]
    try:
        caps = sorted({int(c) for c in args.caps.split(",")})
    except ValueError:
        sys.exit(f"error: --caps {args.caps!r}: expected comma-separated integers, e.g. 50,100,500")
    if not caps or caps[0] < 1:
        sys.exit(f"error: --caps {args.caps!r}: every cap must be a positive integer")
    ckpt = find_checkpoint(args.checkpoint, load_settings().checkpoints_dir)
    fetch = ckpt.config.get("fetch") or {}
    retriever = ckpt.config.get("retriever")

    grid, metrics = [], TOP_K
    with tempfile.TemporaryDirectory() as tmp:
        for s_i, vs in enumerate(sets):
            if vs.uri:
                os.environ["KGDB_NEO4J_URI"] = vs.uri  # the eval subprocess inherits it
            hops = vs.hops or fetch.get("hops") or 2
            for cap in caps:
                print(f"{retriever} {ckpt.name}: {vs.label}, val at cap {cap} ...", flush=True)
                extra = ["--hops", str(hops), "--cap", str(cap)] + (["--limit", str(vs.limit)] if vs.limit else [])
                extra += ["--sample", str(vs.sample)] if vs.sample else []
                overall = eval_val(vs.questions, retriever, args.checkpoint, extra, Path(tmp) / f"{s_i}-{cap}")
                # a path retriever (RAPL) passes its own set of triples: judge what it passes
                metrics = PASSED if "answer_recall@passed" in overall else TOP_K
                grid.append(
                    {
                        "set": vs.label,
                        "cap": cap,
                        "n": overall[metrics[0][0]]["n"],
                        **{k: round(overall[k]["mean"], 4) for k, _ in metrics},
                    }
                )
    (answer, _), (triple, _), _ = metrics
    print(f"\n{'val set':<60} {'cap':>5} {'n':>5} " + " ".join(f"{h:>10}" for _, h in metrics))
    for r in grid:
        print(f"{r['set']:<60} {r['cap']:>5} {r['n']:>5} " + " ".join(f"{r[k]:>10.3f}" for k, _ in metrics))
    means = [
        {"cap": cap, **{k: sum(r[k] for r in grid if r["cap"] == cap) / len(sets) for k, _ in metrics}} for cap in caps
    ]
    for m in means:
        print(
            f"{'mean over ' + str(len(sets)) + ' sets':<60} {m['cap']:>5} {'':>5} "
            + " ".join(f"{m[k]:>10.3f}" for k, _ in metrics)
        )
    best = max(means, key=lambda m: (round(m[answer], 3), round(m[triple], 3), -m["cap"]))
    print(f"chosen ({RULE}): cap {best['cap']} (trained at {fetch.get('cap')})")
    if args.write:
        # the fetch bounds the grid was measured under (the hub bound changes subgraphs with hubs)
        tuning = {
            "split": "val",
            "sets": [vs.label for vs in sets],
            "rule": RULE,
            "fetch_hub_scan": load_settings().fetch_hub_scan,
            "grid": grid,
        }
        config = {**ckpt.config, "fetch": {**fetch, "inference_cap": best["cap"], "inference_cap_tuning": tuning}}
        (ckpt.path / CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        print(f"wrote fetch.inference_cap={best['cap']} into {ckpt.path / CONFIG}")


if __name__ == "__main__":
    main()
