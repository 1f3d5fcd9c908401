"""What answering several-topic questions by joint grounding (kgdb/cypher/topic_intersection.py) would change: for
each question whose file names two or more topics, the shipped ranker plans from each topic alone (its `--paths`
best answer-bearing relation paths), the paths of all topics are grounded in one query and joined on the answer,
and the candidates reached by the most topics (two or more) are the answers, ordered by the sum over topics of
their best path's score; where no candidate is reached by two topics the ranker's own answers stay.

    KGDB_NEO4J_URI=bolt://localhost:7687 KGDB_CHECKPOINTS_DIR=/tmp/none .venv/bin/python benchmarks/topic_intersection.py \\
        --questions $KGDB_DATA/cwq/questions.jsonl --split val --checkpoint kgdb/models/default/rrp-ranker-portable [--paths 12]

Prints Hit@1, Macro-F1 and Hit for the ranker with all topics at once (as `kgdb eval rrp`) and with the joint
reading, on the several-topic questions and on the whole split, with the questions turned right (+) and wrong (-).
`--paths` is the one setting, chosen on a train sample (`--split train --sample 300`, all-questions Hit@1 with 1 / 3 / 5 /
8 / 12 / 20 paths: 30.00 / 35.33 / 38.00 / 39.33 / 41.00 / 41.00; the smallest of the best, 12, is the default).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from kgdb.config import load_settings
from kgdb.cypher import Graph
from kgdb.cypher.topic_intersection import TopicPaths, ground_jointly
from kgdb.data.questions import read_questions, subsample
from kgdb.errors import KgdbError
from kgdb.rrp.model_choice import relation_path_retriever
from kgdb.rrp.report import ScoredQuestion, choose_split, summarise
from kgdb.rrp.structural import answers_of


def topic_plan(retriever, text: str, topic: str, n: int) -> tuple[TopicPaths, dict, set[str]]:
    """The ranker's `n` best answer-bearing relation paths from `topic` alone, their scores and the CVT ids seen."""
    g = retriever.gather(text, [topic])
    best: dict[tuple, float] = {}
    for c in g.planned:
        if c.path.entities and c.path.entities[0] == topic and c.path.answer not in g.cvt:
            key = (tuple(c.path.relations), tuple(c.path.directions))
            best[key] = max(best.get(key, 0.0), c.path.score)
    kept = sorted(best, key=lambda k: -best[k])[:n]
    return TopicPaths(topic, tuple(kept)), {(topic, *k): best[k] for k in kept}, set(g.cvt)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--split", help="train | val (default) | test | all")
    ap.add_argument("--sample", type=int)
    ap.add_argument("--checkpoint")
    ap.add_argument("--paths", type=int, default=12, help="relation paths per topic (chosen on train)")
    args = ap.parse_args()
    qs = read_questions(args.questions)
    split, note = choose_split(qs, args.split)
    if note:
        print(f"note: {note}")
    records = subsample(qs.split(split), sample=args.sample)
    settings = load_settings()
    graph = Graph.connect(settings)
    retriever = relation_path_retriever(graph, settings, checkpoint=args.checkpoint, write=False)
    base_rows, joint_rows, changed, seconds = [], [], {"+": [], "-": []}, []
    for q in records:
        gold = frozenset(q.answers)
        try:
            g = retriever.gather(q.text, q.topics or None)
            base = tuple(answers_of("planner", g, retriever.lambda1, retriever.theta))
            reachable = bool({c.path.answer for c in g.planned} & gold)
        except KgdbError:
            base_rows.append(ScoredQuestion(q.id, gold, (), False, failed=True))
            joint_rows.append(base_rows[-1])
            continue
        joint = base
        if len(set(q.topics)) >= 2:
            t0 = time.perf_counter()
            plans, scores, cvt = [], {}, set()
            for topic in dict.fromkeys(q.topics):
                try:
                    plan, s, c = topic_plan(retriever, q.text, topic, args.paths)
                except KgdbError:
                    continue
                plans.append(plan)
                scores.update(s)
                cvt |= c
            found = [c for c in ground_jointly(graph, plans) if c.answer not in cvt] if plans else []
            top = max((c.reached for c in found), default=0)
            if top >= 2:
                best = [c for c in found if c.reached == top]

                def strength(c, scores=scores) -> float:
                    per_topic: dict[str, float] = {}
                    for p in c.paths:
                        s = scores.get((p.topic, p.relations, p.directions), 0.0)
                        per_topic[p.topic] = max(per_topic.get(p.topic, 0.0), s)
                    return sum(per_topic.values())

                joint = tuple(c.answer for c in sorted(best, key=lambda c: (-strength(c), c.answer)))
                reachable = reachable or bool({c.answer for c in found} & gold)
            seconds.append(time.perf_counter() - t0)
            was, now = bool(base) and base[0] in gold, bool(joint) and joint[0] in gold
            if was != now:
                changed["+" if now else "-"].append(q.text)
        base_rows.append(
            ScoredQuestion(q.id, gold, base, reachable, kind="several" if len(set(q.topics)) >= 2 else "one")
        )
        joint_rows.append(ScoredQuestion(q.id, gold, joint, reachable, kind=base_rows[-1].kind))
    graph.close()
    several = sum(r.kind == "several" for r in base_rows)
    print(
        f"{qs.dataset} {split}: {len(records)} questions, {several} naming two or more topics; {args.paths} path(s) per topic"
    )
    print(f"{'':<28}{'Hit@1':>7}{'Mac-F1':>8}{'Hit':>7}")
    for subset, pick in (("several topics", lambda r: r.kind == "several"), ("all", lambda r: True)):
        for name, rows in (("ranker", base_rows), ("joint grounding", joint_rows)):
            m = summarise([r for r in rows if pick(r)])
            print(f"{subset + ', ' + name:<28}{m['hit1']:>7.2f}{m['macro_f1']:>8.2f}{m['hit']:>7.2f}")
    print(
        f"turned right {len(changed['+'])}, turned wrong {len(changed['-'])}; joint planning and grounding "
        f"{1000 * sum(seconds) / max(len(seconds), 1):.0f} ms per several-topic question"
    )
    for sign in "+-":
        for text in changed[sign][:8]:
            print(f"  {sign} {text}")


if __name__ == "__main__":
    main()
