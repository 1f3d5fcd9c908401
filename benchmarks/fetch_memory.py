"""Peak transaction memory per question: RRP grounding of the planner's relation paths against the
bounded multi-hop subgraph fetch, on the same questions (MetaQA 3-hop by default), with the server's
own accounting: every read query runs under PROFILE and its summary's `GlobalMemory` (the peak
bytes the query's transaction allocated, as Neo4j 5.26 community reports it; the same figure
`db.memory.transaction.max` limits) is kept; a question's peak is the largest over its queries.

    KGDB_NEO4J_URI=$METAQA_URI .venv/bin/python benchmarks/fetch_memory.py \\
        --questions $KGDB_DATA/metaqa/3-hop/qa.txt --split val [--n 300] [--fetch-n 200] [--cap 100 --cap 500]

(i) RRP: the trained planner's beam (graph-constrained decoding, `beam_step.cypher`) grounded from
the gold topics (`ground_step.cypher`, walks, frontier cap 200), as `kgdb eval rrp` runs it; peak
over the planner's and the grounding's queries, and answer recall from the grounded paths: the
share of questions with a gold answer at the end of some grounded path, and the mean share of each
question's gold answers reached. (ii) The subgraph fetch (`kgdb/cypher/fetching.py`,
`subgraph.cypher`) at each cap, `--hops` levels. Both print p50 / p95 / max peak MiB per question
and the number of transaction-memory errors. The test split is for reported figures only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from fetch import measure_fetch, pct  # noqa: E402  (the bounded fetch, measured as benchmarks/fetch.py does)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--split", default="val")
    ap.add_argument("--n", type=int, help="first N questions of the split for RRP grounding (default: all)")
    ap.add_argument("--fetch-n", type=int, default=200, help="first N of those for the subgraph fetch (0: skip it)")
    ap.add_argument("--cap", type=int, action="append", help="subgraph fetch caps, repeatable (default 100 and 500)")
    ap.add_argument("--hops", type=int, default=3, help="subgraph fetch levels")
    ap.add_argument("--checkpoint", help="planner checkpoint (default: the newest for this graph)")
    args = ap.parse_args()

    from kgdb.config import load_settings
    from kgdb.cypher import Graph
    from kgdb.cypher.linking import existing_entities
    from kgdb.data.questions import read_questions
    from kgdb.errors import KgdbError, TransactionMemoryError
    from kgdb.rrp.model_choice import relation_path_retriever

    settings = load_settings()
    graph = Graph.connect(settings)
    questions = read_questions(args.questions).split(args.split)[: args.n]
    retriever = relation_path_retriever(graph, settings, checkpoint=args.checkpoint, write=False, structural=False)
    load = os.getloadavg()
    print(
        f"{len(questions)} {args.split} questions of {args.questions}; server {settings.neo4j_uri}; "
        f"planner {retriever.describe()['checkpoint']}, beam {retriever.planner.beam}, ground cap {retriever.ground_cap}"
    )
    print(
        f"{'fetch':<22} {'n':>5} {'mem err':>7} {'other err':>9} {'peak MiB p50':>12} {'p95':>7} {'max':>7} "
        f"{'ms p50':>7} {'ms p95':>7} {'gold reached':>12} {'answer recall':>13}"
    )

    peaks, ground_peaks, ms, hit, recall, scored, mem_errors, errors = [], [], [], 0, 0.0, 0, 0, 0
    for q in questions:
        gold = set(existing_entities(graph, q.answers))  # the denominator: gold answers the graph has
        scored += bool(gold)
        graph.memory_log = []
        start = time.perf_counter()
        try:
            g = retriever.gather(q.text, q.topics or None)
        except TransactionMemoryError as exc:
            mem_errors += 1  # counted as reaching no answer
            print(f"  {q.id}: {exc}")
            continue
        except KgdbError:
            errors += 1  # e.g. no topic of the question in the graph: nothing to ground, no answer reached
            continue
        finally:
            log, graph.memory_log = graph.memory_log, None
        ms.append((time.perf_counter() - start) * 1000)
        peaks.append(max((b for _, b in log), default=0) / 2**20)
        ground_peaks.append(max((b for name, b in log if name == "ground_step"), default=0) / 2**20)
        ends = {c.path.answer for c in g.planned}
        hit += bool(ends & gold)
        recall += len(ends & gold) / len(gold) if gold else 0.0
    print(
        f"{'RRP plan + ground':<22} {len(peaks):>5} {mem_errors:>7} {errors:>9} {_p50(peaks):>12.2f} {pct(peaks, 0.95):>7.2f} "
        f"{max(peaks, default=0):>7.2f} {_p50(ms):>7.1f} {pct(ms, 0.95):>7.1f} {hit / max(scored, 1):>12.4f} {recall / max(scored, 1):>13.4f}"
    )
    print(
        f"{'  of it ground_step':<22} {len(ground_peaks):>5} {'':>7} {'':>9} {_p50(ground_peaks):>12.2f} "
        f"{pct(ground_peaks, 0.95):>7.2f} {max(ground_peaks, default=0):>7.2f}"
    )

    if args.fetch_n:
        from kgdb.embeddings import get_embedder

        sample = questions[: args.fetch_n]
        embedder = get_embedder(settings.embedding_model, settings.device, settings.embedding_batch_size)
        vectors = embedder.encode([q.text for q in sample])
        for cap in args.cap or [100, 500]:
            m = measure_fetch(graph, settings, sample, vectors, hops=args.hops, cap=cap)
            print(
                f"{f'subgraph {args.hops} hops cap {cap}':<22} {len(m['peak_mib']):>5} {m['memory_errors']:>7} "
                f"{m['errors'] - m['memory_errors']:>9} {_p50(m['peak_mib']):>12.2f} {pct(m['peak_mib'], 0.95):>7.2f} "
                f"{max(m['peak_mib'], default=0):>7.2f} {_p50(m['ms']):>7.1f} {pct(m['ms'], 0.95):>7.1f} "
                f"{m['covered'] / max(len(sample), 1):>12.4f} {'':>13}   ({m['fell_back']} fell back to a smaller cap, "
                f"{m['truncated']} truncated)"
            )
    graph.close()
    end = os.getloadavg()
    print(
        f"gold reached: share of questions with a gold answer at a grounded path's end (subgraph: in the subgraph, by name); "
        f"answer recall: mean share of a question's gold answers (those in the graph) reached; both over the questions "
        f"with a gold answer in the graph (a question whose topic is not in the graph counts as 0). n: questions measured. Load average "
        f"{' '.join(f'{x:.2f}' for x in load)} at start, {' '.join(f'{x:.2f}' for x in end)} at end."
    )


def _p50(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


if __name__ == "__main__":
    main()
