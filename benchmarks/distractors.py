"""The distractor benchmark graph: the WebQSP subset united with FB15k-237, joined by entity name.

The shared WebQSP subset ($KGDB_DATA/webqsp/kg.tsv) was gathered around the gold answers, so
its 2-hop subgraphs are small (median ~380 triples). FB15k-237 holds real Freebase neighbourhoods of
many of the same entities; joined by name, the WebQSP questions get subgraphs of the size real
Freebase subsets give (thousands of triples, mostly distractors), with the same gold answers.

    # 1. write the union (outside the repository), print its statistics
    python benchmarks/distractors.py build --out ~/.cache/kgdb/benchmarks/distractors
    # 2. load it and the questions into a server of its own
    export KGDB_NEO4J_HOME=~/kgdb-servers/distractors KGDB_NEO4J_BOLT_PORT=<bolt port> KGDB_NEO4J_HTTP_PORT=<http port> KGDB_NEO4J_HEAP=2g
    kgdb neo4j start
    kgdb load freebase-subset ~/.cache/kgdb/benchmarks/distractors/triples.tsv \\
        --names ~/.cache/kgdb/benchmarks/distractors/names.tsv --bulk
    kgdb load questions $KGDB_DATA/webqsp/questions.jsonl
    # 3. subgraph sizes as training and evaluation fetch them (fills the training cache)
    KGDB_NEO4J_URI=$DISTRACTOR_URI python benchmarks/distractors.py sizes --cap 500

The join, decided here:
- **Entities are names.** WebQSP entities are already names (unnamed nodes keep `m.…` ids). Each
  FB15k-237 mid is replaced by its name from `names.tsv`, so `/m/03_r3` becomes `Jamaica` and meets
  WebQSP's `Jamaica`. Names are matched exactly after the loaders' normalisation (NFC, stripped).
- **A name shared by several mids** (223 names, 499 mids in FB15k-237: `Jamaica` the country and a
  film, three `Manhattan`s) goes to the mid with the most FB15k-237 triples, the well-known entity
  a question means; the others keep their mid as id (`m.0abc`) and get their name through
  `names.tsv`, so they stay separate nodes (the real Freebase situation: several nodes, one name)
  and are embedded by name, not treated as CVT nodes.
- **Relations** are written in WebQSP's dotted form (`kgdb.ids.normalise_relation`, the loader's
  rule): `/people/person/nationality` becomes `people.person.nationality` and coincides with
  WebQSP's relation of that name; FB15k-237's CVT-collapsed paths
  (`/film/actor/film./film/performance/film`) become one dotted name
  (`film.actor.film.film.performance.film`) and stay relations of their own: WebQSP spells the
  same fact as two relations through a CVT node, and nothing here invents CVT nodes.
- Identical (head, relation, tail) triples from both sources are written once.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from kgdb.ids import normalise_mid, normalise_relation

DATA = Path(os.environ.get("KGDB_DATA", "data"))
DEFAULT_OUT = Path("~/.cache/kgdb/benchmarks/distractors").expanduser()


def _clean(text: str) -> str:
    """The loaders' normalisation policy (NFC, surrounding whitespace stripped)."""
    return unicodedata.normalize("NFC", text.lstrip("\ufeff").strip())


def _tsv(path: Path, width: int):
    if not path.is_file():
        raise SystemExit(f"error: {path}: file not found ($KGDB_DATA, or pass --data)")
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != width:
                raise SystemExit(
                    f"error: {path}:{line_no}: expected {width} tab-separated columns, found {len(fields)}"
                )
            yield fields


def join_names(
    fb_triples: list[tuple[str, str, str]], names: dict[str, str]
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """mid -> id in the union: its name, or for a name several mids share, the name for the mid with
    the most triples and the mid itself for the others. Also returns the shared names."""
    degree: Counter = Counter()
    for h, _, t in fb_triples:
        degree[h] += 1
        degree[t] += 1
    by_name: dict[str, list[str]] = defaultdict(list)
    for mid, name in names.items():
        by_name[name].append(mid)
    ids = {}
    shared = {}
    for name, mids in by_name.items():
        # most triples first; ties broken by the mid so the choice is deterministic
        mids = sorted(mids, key=lambda m: (-degree[m], m))
        ids[mids[0]] = name
        for mid in mids[1:]:
            ids[mid] = mid
        if len(mids) > 1:
            shared[name] = mids
    return ids, shared


def build(args) -> None:
    t0 = time.perf_counter()
    data = args.data
    web = [(_clean(h), _clean(r), _clean(t)) for h, r, t in _tsv(data / "webqsp" / "kg.tsv", 3)]
    names = {normalise_mid(_clean(m)): _clean(n) for m, n in _tsv(data / "fb15k237" / "names.tsv", 2)}
    fb = [
        (normalise_mid(_clean(h)), normalise_relation(_clean(r)), normalise_mid(_clean(t)))
        for h, r, t in _tsv(data / "fb15k237" / "triples.tsv", 3)
    ]
    missing = {e for h, _, t in fb for e in (h, t) if e not in names}
    if missing:
        raise SystemExit(f"error: {len(missing)} FB15k-237 mids have no name in names.tsv, e.g. {sorted(missing)[:3]}")
    ids, shared = join_names(fb, names)
    fb_joined = [(ids[h], r, ids[t]) for h, r, t in fb]

    union: dict[tuple[str, str, str], None] = dict.fromkeys(web)
    union.update(dict.fromkeys(fb_joined))
    triples = sorted(union)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    with (out / "triples.tsv").open("w", encoding="utf-8") as fh:
        fh.writelines(f"{h}\t{r}\t{t}\n" for h, r, t in triples)
    kept_mids = sorted({e for h, _, t in fb_joined for e in (h, t) if e in names})
    with (out / "names.tsv").open("w", encoding="utf-8") as fh:
        fh.writelines(f"{m}\t{names[m]}\n" for m in kept_mids)

    web_entities = {e for h, _, t in web for e in (h, t)}
    fb_entities = {e for h, _, t in fb_joined for e in (h, t)}
    entities = web_entities | fb_entities
    web_rel, fb_rel = {r for _, r, _ in web}, {r for _, r, _ in fb_joined}
    qs = [json.loads(line) for line in (data / "webqsp" / "questions.jsonl").open(encoding="utf-8")]
    topics = {_clean(t) for q in qs for t in q["q_entity"]}
    fb_degree: Counter = Counter()
    for h, _, t in fb_joined:
        fb_degree[h] += 1
        fb_degree[t] += 1
    gained = sorted(t for t in topics if fb_degree[t])
    q_gained = sum(1 for q in qs if any(fb_degree[_clean(t)] for t in q["q_entity"]))
    gained_deg = [fb_degree[t] for t in gained]
    stats = {
        "triples": len(triples),
        "webqsp_triples": len(set(web)),
        "fb15k237_triples": len(set(fb_joined)),
        "triples_in_both": len(set(web)) + len(set(fb_joined)) - len(triples),
        "entities": len(entities),
        "entities_in_both": len(web_entities & fb_entities),
        "relations": len(web_rel | fb_rel),
        "relations_in_both": len(web_rel & fb_rel),
        "shared_names": len(shared),
        "mids_kept_as_ids": sum(len(m) - 1 for m in shared.values()),
        "webqsp_topic_entities": len(topics),
        "topic_entities_gaining_a_neighbourhood": len(gained),
        "questions_with_such_a_topic": q_gained,
        "questions": len(qs),
        "fb15k237_triples_at_gained_topics_median": statistics.median(gained_deg) if gained_deg else 0,
        "fb15k237_triples_at_gained_topics_max": max(gained_deg, default=0),
        "shared_names_that_are_topics": sorted(t for t in topics if t in shared),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    (out / "stats.json").write_text(json.dumps(stats, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(
        f"wrote {out / 'triples.tsv'} and {out / 'names.tsv'} ({len(kept_mids)} FB15k-237 mids kept as ids, with names)"
    )
    print(
        f"  triples            {stats['triples']:>9,}  (WebQSP {stats['webqsp_triples']:,} + FB15k-237 {stats['fb15k237_triples']:,}, "
        f"{stats['triples_in_both']:,} in both)"
    )
    print(
        f"  entities           {stats['entities']:>9,}  ({stats['entities_in_both']:,} WebQSP entities joined by name with FB15k-237)"
    )
    print(f"  relations          {stats['relations']:>9,}  ({stats['relations_in_both']} names in both)")
    print(
        f"  shared names       {stats['shared_names']:>9,}  ({stats['mids_kept_as_ids']} mids kept as ids; topics among them: "
        f"{', '.join(stats['shared_names_that_are_topics']) or 'none'})"
    )
    print(
        f"  WebQSP topic entities gaining an FB15k-237 neighbourhood: {len(gained)} of {len(topics)} "
        f"({len(gained) / len(topics):.0%}); questions with such a topic: {q_gained} of {len(qs)} ({q_gained / len(qs):.0%}); "
        f"their FB15k-237 degree median {stats['fb15k237_triples_at_gained_topics_median']:.0f}, "
        f"max {stats['fb15k237_triples_at_gained_topics_max']:,}"
    )
    print(f"stats: {out / 'stats.json'} ({stats['seconds']} s)")


def sizes(args) -> None:
    """Subgraph sizes of every split as training and evaluation fetch them (through the cache)."""
    from kgdb.config import load_settings, mask_uri
    from kgdb.cypher import Graph
    from kgdb.cypher.tables import graph_fingerprint
    from kgdb.data.questions import read_questions
    from kgdb.embeddings import get_embedder
    from kgdb.pipeline import prepare_split

    settings = load_settings()
    graph = Graph.connect(settings)
    try:
        qs = read_questions(args.questions)
        fingerprint, info = graph_fingerprint(graph)
        model = info.get("model") or settings.embedding_model
        embedder = get_embedder(model, settings.device, settings.embedding_batch_size)
        all_sizes = []
        print(f"{qs.dataset} on {mask_uri(settings.neo4j_uri)}, hops {args.hops}, cap {args.cap}")
        for split in ("train", "val", "test"):
            t = time.perf_counter()
            res = prepare_split(
                graph,
                cache_dir=settings.cache_dir,
                dataset=qs.dataset,
                split=split,
                source=args.questions,
                questions=qs.split(split),
                embed=embedder.encode,
                graph_fingerprint=fingerprint,
                embedding_model=model,
                hops=args.hops,
                cap=args.cap,
                **settings.fetch_bounds,
            )
            n = [it.num_triples for it in res.items]
            all_sizes += n
            how = "cache" if res.from_disk else f"fetched in {time.perf_counter() - t:.0f} s"
            print(
                f"  {split:5s} {len(n):4d} subgraphs ({how}): triples median {np.median(n):,.0f}, "
                f"p95 {np.percentile(n, 95):,.0f}, max {max(n):,}"
            )
        print(
            f"  all   {len(all_sizes):4d} subgraphs: triples median {np.median(all_sizes):,.0f}, "
            f"p95 {np.percentile(all_sizes, 95):,.0f}, max {max(all_sizes):,}, mean {np.mean(all_sizes):,.0f}"
        )
    finally:
        graph.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="write triples.tsv + names.tsv + stats.json of the union")
    b.add_argument("--data", type=Path, default=DATA, help="the shared data folder (default: $KGDB_DATA)")
    b.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output folder, outside the repository (default {DEFAULT_OUT})"
    )
    s = sub.add_parser("sizes", help="subgraph sizes per split on the loaded graph (KGDB_NEO4J_URI)")
    s.add_argument("--questions", type=Path, default=DATA / "webqsp" / "questions.jsonl")
    s.add_argument("--hops", type=int, default=2)
    s.add_argument("--cap", type=int, default=500)
    args = ap.parse_args()
    if args.command == "build":
        repo = Path(__file__).resolve().parents[1]
        if args.out.resolve().is_relative_to(repo):
            raise SystemExit(f"error: --out {args.out} is inside the repository; shared data is never copied into it")
        build(args)
    else:
        sizes(args)


if __name__ == "__main__":
    from kgdb.errors import KgdbError

    try:
        main()
    except KgdbError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
