"""`kgdb ask` and `kgdb eval qa`: retrieval → evidence → prompt → reasoner → parsed, grounded answers.

`AskPipeline.ask()` runs one question: link (or resolve the given topics) → topic-centred subgraph →
retriever scores → write-back (a run id) → evidence chains (ReG reorganisation, from the run) →
prompt in the chosen format → reasoner (OpenAI-compatible, vLLM, or extractive without an LLM) →
answers, each marked grounded when it names an entity of the retrieved evidence.

`evaluate_qa()` runs a question set through the same pipeline with bounded concurrency, appends one
JSON line per question to `results.jsonl` (a rerun skips the questions already there, so a crash
resumes where it stopped) and writes `metrics.json` and `settings.json` beside it.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from kgdb.config import Settings, dump_json
from kgdb.cypher import Graph, query
from kgdb.errors import InputError, KgdbError
from kgdb.models.answers import is_mid
from kgdb.models.datasets import QuestionRecord
from kgdb.models.prompts import FORMATS, Prompt, build_prompt, render_triple
from kgdb.models.qa_metrics import MatchRules, normalize, score_question, summarize
from kgdb.models.reasoners import Evidence, LLMError, Reasoning, make_reasoner

BROWSER_QUERY = "browser/evidence_chains"
ASK_STAGES = ("embed", "link", "fetch", "featurise", "score", "write", "chains", "prompt", "reason")


@dataclass
class AnswerEvidence:
    answer: str
    grounded: bool  # names an entity of the retrieved evidence
    entity_id: str | None
    evidence: list[str]  # chain / triple lines it rests on, best first


@dataclass
class AskResult:
    question: str
    qid: str | None
    retriever: str
    retriever_note: str | None  # e.g. the fallback to cosine
    k: int
    run: str | None
    topics: list[str]
    topic_names: list[str]
    format: str
    evidence_lines: list[str]
    prompt: Prompt
    reasoning: Reasoning | None
    answers: list[AnswerEvidence]
    error: str | None  # the reasoner failed; retrieval is still shown
    browser_query: str | None
    timings: dict[str, float] = field(default_factory=dict)  # milliseconds
    evidence_entities: list[str] = field(default_factory=list)  # names in the retrieved triples
    subgraph: Any = field(default=None, repr=False)  # the fetched kgdb.subgraph.Subgraph

    def to_json(self, show_prompt: bool = False) -> dict[str, Any]:
        r = self.reasoning
        out = {
            "question": self.question,
            "qid": self.qid,
            "retriever": self.retriever,
            "retriever_note": self.retriever_note,
            "k": self.k,
            "run": self.run,
            "topics": self.topics,
            "topic_names": self.topic_names,
            "format": self.format,
            "prompt_template": self.prompt.template,
            "reasoner": r.reasoner if r else None,
            "llm_used": r.llm_used if r else None,
            "answers": [asdict(a) for a in self.answers],
            "refused": r.refused if r else None,
            "malformed": r.malformed if r else None,
            "reply": r.reply if r else None,
            "usage": {"prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens, "calls": r.calls} if r else None,
            "error": self.error,
            "evidence": self.evidence_lines,
            "browser_query": self.browser_query,
            "timings_ms": {k: round(v, 3) for k, v in self.timings.items()},
        }
        if show_prompt:
            out["prompt"] = self.prompt.messages
        return out


class AskPipeline:
    """Retriever + reasoner for one graph; `ask()` answers one question."""

    def __init__(
        self,
        graph: Graph,
        settings: Settings,
        *,
        retriever: str = "subgraphrag",
        checkpoint: str | None = None,
        k: int = 100,
        fmt: str = "triples",
        reasoner: str | Any = "auto",
        hops: int = 2,
        chain_hops: int = 2,
        write: bool = True,
        chains: bool | None = None,
        prompt_version: int = 1,
    ):
        from kgdb.pipeline import RetrievePipeline  # torch: imported only when a pipeline is built

        if fmt not in FORMATS:
            raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}", path="--format")
        if fmt in ("chains", "paths") and not write:
            raise InputError("the chains and paths formats are built from the written-back run; drop --no-write", path="--format")
        self.graph, self.settings = graph, settings
        self.k, self.fmt, self.chain_hops, self.write, self.prompt_version = k, fmt, chain_hops, write, prompt_version
        # Chains are needed for the chains/paths prompts; for triples they only decorate the output.
        self.chains = (fmt != "triples" or write) if chains is None else (chains and write)
        self.retriever_note: str | None = None
        try:
            self.retrieval = RetrievePipeline(graph, settings, retriever, checkpoint, k=k, hops=hops, write=write)
        except KgdbError as exc:
            if retriever != "subgraphrag" or checkpoint or "checkpoint" not in str(exc):
                raise
            self.retrieval = RetrievePipeline(graph, settings, "cosine", None, k=k, hops=hops, write=write)
            self.retriever_note = f"no trained subgraphrag checkpoint for this graph, so the cosine retriever was used ({exc})"
        self.reasoner = make_reasoner(reasoner, settings) if isinstance(reasoner, str) else reasoner
        if not self.reasoner.uses_llm and hasattr(self.reasoner, "embedder"):
            self.reasoner.embedder = self.retrieval.embedder  # one model in memory

    def settings_json(self) -> dict[str, Any]:
        r = self.reasoner
        return {
            "retriever": self.retrieval.retriever,
            "retriever_note": self.retriever_note,
            "checkpoint": self.retrieval.checkpoint.name if self.retrieval.checkpoint else None,
            "k": self.k,
            "hops": self.retrieval.hops,
            "format": self.fmt,
            "prompt_template": f"{self.fmt}_v{self.prompt_version}",
            "chain_hops": self.chain_hops,
            "write_back": self.write,
            "reasoner": r.settings() if hasattr(r, "settings") else {"reasoner": r.name},
            "embedding_model": self.retrieval.embedding_model,
            "neo4j_uri": self.settings.neo4j_uri,
        }

    def ask(self, question: str, topics: list[str] | None = None, qid: str | None = None, q_emb: np.ndarray | None = None) -> AskResult:
        if not question or not question.strip():
            raise InputError("the question is empty: ask something, e.g. kgdb ask \"what is the capital of France?\"", path="QUESTION")
        linked, link_ms, embed_ms = [], 0.0, 0.0
        if not topics:
            # Link here (not inside the retrieval pipeline) to refuse a question that names no entity
            # before anything is written back: vector-only candidates are not mentions.
            from kgdb.models import db

            t = time.perf_counter()
            if q_emb is None:
                q_emb = self.retrieval.embed([question])[0]
            embed_ms = _ms(t)
            t = time.perf_counter()
            linked = db.link_entities(self.graph, question, q_emb, k=max(5, self.retrieval.link_top))
            link_ms = _ms(t)
            mentioned = [e for e in linked if e.mention]
            if not mentioned:
                near = ", ".join(repr(e.name) for e in linked[:3]) or "none"
                raise KgdbError(
                    f"no entity of the graph is mentioned in {question!r} (closest by meaning: {near}); "
                    "name one in the question or pass --topic NAME"
                )
            topics = [e.id for e in mentioned[: self.retrieval.link_top]]
        res = self.retrieval.run(question, topics, qid, q_emb=q_emb)
        timings = dict(res.timings)
        timings["link"] = timings.get("link", 0.0) + link_ms
        timings["embed"] = timings.get("embed", 0.0) + embed_ms
        sg = res.subgraph
        id_to_name = dict(zip(sg.entity_ids, sg.entity_names))
        cvt = {sg.entity_ids[i] for i in np.flatnonzero(sg.is_cvt).tolist()}
        top = res.top

        t = time.perf_counter()
        chains = None
        if self.chains and res.run:
            from kgdb.cypher.chains import evidence_chains

            chains = evidence_chains(self.graph, res.run, max_hops=self.chain_hops)
        timings["chains"] = _ms(t)

        t = time.perf_counter()
        if self.fmt == "triples":
            lines = [render_triple(x.head, x.relation, x.tail) for x in top]
        else:
            rendered = [c.render() for c in chains.chains] if chains else []
            lines = rendered if self.fmt == "chains" else [_as_path(line) for line in rendered]
        prompt = build_prompt(self.fmt, question, lines, self.prompt_version)
        timings["prompt"] = _ms(t)

        t = time.perf_counter()
        evidence = Evidence(question, top, list(res.topics), [id_to_name.get(x, x) for x in res.topics], cvt)
        names = {i: n for i, n in id_to_name.items() if is_mid(i) and n != i}
        reasoning, error = None, None
        try:
            reasoning = self.reasoner.reason(prompt, evidence, names)
        except LLMError as exc:
            error = str(exc)
        timings["reason"] = _ms(t)

        answers = ground_answers(reasoning.answers if reasoning else [], reasoning, top, chains, id_to_name)
        evidence_names = list(dict.fromkeys(n for x in top for n in (x.head, x.tail)))
        return AskResult(
            question=question,
            qid=qid,
            retriever=res.retriever,
            retriever_note=self.retriever_note,
            k=self.k,
            run=res.run,
            topics=list(res.topics),
            topic_names=evidence.topic_names,
            format=self.fmt,
            evidence_lines=prompt_lines(prompt, lines),
            prompt=prompt,
            reasoning=reasoning,
            answers=answers,
            error=error,
            browser_query=browser_query(res.run),
            timings=timings,
            evidence_entities=evidence_names,
            subgraph=sg,
        )


def _as_path(chain_line: str) -> str:
    """A chain line without the brackets around relations: RAPL/RRP path style."""
    return chain_line.replace("→ [", "→ ").replace("] →", " →")


def prompt_lines(prompt: Prompt, lines: list[str]) -> list[str]:
    return [f"Chain {i}. {line}" for i, line in enumerate(lines, 1)] if prompt.template.startswith("chains") else list(lines)


def ground_answers(answers: list[str], reasoning: Reasoning | None, top: list[Any], chains: Any, id_to_name: dict[str, str]) -> list[AnswerEvidence]:
    """Mark each answer grounded when it names an entity of the retrieved triples; attach its evidence."""
    by_norm: dict[str, str] = {}
    for x in top:
        for eid, name in ((x.head_id, x.head), (x.tail_id, x.tail)):
            by_norm.setdefault(normalize(name), eid)
            by_norm.setdefault(normalize(eid), eid)
    out = []
    for answer in answers:
        entity = by_norm.get(normalize(answer))
        lines: list[str] = []
        support = reasoning.support.get(answer) if reasoning else None
        if support:  # the extractive reasoner knows the exact route
            lines = [render_triple(top[i].head, top[i].relation, top[i].tail) for i in support]
        if not lines and chains is not None and entity is not None:
            found = [c for c in chains.chains if entity in c.targets]
            lines = [c.render() for c in sorted(found, key=lambda c: c.hops)][:3]
        if not lines and entity is not None:
            lines = [render_triple(x.head, x.relation, x.tail) for x in top if entity in (x.head_id, x.tail_id)][:3]
        out.append(AnswerEvidence(answer, entity is not None, entity, lines))
    return out


def browser_query(run: str | None) -> str | None:
    """Paste into Neo4j Browser: the `:param` line, then the named query that draws the run's evidence."""
    if not run:
        return None
    try:
        text = query(BROWSER_QUERY)
    except KgdbError:
        return None
    return f":param run => {json.dumps(run)}\n\n{text.strip()}"


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


# --------------------------------------------------------------------------------------------
# Evaluation


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
        base.update(error=msg, stage="retrieval", answers=[], usage=None)
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
        error=res.error,
        stage="reasoner" if res.error else None,
        answer_in_kg=bool(answer_ids),
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
    from kgdb.models.cache import answer_hops

    sg = res.subgraph
    if sg is None or not answer_ids:
        return 0 if not answer_ids else None
    pos = {e: i for i, e in enumerate(sg.entity_ids)}
    local = np.asarray([pos[a] for a in answer_ids if a in pos], dtype=np.int64)
    return answer_hops(sg.num_nodes, sg.head, sg.tail, sg.topic, local)


def summarize_records(records: Iterable[dict]) -> dict[str, Any]:
    """Overall and per-hop metrics, token averages and error counts from per-question records."""
    from kgdb.models.qa_metrics import QuestionScore

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
    gie = [r["gold_in_evidence"] for r in records if "gold_in_evidence" in r]
    out["evidence_answer_recall"] = 100 * sum(gie) / n if gie else None
    out["errors"] = {
        "retrieval": sum(1 for r in records if r.get("stage") == "retrieval"),
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
        keys = ("retriever", "k", "format", "reasoner", "questions", "split")
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
