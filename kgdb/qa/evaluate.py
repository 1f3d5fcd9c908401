"""`kgdb eval qa`: a question set through `AskPipeline` with bounded concurrency.

One JSON line per question is appended to `results.jsonl` (a rerun skips the questions already
there, so a crash resumes where it stopped); `metrics.json` and `settings.json` are written beside it.

A database error is an error, not an answer: once the driver's own retries (with backoff) give up,
the run stops with the results so far kept. No record is ever made of a question
whose query failed, and a resumed run asks again every question recorded as "topic not in the graph"
or as a retrieval error (files written before this rule may hold such rows from a lost server).
A lost LLM endpoint is the same: when an LLM call fails (the client's retries spent) and the endpoint
no longer answers, or refuses the API key, the run stops and the question is asked again on resume;
an LLM failure while the endpoint answers is the question's own and is recorded.
"""

from __future__ import annotations

import json
import sys
import threading
import urllib.error
import urllib.request
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from kgdb.config import dump_json
from kgdb.cypher.linking import NoTopicError
from kgdb.data.questions import QuestionRecord
from kgdb.errors import DatabaseError, InputError, KgdbError, LLMUnavailableError, TransactionMemoryError
from kgdb.private_files import open_private, private_dir
from kgdb.qa.ask import ASK_STAGES, AskPipeline, AskResult
from kgdb.qa.confidence import summary as confidence_summary
from kgdb.qa.metrics import MatchRules, normalize, score_question, summarize
from kgdb.qa.reasoners import LLMError

RESULTS_FILE = "results.jsonl"
# Stages asked again on resume: cheap to redo, and what a lost server used to leave behind.
RECOMPUTED_STAGES = ("retrieval", "no_topic_in_graph")
# Failures that end a run (the rest of it would only record failures); the run resumes once they are fixed.
RUN_STOPPERS = (DatabaseError, LLMUnavailableError)
OPENAI_URL = "https://api.openai.com/v1"
# Seconds the LLM endpoint has to answer `GET /models` after a failed call before it counts as lost.
LLM_PROBE_TIMEOUT = 5.0


def kgdb_version() -> str:
    """`kgdb.__version__`, recorded in every results file (read from the package already imported: an
    import of `kgdb` here would make QA import the package's public API, for the import checker)."""
    return str(getattr(sys.modules["kgdb"], "__version__", "unknown"))


def read_done(path: Path, *, recompute: tuple[str, ...] = RECOMPUTED_STAGES) -> dict[str, dict]:
    """Per-question records already written, the last one of each question; a torn last line from a
    crash and the records of stages in `recompute` are left out (so they are asked again)."""
    done: dict[str, dict] = {}
    if not path.is_file():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(rec, dict) or "qid" not in rec:
            continue  # a settings header
        if rec.get("stage") in recompute:
            done.pop(rec["qid"], None)
        else:
            done[rec["qid"]] = rec
    return done


def open_results(path: Path):
    """`path` opened for appending records, after a line torn by a crash is ended."""
    private_dir(path.parent)
    if path.is_file() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
        with open_private(path, "a", encoding="utf-8") as fh:
            fh.write("\n")
    return open_private(path, "a", encoding="utf-8")


def database_error(graph, exc: BaseException) -> DatabaseError | None:
    """The database failure behind `exc`, or None when the question itself failed.

    A query error is one; so is any error while the server does not answer: a lookup that failed on a
    lost connection can surface as "topic not in the graph", which must not be recorded as an answer.
    A transaction over the server's memory limit is the question's own (it fails the same way again).
    """
    if isinstance(exc, TransactionMemoryError):
        return None
    if isinstance(exc, DatabaseError):
        return exc
    try:
        graph.driver.verify_connectivity()
    except Exception:  # any driver failure here means the same: the server is not answering
        return DatabaseError(f"the database stopped answering ({' '.join(str(exc).split())[:200]})")
    return None


def llm_unavailable(asker: AskPipeline, why: str) -> LLMUnavailableError | None:
    """The loss of the LLM endpoint behind a failed LLM call (`why`), or None when the endpoint still
    answers: then the failure was the question's own (a prompt its context cannot hold, a reply it could
    not read) and is recorded. Lost: `GET /models` is refused, times out, or answers 5xx; an endpoint that
    refuses the API key (401/403) fails every question the same way, so it stops the run too."""
    base_url = str(asker.reasoner.settings().get("base_url") or asker.settings.llm_base_url or OPENAI_URL)
    key = asker.settings.llm_api_key
    request = urllib.request.Request(
        base_url.rstrip("/") + "/models",
        headers={"Authorization": f"Bearer {key.get_secret_value() if key else 'EMPTY'}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=LLM_PROBE_TIMEOUT):
            return None
    except urllib.error.HTTPError as exc:
        if exc.code not in (401, 403) and exc.code < 500:
            return None  # no such route here, but the server answers
        state = f"answers HTTP {exc.code}"
    except (OSError, ValueError) as exc:  # refused, reset, timed out, unresolvable
        state = f"does not answer ({getattr(exc, 'reason', exc)})"
    detail = " ".join(why.split())[:300]
    return LLMUnavailableError(f"the LLM endpoint {base_url} {state}; the last call failed: {detail}")


def _answers_in_graph(
    asker: AskPipeline, lookup: Callable[[QuestionRecord], list[str]], q: QuestionRecord
) -> list[str]:
    """`lookup(q)`, the gold answers the graph has; when some are missing, the database is asked whether
    it is still there (a lookup on a lost connection finds nothing, and would be recorded as a fact)."""
    ids = lookup(q)
    if (
        len(ids) < len(set(q.answers))
        and (lost := database_error(asker.graph, KgdbError("gold answer lookup"))) is not None
    ):
        raise lost
    return ids


def _failed_record(
    base: dict[str, Any],
    q: QuestionRecord,
    rules: MatchRules,
    answer_ids: list[str] | Callable[[], list[str]] | None,
    exc: Exception,
) -> dict[str, Any]:
    """`base` completed for a question whose asking failed (scored as wrong)."""
    answer_ids = answer_ids() if callable(answer_ids) else answer_ids
    msg = str(exc) if isinstance(exc, KgdbError) else f"{type(exc).__name__}: {exc}"
    stage = "no_topic_in_graph" if isinstance(exc, NoTopicError) else "retrieval"
    base.update(
        error=msg,
        stage=stage,
        answers=[],
        usage=None,
        missing_topics=list(q.topics) if stage == "no_topic_in_graph" else [],
    )
    base["scores"] = asdict(
        score_question([], q.answers, q.text, rules, answer_in_kg=bool(answer_ids), evidence_entities=())
    )
    return base


def _raise_if_run_lost(asker: AskPipeline, exc: Exception) -> None:
    """The database or LLM failure behind a failed ask, raised: not an answer, never recorded (see
    `evaluate_qa`); returns when the question failed on its own."""
    if (lost := database_error(asker.graph, exc)) is not None:
        raise lost from exc
    if isinstance(exc, LLMError) and (gone := llm_unavailable(asker, str(exc))) is not None:
        raise gone from exc  # an LLM planner whose endpoint is gone


def question_record(
    asker: AskPipeline,
    q: QuestionRecord,
    rules: MatchRules,
    answer_ids: list[str] | Callable[[], list[str]] | None = None,
) -> dict[str, Any]:
    """Ask one question and score it; errors become records too (they count as wrong), except a
    database error or a lost LLM endpoint, which are raised. `answer_ids` may be a function: it is called
    after the question was asked, so a lost server is found by one query, not by one per gold answer."""
    base: dict[str, Any] = {"qid": q.id, "question": q.text, "gold": q.answers, "topics_gold": q.topics, "hop": q.hop}
    try:
        res = asker.ask(q.text, q.topics or None, q.id)
    except Exception as exc:  # one failed question must not end a long run; it is recorded and scored 0
        _raise_if_run_lost(asker, exc)
        return _failed_record(base, q, rules, answer_ids, exc)
    if res.error and (gone := llm_unavailable(asker, res.error)) is not None:
        raise gone  # the reasoner's LLM is gone: the question is asked again on resume
    if res.missing_topics and (lost := database_error(asker.graph, KgdbError("topic lookup"))) is not None:
        raise lost  # a topic "missing" because its lookup failed: the answer is not the graph's
    preds = [a.answer for a in res.answers]
    answer_ids = answer_ids() if callable(answer_ids) else answer_ids
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
        usage={"prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens, "calls": r.calls}
        if r
        else None,
        reading=r.reading() if r else None,
        planner_usage=res.planner_usage,
        error=res.error,
        stage="reasoner" if res.error else None,
        answer_in_kg=bool(answer_ids),
        missing_topics=res.missing_topics,  # dropped by the one linking policy; the rest were used
        gold_in_evidence=_gold_in_evidence(q.answers, res.evidence_entities, rules),
        timings_ms={k: round(v, 3) for k, v in res.timings.items()},
        confidence=res.confidence,
        min_confidence=res.min_confidence,
        escalated=res.escalated,
        escalate_below=asker.escalate_below,
    )
    score = score_question(
        preds, q.answers, q.text, rules, answer_in_kg=bool(answer_ids), evidence_entities=res.evidence_entities
    )
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


def _hop_key(hop: int | None) -> str:
    return "unreached" if hop == 0 else ("unknown" if hop is None else f"{hop}-hop")


def _usage_averages(usage: list[dict], n: int) -> dict[str, Any]:
    return {
        "avg_prompt_tokens": sum(u["prompt_tokens"] for u in usage) / n,
        "avg_completion_tokens": sum(u["completion_tokens"] for u in usage) / n,
        "llm_calls": sum(u["calls"] for u in usage),
    }


def _stage_count(records: list[dict], stage: str) -> int:
    return sum(1 for r in records if r.get("stage") == stage)


def _error_counts(records: list[dict]) -> dict[str, int]:
    return {
        "retrieval": _stage_count(records, "retrieval"),
        # Topic policy (the same as eval retrieval): given topics the graph lacks are dropped; a
        # question with none left cannot be retrieved and scores 0.
        "no_topic_in_graph": _stage_count(records, "no_topic_in_graph"),
        "questions_with_dropped_topics": sum(
            1 for r in records if r.get("missing_topics") and r.get("stage") != "no_topic_in_graph"
        ),
        "reasoner": _stage_count(records, "reasoner"),
        "malformed_replies": sum(1 for r in records if r.get("malformed")),
    }


def _judgement(records: list[dict], scores: list) -> dict[str, Any]:
    """`confidence`: the answer model's figures over the questions it judged (answered without an LLM);
    `escalation`: the routes of a run with `--escalate-below`. Empty where neither applies."""
    out: dict[str, Any] = {}
    judged = [(r, s) for r, s in zip(records, scores) if r.get("confidence") is not None]
    if judged:
        threshold = next((r["min_confidence"] for r, _ in judged if r.get("min_confidence") is not None), None)
        out["confidence"] = confidence_summary(
            [r["confidence"] for r, _ in judged], [bool(s.hit1) for _, s in judged], threshold
        )
    routed = [(r, s) for r, s in zip(records, scores) if r.get("escalated") is not None]
    if routed:
        out["escalation"] = _routes(routed, [r["usage"] for r in records if r.get("usage")])
    return out


def _routes(routed: list[tuple[dict, Any]], usage: list[dict]) -> dict[str, Any]:
    """How many questions went to the LLM, and Hit@1 on each route."""
    up = [s for r, s in routed if r["escalated"]]
    kept = [s for r, s in routed if not r["escalated"]]
    return {
        "below": next((r.get("escalate_below") for r, _ in routed if r.get("escalate_below") is not None), None),
        "n": len(routed),
        "escalated": len(up),
        "share": 100 * len(up) / len(routed),
        "hit1_escalated": 100 * sum(s.hit1 for s in up) / max(len(up), 1),
        "hit1_kept": 100 * sum(s.hit1 for s in kept) / max(len(kept), 1),
        "prompt_tokens": sum(u["prompt_tokens"] for u in usage),
        "completion_tokens": sum(u["completion_tokens"] for u in usage),
    }


def summarize_records(records: Iterable[dict]) -> dict[str, Any]:
    """Overall and per-hop metrics, token averages and error counts from per-question records."""
    from kgdb.qa.metrics import QuestionScore

    records = sorted(records, key=lambda r: r["qid"])
    scores = [QuestionScore(**r["scores"]) for r in records]
    out: dict[str, Any] = {"overall": summarize(scores)}
    by_hop: dict[str, list[QuestionScore]] = {}
    for r, s in zip(records, scores):
        by_hop.setdefault(_hop_key(r.get("hop")), []).append(s)
    out["by_hop"] = {k: summarize(v) for k, v in sorted(by_hop.items())}
    n = max(1, len(records))
    out["tokens"] = _usage_averages([r["usage"] for r in records if r.get("usage")], n)
    planned = [r["planner_usage"] for r in records if r.get("planner_usage")]
    if planned:  # `--planner llm`: the planner's LLM calls, apart from the reasoner's
        out["tokens"]["planner"] = _usage_averages(planned, n)
    gie = [r["gold_in_evidence"] for r in records if "gold_in_evidence" in r]
    out["evidence_answer_recall"] = 100 * sum(gie) / n if gie else None
    out["errors"] = _error_counts(records)
    out.update(_judgement(records, scores))
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
    rules: MatchRules | None = None,
    run_settings: dict[str, Any] | None = None,
    on_done: Callable[[dict], None] | None = None,
    answer_in_kg: Callable[[QuestionRecord], list[str]] | None = None,
) -> dict[str, Any]:
    """Evaluate `questions`; resumable through `out_dir/results.jsonl`. Returns the metrics dict."""
    if concurrency < 1:
        raise InputError(f"--concurrency must be at least 1, got {concurrency}", path="--concurrency")
    rules = rules or MatchRules()
    private_dir(out_dir)
    results = out_dir / RESULTS_FILE
    settings = {
        **(run_settings or {}),
        **asker.settings_json(),
        "matching": asdict(rules),
        "kgdb_version": kgdb_version(),
    }
    _refuse_other_run(out_dir, settings, resuming=results.is_file())
    dump_json(settings, out_dir / "settings.json")
    done = read_done(results)

    def work(q: QuestionRecord) -> dict:
        # No retry here: the driver has retried each query with backoff for 10 s (kgdb.cypher.Graph), so
        # an error that reaches this point means the server is gone; the run stops and can be resumed.
        return question_record(
            asker, q, rules, (lambda: _answers_in_graph(asker, answer_in_kg, q)) if answer_in_kg else None
        )

    failure = _run_concurrently(work, [q for q in questions if q.id not in done], done, results, concurrency, on_done)
    if failure is not None:
        kept = sum(1 for q in questions if q.id in done)
        what = "LLM call" if isinstance(failure, LLMUnavailableError) else "query"
        raise type(failure)(
            f"{' '.join(str(failure).split())}; evaluation stopped: {kept} of {len(questions)} questions are kept in "
            f"{results}, none recorded from a failed {what}; run the same command again to resume"
        ) from failure
    wanted = {q.id for q in questions}
    metrics = summarize_records(r for qid, r in done.items() if qid in wanted)
    metrics["settings"] = settings
    dump_json(metrics, out_dir / "metrics.json")
    return metrics


def _refuse_other_run(out_dir: Path, settings: dict[str, Any], resuming: bool) -> None:
    """InputError when `out_dir` holds results recorded with other settings: resuming would mix two runs."""
    previous = out_dir / "settings.json"
    if not (previous.is_file() and resuming):
        return
    old = json.loads(previous.read_text(encoding="utf-8"))
    # hops and cap change every retrieved subgraph (the default cap moved from 500 to 100)
    keys = ("retriever", "checkpoint", "k", "hops", "cap", "format", "reasoner", "questions", "split")
    changed = [k for k in keys if _chosen(old.get(k)) != _chosen(settings.get(k))]
    if changed:
        raise InputError(
            f"{out_dir} holds results of a different run ({', '.join(changed)} differ); use another --out",
            path=out_dir,
        )


def _chosen(value: Any) -> Any:
    """A setting as the user chose it: without the facts an LLM endpoint reported about itself (context,
    slots), which a server that is down, or restarted, reports otherwise; resuming then says why it stops."""
    if isinstance(value, dict) and "endpoint" in value:
        return {k: v for k, v in value.items() if k != "endpoint"}
    return value


def _run_concurrently(
    work: Callable[[QuestionRecord], dict],
    todo: list[QuestionRecord],
    done: dict[str, dict],
    results: Path,
    concurrency: int,
    on_done: Callable[[dict], None] | None,
) -> KgdbError | None:
    """Answer `todo` on `concurrency` threads, appending each record to `results` as it finishes (and
    to `done`); the first DatabaseError or LLMUnavailableError stops the run, keeping what was recorded,
    and is returned."""
    lock = threading.Lock()
    stop = threading.Event()
    with open_results(results) as fh, ThreadPoolExecutor(max_workers=concurrency) as pool:
        pending: set[Future] = set()
        queue = iter(todo)

        def submit_more() -> None:
            while len(pending) < 2 * concurrency and not stop.is_set():
                q = next(queue, None)
                if q is None:
                    return
                pending.add(pool.submit(work, q))

        submit_more()
        failure: KgdbError | None = None
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in finished:
                pending.discard(f)
                try:
                    rec = f.result()
                except RUN_STOPPERS as exc:  # the rest of the run would only record failures: stop it
                    failure = failure or exc
                    stop.set()
                    continue
                with lock:
                    fh.write(json.dumps(rec, sort_keys=True, default=str) + "\n")
                    fh.flush()
                    done[rec["qid"]] = rec
                if on_done:
                    on_done(rec)
            submit_more()
    return failure
