"""Is a MetaQA miss the graph's fault or kgdb's? Checks the loaded graph against the source files.

    KGDB_NEO4J_URI=$METAQA_URI .venv/bin/python benchmarks/metaqa_reach.py \\
        --kb $KGDB_DATA/metaqa/kb.tsv --questions $KGDB_DATA/metaqa/2-hop/qa.txt --split val [--limit 300] [--show 20]

1. The graph's triples (`graph_triples`, ids) against the (head, relation, tail) lines of the KB file
   read by hand (split on tabs, nothing normalised): triples only in one of them are printed, so a
   loader that drops, merges or renames entities shows here.
2. Per question of the split, from the raw file alone: is the topic (as written between brackets in
   the question line) an entity of the file, are the gold answers, and does a walk of exactly the
   question's hop count (any relations, both directions) reach a gold answer; the same topic and
   answer strings are looked up in the graph. A question unreachable in the raw file is unreachable
   for any system reading this KB, whatever kgdb does.
3. Answer recall ceilings (the mean share of a question's gold answers, those in the KB, reached):
   by the labelled relation paths (best-F1 shortest paths of the hop count, `shortest_relation_paths`,
   grounded on the whole graph without any frontier cap) and by any walk of the hop count.
Val only for choices; the script reads no model.
"""

from __future__ import annotations

import argparse
import collections
import os
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kb", type=Path, required=True, help="the MetaQA kb.tsv the graph was loaded from")
    ap.add_argument("--questions", type=Path, action="append", required=True, help="k-hop/qa.txt, repeatable")
    ap.add_argument("--split", default="val")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--show", type=int, default=20, help="unreachable questions printed per file")
    args = ap.parse_args()

    from kgdb.config import load_settings
    from kgdb.cypher import Graph
    from kgdb.cypher.paths import graph_triples
    from kgdb.data.questions import read_questions
    from kgdb.data.relation_paths import TripleArrays, reach, shortest_relation_paths

    raw = set()
    with args.kb.open(encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3:
                raw.add(tuple(parts))
    settings = load_settings()
    graph = Graph.connect(settings)
    stored = set(graph_triples(graph))
    graph.close()
    print(
        f"server {settings.neo4j_uri}; {args.kb}: {len(raw):,} distinct triples, graph {len(stored):,}; "
        f"only in the file {len(raw - stored):,}, only in the graph {len(stored - raw):,}"
    )
    for t in sorted(raw - stored)[:5]:
        print(f"  only in the file: {t}")
    for t in sorted(stored - raw)[:5]:
        print(f"  only in the graph: {t}")
    raw_names = {x for h, _, t in raw for x in (h, t)}
    graph_names = {x for h, _, t in stored for x in (h, t)}
    adjacent: dict[str, set[str]] = collections.defaultdict(set)
    for h, _, t in raw:
        adjacent[h].add(t)
        adjacent[t].add(h)
    arrays = TripleArrays.from_triples(sorted(raw))

    for path in args.questions:
        qs = read_questions(path)
        records = qs.split(args.split)[: args.limit]
        counts: collections.Counter = collections.Counter()
        label_recall = walk_recall = 0.0
        scored = 0
        shown = 0
        for q in records:
            hop = q.hop or 3
            topic = q.topics[0]
            gold = {a for a in q.answers if a in raw_names}
            counts["topic in file"] += topic in raw_names
            counts["topic in graph"] += topic in graph_names
            counts["answers"] += len(q.answers)
            counts["answers in file"] += len(gold)
            counts["answers in graph"] += sum(a in graph_names for a in q.answers)
            ends = _walk(adjacent, topic, hop) if topic in raw_names else set()
            reachable = bool(ends & gold)
            counts["reachable"] += reachable
            if gold:
                scored += 1
                walk_recall += len(ends & gold) / len(gold)
                labels = (
                    shortest_relation_paths(arrays, q.topics, q.answers, exact_hops=hop, best_f1=True)
                    if topic in raw_names
                    else []
                )
                reached: set[str] = set()
                for label in labels:
                    codes = tuple(2 * arrays.relations.index(r) + (0 if d > 0 else 1) for r, d in label)
                    reached |= {arrays.ids[e] for e in reach(arrays, arrays.index[topic], hop)[-1].get(codes, [])}
                label_recall += len((reached - {topic}) & gold) / len(gold)
            if not reachable and shown < args.show:
                shown += 1
                why = (
                    "topic not in the file"
                    if topic not in raw_names
                    else "no gold answer in the file"
                    if not gold
                    else f"no {hop}-hop walk reaches a gold answer (topic relations: "
                    f"{sorted({r for h, r, t in raw if topic in (h, t)})})"
                )
                print(f"  {q.id} {q.text!r}: {why}; gold {sorted(q.answers)[:3]}")
        n = max(len(records), 1)
        print(
            f"{qs.dataset} {args.split} ({len(records)} questions): topic in file {counts['topic in file']}, in graph "
            f"{counts['topic in graph']}; answers in file {counts['answers in file']}/{counts['answers']}, in graph "
            f"{counts['answers in graph']}; gold reachable by a {records[0].hop if records else '?'}-hop walk in the file "
            f"{counts['reachable']} ({100 * counts['reachable'] / n:.2f}%); answer recall ceiling: labelled relation paths "
            f"{label_recall / max(scored, 1):.4f}, any walk {walk_recall / max(scored, 1):.4f}"
        )
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def _walk(adjacent: dict[str, set[str]], start: str, hops: int) -> set[str]:
    """Entities at the end of a walk of exactly `hops` steps (either direction), the start excluded."""
    frontier = {start}
    for _ in range(hops):
        frontier = {y for x in frontier for y in adjacent.get(x, ())}
    return frontier - {start}


if __name__ == "__main__":
    main()
