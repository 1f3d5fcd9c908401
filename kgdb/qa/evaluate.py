"""`kgdb eval qa`: a question set through `AskPipeline` with bounded concurrency.

One JSON line per question is appended to `results.jsonl` (a rerun skips the questions already
there, so a crash resumes where it stopped); `metrics.json` and `settings.json` are written beside it.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from kgdb.config import dump_json
from kgdb.data.questions import QuestionRecord
from kgdb.cypher.linking import NoTopicError
from kgdb.errors import InputError, KgdbError
from kgdb.qa.ask import ASK_STAGES, AskPipeline, AskResult
from kgdb.qa.metrics import MatchRules, normalize, score_question, summarize

RESULTS_FILE = "results.jsonl"


def read_done(path: Path) -> dict[str, dict]:
    """Per-question records already written (a torn last line from a crash is ignored)."""
    done: dict[str, dict] = {}
    if not path.is_file():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        done[rec["qid"]] = rec
    return done


def question_record(
    asker: AskPipeline, q: QuestionRecord, rules: MatchRules, answer_ids: list[str] | None = None
) -> dict[str, Any]:
    """Ask one question and score it; errors become records too (they count as wrong)."""
    base: dict[str, Any] = {"qid": q.id, "question": q.text, "gold": q.answers, "topics_gold": q.topics, "hop": q.hop}
    try:
        res = asker.ask(q.text, q.topics or None, q.id)
    except Exception as exc:  # one failed question must not end a long run; it is recorded and scored 0
        msg = str(exc) if isinstance(exc, KgdbError) else f"{type(exc).__name__}: {exc}"
        stage = "no_topic_in_graph" if isinstance(exc, NoTopicError) else "retrieval"
        base.update(error=msg, stage=stage, answers=[], usage=None, missing_topics=list(q.topics) if stage == "no_topic_in_graph" else [])
        base["scores"] = asdict(score_question([], q.answers, q.text, rules, answer_in_kg=bool(answer_ids), evidence_entities=()))
        return base
    preds = [a.answer for a in res.answers]
    if answer_ids is None:
        answer_ids = []
    hop = q.hop if q.hop is not None else _answer_hop(res, answer_ids)
    r = res.reasoning
    base.update(
        hop=hop,
        run=res.run,
        retriever=res.retriever,
        answers=preds,
        grounded=[a.grounded for a in res.answers],
        refused=r.refused if r else None,
        malformed=r.malformed if r else None,
        reply=r.reply if r else None,
        usage={"prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens, "calls": r.calls} if r else None,
        planner_usage=res.planner_usage,
        error=res.error,
        stage="reasoner" if res.error else None,
        answer_in_kg=bool(answer_ids),
        missing_topics=res.missing_topics,  # dropped by the one linking policy; the rest were used
        gold_in_evidence=_gold_in_evidence(q.answers, res.evidence_entities, rules),
        timings_ms={k: round(v, 3) for k, v in res.timings.items()},
    )
    score = score_question(preds, q.answers, q.text, rules, answer_in_kg=bool(answer_ids), evidence_entities=res.evidence_entities)
    base["scores"] = asdict(score)
    return base


def _gold_in_evidence(gold: list[str], entities: list[str], rules: MatchRules) -> float:
    """Share of gold answers that name an entity of the retrieved triples (the ceiling for any reasoner)."""
    if not gold:
        return 0.0
    names = {normalize(e, rules) for e in entities}
    return sum(normalize(g, rules) in names for g in gold) / len(gold)


def _answer_hop(res: AskResult, answer_ids: list[str]) -> int | None:
    """Undirected distance from the topics to the nearest gold answer in the fetched subgraph (0: not reached)."""
    from kgdb.data.labels import answer_hops

    sg = res.subgraph
    if sg is None or not answer_ids:
        return 0 if not answer_ids else None
    pos = {e: i for i, e in enumerate(sg.entity_ids)}
    local = np.asarray([pos[a] for a in answer_ids if a in pos], dtype=np.int64)
    return answer_hops(sg.num_nodes, sg.head, sg.tail, sg.topic, local)


def summarize_records(records: Iterable[dict]) -> dict[str, Any]:
    """Overall and per-hop metrics, token averages and error counts from per-question records."""
    from kgdb.qa.metrics import QuestionScore

    records = sorted(records, key=lambda r: r["qid"])
    scores = [QuestionScore(**r["scores"]) for r in records]
    out: dict[str, Any] = {"overall": summarize(scores)}
    by_hop: dict[str, list[QuestionScore]] = {}
    for r, s in zip(records, scores):
        hop = r.get("hop")
        key = "unreached" if hop == 0 else ("unknown" if hop is None else f"{hop}-hop")
        by_hop.setdefault(key, []).append(s)
    out["by_hop"] = {k: summarize(v) for k, v in sorted(by_hop.items())}
    usage = [r["usage"] for r in records if r.get("usage")]
    n = max(1, len(records))
    out["tokens"] = {
        "avg_prompt_tokens": sum(u["prompt_tokens"] for u in usage) / n,
        "avg_completion_tokens": sum(u["completion_tokens"] for u in usage) / n,
        "llm_calls": sum(u["calls"] for u in usage),
    }
    planned = [r["planner_usage"] for r in records if r.get("planner_usage")]
    if planned:  # `--planner llm`: the planner's LLM calls, apart from the reasoner's
        out["tokens"]["planner"] = {
            "avg_prompt_tokens": sum(u["prompt_tokens"] for u in planned) / n,
            "avg_completion_tokens": sum(u["completion_tokens"] for u in planned) / n,
            "llm_calls": sum(u["calls"] for u in planned),
        }
    gie = [r["gold_in_evidence"] for r in records if "gold_in_evidence" in r]
    out["evidence_answer_recall"] = 100 * sum(gie) / n if gie else None
    out["errors"] = {
        "retrieval": sum(1 for r in records if r.get("stage") == "retrieval"),
        # Topic policy (the same as eval retrieval): given topics the graph lacks are dropped; a
        # question with none left cannot be retrieved and scores 0.
        "no_topic_in_graph": sum(1 for r in records if r.get("stage") == "no_topic_in_graph"),
        "questions_with_dropped_topics": sum(1 for r in records if r.get("missing_topics") and r.get("stage") != "no_topic_in_graph"),
        "reasoner": sum(1 for r in records if r.get("stage") == "reasoner"),
        "malformed_replies": sum(1 for r in records if r.get("malformed")),
    }
    ms = [r["timings_ms"] for r in records if r.get("timings_ms")]
    if ms:
        out["avg_stage_ms"] = {k: sum(m.get(k, 0.0) for m in ms) / len(ms) for k in ASK_STAGES}
    return out


def evaluate_qa(
    asker: AskPipeline,
    questions: list[QuestionRecord],
    out_dir: Path,
    *,
    concurrency: int = 4,
    rules: MatchRules = MatchRules(),
    run_settings: dict[str, Any] | None = None,
    on_done: Callable[[dict], None] | None = None,
    answer_in_kg: Callable[[QuestionRecord], list[str]] | None = None,
) -> dict[str, Any]:
    """Evaluate `questions`; resumable through `out_dir/results.jsonl`. Returns the metrics dict."""
    if concurrency < 1:
        raise InputError(f"--concurrency must be at least 1, got {concurrency}", path="--concurrency")
    out_dir.mkdir(parents=True, exist_ok=True)
    results = out_dir / RESULTS_FILE
    settings = {**(run_settings or {}), **asker.settings_json(), "matching": asdict(rules)}
    previous = out_dir / "settings.json"
    if previous.is_file() and results.is_file():
        old = json.loads(previous.read_text(encoding="utf-8"))
        # hops and cap change every retrieved subgraph (the default cap moved from 500 to 100)
        keys = ("retriever", "checkpoint", "k", "hops", "cap", "format", "reasoner", "questions", "split")
        changed = [k for k in keys if old.get(k) != settings.get(k)]
        if changed:
            raise InputError(
                f"{out_dir} holds results of a different run ({', '.join(changed)} differ); use another --out",
                path=out_dir,
            )
    dump_json(settings, previous)
    done = read_done(results)
    if results.is_file() and results.stat().st_size and not results.read_bytes().endswith(b"\n"):
        with results.open("a", encoding="utf-8") as fh:  # a crash tore the last line: start a fresh one
            fh.write("\n")
    todo = [q for q in questions if q.id not in done]
    lock = threading.Lock()

    def work(q: QuestionRecord) -> dict:
        ids = answer_in_kg(q) if answer_in_kg else None
        return question_record(asker, q, rules, ids)

    with results.open("a", encoding="utf-8") as fh, ThreadPoolExecutor(max_workers=concurrency) as pool:
        pending: set[Future] = set()
        queue = iter(todo)

        def submit_more() -> None:
            while len(pending) < 2 * concurrency:
                q = next(queue, None)
                if q is None:
                    return
                pending.add(pool.submit(work, q))

        submit_more()
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in finished:
                pending.discard(f)
                rec = f.result()
                with lock:
                    fh.write(json.dumps(rec, sort_keys=True, default=str) + "\n")
                    fh.flush()
                    done[rec["qid"]] = rec
                if on_done:
                    on_done(rec)
            submit_more()
    wanted = {q.id for q in questions}
    metrics = summarize_records(r for qid, r in done.items() if qid in wanted)
    metrics["settings"] = settings
    dump_json(metrics, out_dir / "metrics.json")
    return metrics
