"""`kgdb label`: LLM-refined training labels (RAPL's rational paths, ReG's S(I)), stored in the graph.

Per training question: fetch its subgraph exactly as training does (same hops and cap), build the
stage-1 candidate pool (`kgdb.data.label_paths`), ask the configured OpenAI-compatible LLM to select
(versioned template `kgdb/qa/prompts/label_<method>_v<n>.txt`), parse the reply, and store the
selection with its provenance through `kgdb.cypher.labels`. A reply without a usable `ans:` line gets
one follow-up turn, then the question is recorded as `failed` (asked again by the next run); so is an
endpoint error left after the client's retries, except before any call has succeeded: then the
settings are wrong and the run stops with the error.

Resumable: questions already labelled by the same method, model and prompt version are skipped.
LLM calls run `concurrency` at a time in threads; fetching and writing stay on the calling thread.
"""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Callable

import numpy as np

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.cypher.fetching import fetch
from kgdb.cypher.labels import Labelling, LabelPathRow, labelled_qids, write_labelling
from kgdb.cypher.linking import existing_entities
from kgdb.data.label_paths import MAX_MEMBERS, METHODS, CandidatePool, Selection, build_pool, numbered_lines, parse_selection, render_path, walk
from kgdb.data.questions import QuestionRecord, read_questions
from kgdb.errors import InputError, KgdbError
from kgdb.qa.prompts import load_template, normalise_question
from kgdb.qa.reasoners.base import LLMError, Reasoning

FOLLOW_UP = (
    'Your reply has no line of the form "ans: Path N". Answer again with only those lines, one per '
    'selected path, using the numbers of the list above; write "ans: none" if no path fits.'
)
MAX_ANSWER_NAMES = 10


class LLMNotConfigured(KgdbError):
    """`kgdb label` needs an LLM and none is configured."""


@dataclass
class LabelReport:
    method: str
    model: str
    prompt_version: str
    dataset: str
    split: str
    selected: int  # questions of the split (after --limit)
    already: int  # skipped: labelled before by this method / model / prompt version
    status: Counter = field(default_factory=Counter)  # ok / none / no_candidates / failed
    paths: int = 0
    candidates: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: list[str] = field(default_factory=list)  # "qid: reason"
    seconds: float = 0.0

    @property
    def nothing_to_do(self) -> bool:
        return self.already == self.selected


def require_llm(settings: Settings) -> None:
    if not settings.llm_model:
        raise LLMNotConfigured(
            "no LLM configured: set KGDB_LLM_MODEL (and KGDB_LLM_BASE_URL for a non-OpenAI endpoint, KGDB_LLM_API_KEY if it "
            "needs one) to label with an LLM; until then `kgdb train NAME --labels shortest` trains on shortest-path labels"
        )


def build_messages(method: str, version: int, question: str, lines: list[str], answers: list[str]) -> tuple[str, list[dict[str, str]]]:
    template = load_template(f"label_{method}", version)
    shown = ", ".join(answers[:MAX_ANSWER_NAMES]) + (f" (+{len(answers) - MAX_ANSWER_NAMES} more)" if len(answers) > MAX_ANSWER_NAMES else "")
    user = Template(template.sections["user"]).safe_substitute(
        evidence="\n".join(lines), question=normalise_question(question), answers=shown or "(none in the graph)"
    )
    return template.name, [
        {"role": "system", "content": template.sections["system"]},
        {"role": "user", "content": template.sections["example_user"]},
        {"role": "assistant", "content": template.sections["example_assistant"]},
        {"role": "user", "content": user},
    ]


@dataclass
class _Asked:
    selection: Selection
    reply: str
    usage: Reasoning
    error: str | None = None


def _ask(llm, messages: list[dict[str, str]], n: int) -> _Asked:
    """One selection call, plus one follow-up turn when the reply has no usable `ans:` line."""
    usage = Reasoning(answers=[], reply="", reasoner=llm.name, llm_used=True)
    try:
        reply = llm.complete(messages, usage)
        selection = parse_selection(reply, n)
        if selection.status == "malformed":
            second = llm.complete([*messages, {"role": "assistant", "content": reply}, {"role": "user", "content": FOLLOW_UP}], usage)
            reply = reply + "\n\n--- follow-up ---\n" + second
            selection = parse_selection(second, n)
    except LLMError as exc:
        return _Asked(Selection("malformed", [], []), "", usage, str(exc))
    error = "no usable 'ans: Path N' line after one retry" if selection.status == "malformed" else None
    return _Asked(selection, reply, usage, error)


def selected_paths(sg, pool: CandidatePool, selection: Selection) -> list[LabelPathRow]:
    """The selected candidates' member paths, as rows to store (rank = order in the reply)."""
    rows = []
    for rank, idx in enumerate(selection.indices, 1):
        cand = pool.candidates[idx]
        for start, triples in list(zip(cand.starts, cand.paths))[:MAX_MEMBERS]:
            nodes, _ = walk(sg, start, triples)
            rows.append(
                LabelPathRow(
                    rank=rank, candidate=idx + 1, kind=cand.kind, text=render_path(sg, start, triples),
                    start=sg.entity_ids[nodes[0]], end=sg.entity_ids[nodes[-1]],
                    heads=[sg.entity_ids[int(sg.head[i])] for i in triples],
                    relations=[sg.relation_names[i] for i in triples],
                    tails=[sg.entity_ids[int(sg.tail[i])] for i in triples],
                )
            )
    return rows


def label_questions(
    graph: Graph,
    settings: Settings,
    questions: Path,
    method: str,
    *,
    split: str = "train",
    limit: int | None = None,
    concurrency: int = 4,
    hops: int = 2,
    cap: int | None = None,
    prompt_version: int = 1,
    on_start: Callable[[int], None] = lambda total: None,
    on_done: Callable[[str, LabelReport], None] = lambda status, report: None,
) -> LabelReport:
    """Label the split's questions that this method / model / prompt version has not labelled yet."""
    from kgdb.cypher.tables import graph_fingerprint
    from kgdb.embeddings import get_embedder
    from kgdb.qa.reasoners.openai_compatible import OpenAIReasoner

    if method not in METHODS:
        raise InputError(f"unknown label method {method!r}; choose one of {', '.join(METHODS)}", path="--method")
    if concurrency < 1:
        raise InputError(f"must be at least 1, got {concurrency}", path="--concurrency")
    require_llm(settings)
    model = settings.llm_model or ""
    template = load_template(f"label_{method}", prompt_version).name
    qs = read_questions(questions)
    records = qs.split(split)[:limit]  # splits are in file order, so a prefix is a fixed subsample
    start = time.perf_counter()
    done = labelled_qids(graph, [q.id for q in records], method, model, template)
    report = LabelReport(method, model, template, qs.dataset, split, len(records), sum(1 for q in records if q.id in done))
    todo = [q for q in records if q.id not in done]
    if not todo:
        return report
    on_start(len(todo))
    llm = OpenAIReasoner.from_settings(settings)
    _, info = graph_fingerprint(graph)
    embedder = get_embedder(info.get("model") or settings.embedding_model, settings.device, settings.embedding_batch_size)
    embeddings = embedder.encode([q.text for q in todo])

    def store(lab: Labelling) -> None:
        report.paths += write_labelling(graph, lab)
        report.status[lab.status] += 1
        report.calls += lab.calls
        report.prompt_tokens += lab.prompt_tokens
        report.completion_tokens += lab.completion_tokens
        if lab.status == "failed":
            report.failures.append(f"{lab.qid}: {lab.error}")
        on_done(lab.status, report)

    def finish(fut: Future, q: QuestionRecord, sg, pool: CandidatePool) -> None:
        asked: _Asked = fut.result()
        lab = Labelling(q.id, method, model, template, asked.selection.status if not asked.error else "failed",
                        candidates=len(pool.candidates), raw_candidates=pool.raw, calls=asked.usage.calls,
                        prompt_tokens=asked.usage.prompt_tokens, completion_tokens=asked.usage.completion_tokens,
                        error=asked.error, reply=asked.reply)
        if asked.error and asked.usage.calls == 0 and report.calls == 0:
            # No call has ever succeeded: the endpoint or its settings are wrong (key, URL, model), so
            # stop with the client's clear error instead of recording every question as failed.
            raise LLMError(asked.error)
        if lab.status == "ok":
            lab.paths = selected_paths(sg, pool, asked.selection)
        store(lab)

    pending: dict[Future, tuple] = {}
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="kgdb-label") as pool_exec:
        try:
            for q, emb in zip(todo, embeddings):
                sg, pool = _stage_one(graph, q, np.asarray(emb), method, hops, cap, settings)
                if pool is None or not pool.candidates:
                    store(Labelling(q.id, method, model, template, "no_candidates", raw_candidates=0 if pool is None else pool.raw))
                    continue
                report.candidates += len(pool.candidates)
                _, messages = build_messages(method, prompt_version, q.text, numbered_lines(sg, pool), pool.answer_names)
                pending[pool_exec.submit(_ask, llm, messages, len(pool.candidates))] = (q, sg, pool)
                while len(pending) >= 2 * concurrency:  # bounded look-ahead: stage 1 stays just ahead of the LLM
                    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in finished:
                        finish(fut, *pending.pop(fut))
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    finish(fut, *pending.pop(fut))
        except BaseException:
            for fut in pending:
                fut.cancel()
            raise
    report.seconds = time.perf_counter() - start
    return report


def _stage_one(graph: Graph, q: QuestionRecord, emb: np.ndarray, method: str, hops: int, cap: int | None, settings: Settings):
    """The question's subgraph (as training fetches it) and its candidate pool; (None, None) when
    no topic or no answer is in the graph."""
    topics = existing_entities(graph, q.topics)
    answers = existing_entities(graph, q.answers)
    if not topics or not answers:
        return None, None
    sg = fetch(graph, topics, emb, hops=hops, cap=cap, question=q.text, qid=q.id, chunk=settings.fetch_chunk,
               max_triples=settings.fetch_max_triples, max_hubs=settings.fetch_max_hubs)
    return sg, build_pool(method, sg, answers)
