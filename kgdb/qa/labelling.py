"""`kgdb label`: LLM-refined training labels (RAPL's rational paths, ReG's S(I), RAPL's relation
targeting R_*), stored in the graph.

Per training question: fetch its subgraph exactly as training does (same hops and cap), build the
stage-1 candidate pool (`kgdb.data.label_paths`; for `rapl-relations` the topic entities' relations,
`kgdb.data.label_relations`), ask the configured OpenAI-compatible LLM to select
(versioned template `kgdb/qa/prompts/label_<method>_v<n>.txt`, `-` written `_`), parse the reply, and store the
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
from typing import Callable, Sequence

import numpy as np

from kgdb.config import Settings
from kgdb.cypher import Graph
from kgdb.cypher.fetching import fetch
from kgdb.cypher.labels import Labelling, LabelPathRow, LabelRelationRow, labelled_qids, write_labelling
from kgdb.cypher.linking import existing_entities
from kgdb.data.label_paths import (
    MAX_MEMBERS,
    METHODS,
    CandidatePool,
    Selection,
    build_pool,
    numbered_lines,
    parse_selection,
    render_path,
    walk,
)
from kgdb.data.label_relations import RELATIONS_METHOD, RelationPool, parse_relations, relation_lines, relation_pool
from kgdb.data.questions import QuestionRecord, read_questions
from kgdb.errors import InputError, KgdbError
from kgdb.qa.prompts import load_template, normalise_question
from kgdb.qa.reasoners.base import LLMError, Reasoning

FOLLOW_UP = (
    'Your reply has no line of the form "ans: Path N". Answer again with only those lines, one per '
    'selected path, using the numbers of the list above; write "ans: none" if no path fits.'
)
FOLLOW_UP_RELATIONS = (
    'Your reply has no line of the form "ans: → relation" naming a listed relation. Answer again with only '
    'those lines, one per chosen relation, the arrow and the name exactly as listed above; write "ans: none" '
    "if no relation fits."
)
MAX_ANSWER_NAMES = 10
LABEL_METHODS = (*METHODS, RELATIONS_METHOD)  # path selections, then relation targeting


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
    relations: int = 0  # rapl-relations: relations stored (R_* sizes summed)
    ignored: int = 0  # reply items that named no candidate (unknown relation, path out of range)
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


def template_format(method: str) -> str:
    """The prompt format of a label method: `label_<method>`, with `-` written `_` (file names)."""
    return "label_" + method.replace("-", "_")


def _names(names: list[str]) -> str:
    return ", ".join(names[:MAX_ANSWER_NAMES]) + (
        f" (+{len(names) - MAX_ANSWER_NAMES} more)" if len(names) > MAX_ANSWER_NAMES else ""
    )


def build_messages(
    method: str, version: int, question: str, lines: list[str], answers: list[str], entities: Sequence[str] = ()
) -> tuple[str, list[dict[str, str]]]:
    template = load_template(template_format(method), version)
    user = Template(template.sections["user"]).safe_substitute(
        evidence="\n".join(lines),
        question=normalise_question(question),
        answers=_names(answers) or "(none in the graph)",
        entities=_names(list(entities)),
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


@dataclass
class _Prepared:
    """What one question's LLM call needs and how its reply is read (path methods vs relation targeting)."""

    messages: list[dict[str, str]]
    parse: Callable[[str], Selection]
    follow_up: str
    expected: str  # the reply line that was missing, for the failure message


def _ask(llm, prepared: _Prepared) -> _Asked:
    """One selection call, plus one follow-up turn when the reply has no usable `ans:` line."""
    usage = Reasoning(answers=[], reply="", reasoner=llm.name, llm_used=True)
    messages = prepared.messages
    deadline = llm.deadline()  # one for the call and its follow-up turn, as a question's calls share one
    try:
        reply = llm.complete(messages, usage, deadline=deadline)
        selection = prepared.parse(reply)
        if selection.status == "malformed":
            follow_up = [
                *messages,
                {"role": "assistant", "content": reply},
                {"role": "user", "content": prepared.follow_up},
            ]
            second = llm.complete(follow_up, usage, deadline=deadline)
            reply = reply + "\n\n--- follow-up ---\n" + second
            selection = prepared.parse(second)
    except LLMError as exc:
        return _Asked(Selection("malformed", [], []), "", usage, str(exc))
    error = f"no usable '{prepared.expected}' line after one retry" if selection.status == "malformed" else None
    return _Asked(selection, reply, usage, error)


def _prepare(method: str, prompt_version: int, q: QuestionRecord, sg, pool: CandidatePool | RelationPool) -> _Prepared:
    if isinstance(pool, RelationPool):
        _, messages = build_messages(method, prompt_version, q.text, relation_lines(pool), [], pool.topic_names)
        candidates = pool.candidates
        return _Prepared(
            messages, lambda reply: parse_relations(reply, candidates), FOLLOW_UP_RELATIONS, "ans: → relation"
        )
    _, messages = build_messages(method, prompt_version, q.text, numbered_lines(sg, pool), pool.answer_names)
    n = len(pool.candidates)
    return _Prepared(messages, lambda reply: parse_selection(reply, n), FOLLOW_UP, "ans: Path N")


def selected_relations(pool: RelationPool, selection: Selection) -> list[LabelRelationRow]:
    """The selected candidate relations, as rows to store (rank = order in the reply)."""
    return [
        LabelRelationRow(rank, pool.candidates[i].name, pool.candidates[i].direction)
        for rank, i in enumerate(selection.indices, 1)
    ]


def selected_paths(sg, pool: CandidatePool, selection: Selection) -> list[LabelPathRow]:
    """The selected candidates' member paths, as rows to store (rank = order in the reply)."""
    rows = []
    for rank, idx in enumerate(selection.indices, 1):
        cand = pool.candidates[idx]
        for start, triples in list(zip(cand.starts, cand.paths))[:MAX_MEMBERS]:
            nodes, _ = walk(sg, start, triples)
            rows.append(
                LabelPathRow(
                    rank=rank,
                    candidate=idx + 1,
                    kind=cand.kind,
                    text=render_path(sg, start, triples),
                    start=sg.entity_ids[nodes[0]],
                    end=sg.entity_ids[nodes[-1]],
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

    _check_run(settings, method, concurrency)
    model = settings.llm_model or ""
    template = load_template(template_format(method), prompt_version).name
    qs = read_questions(questions)
    records = qs.split(split)[:limit]  # splits are in file order, so a prefix is a fixed subsample
    start = time.perf_counter()
    done = labelled_qids(graph, [q.id for q in records], method, model, template)
    report = LabelReport(
        method, model, template, qs.dataset, split, len(records), sum(1 for q in records if q.id in done)
    )
    todo = [q for q in records if q.id not in done]
    if not todo:
        return report
    on_start(len(todo))
    llm = OpenAIReasoner.from_settings(settings)
    _, info = graph_fingerprint(graph)
    embedder = get_embedder(
        info.get("model") or settings.embedding_model, settings.device, settings.embedding_batch_size
    )
    embeddings = embedder.encode([q.text for q in todo])

    run = _LabelRun(graph, method, model, template, report, on_done)
    pending: dict[Future, tuple] = {}
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="kgdb-label") as pool_exec:
        try:
            for q, emb in zip(todo, embeddings):
                sg, pool = _stage_one(graph, q, np.asarray(emb), method, hops, cap, settings)
                if pool is None or not pool.candidates:
                    raw = 0 if pool is None else pool.raw
                    run.store(Labelling(q.id, method, model, template, "no_candidates", raw_candidates=raw))
                    continue
                report.candidates += len(pool.candidates)
                pending[pool_exec.submit(_ask, llm, _prepare(method, prompt_version, q, sg, pool))] = (q, sg, pool)
                while len(pending) >= 2 * concurrency:  # bounded look-ahead: stage 1 stays just ahead of the LLM
                    run.drain(pending)
            while pending:
                run.drain(pending)
        except BaseException:
            for fut in pending:
                fut.cancel()
            raise
    report.seconds = time.perf_counter() - start
    return report


def _check_run(settings: Settings, method: str, concurrency: int) -> None:
    if method not in LABEL_METHODS:
        raise InputError(f"unknown label method {method!r}; choose one of {', '.join(LABEL_METHODS)}", path="--method")
    if concurrency < 1:
        raise InputError(f"must be at least 1, got {concurrency}", path="--concurrency")
    require_llm(settings)


@dataclass
class _LabelRun:
    """One labelling run's constants and report: turns each finished LLM call into a stored Labelling."""

    graph: Graph
    method: str
    model: str
    template: str
    report: LabelReport
    on_done: Callable[[str, LabelReport], None]

    def drain(self, pending: dict[Future, tuple]) -> None:
        """Store the calls that have finished (waiting for at least one)."""
        finished, _ = wait(pending, return_when=FIRST_COMPLETED)
        for fut in finished:
            self.finish(fut, *pending.pop(fut))

    def store(self, lab: Labelling) -> None:
        report = self.report
        report.paths += write_labelling(self.graph, lab)
        report.relations += len(lab.relations)
        report.ignored += lab.ignored
        report.status[lab.status] += 1
        report.calls += lab.calls
        report.prompt_tokens += lab.prompt_tokens
        report.completion_tokens += lab.completion_tokens
        if lab.status == "failed":
            report.failures.append(f"{lab.qid}: {lab.error}")
        self.on_done(lab.status, report)

    def finish(self, fut: Future, q: QuestionRecord, sg, pool: CandidatePool | RelationPool) -> None:
        asked: _Asked = fut.result()
        lab = Labelling(
            q.id,
            self.method,
            self.model,
            self.template,
            asked.selection.status if not asked.error else "failed",
            candidates=len(pool.candidates),
            raw_candidates=pool.raw,
            calls=asked.usage.calls,
            prompt_tokens=asked.usage.prompt_tokens,
            completion_tokens=asked.usage.completion_tokens,
            error=asked.error,
            reply=asked.reply,
            ignored=len(asked.selection.ignored),
            topics=[sg.entity_ids[t] for t in dict.fromkeys(sg.topic.tolist())]
            if isinstance(pool, RelationPool)
            else [],
        )
        if asked.error and asked.usage.calls == 0 and self.report.calls == 0:
            # No call has ever succeeded: the endpoint or its settings are wrong (key, URL, model), so
            # stop with the client's clear error instead of recording every question as failed.
            raise LLMError(asked.error)
        if lab.status == "ok":
            if isinstance(pool, RelationPool):
                lab.relations = selected_relations(pool, asked.selection)
            else:
                lab.paths = selected_paths(sg, pool, asked.selection)
        self.store(lab)


def _stage_one(
    graph: Graph, q: QuestionRecord, emb: np.ndarray, method: str, hops: int, cap: int | None, settings: Settings
):
    """The question's subgraph (as training fetches it) and its candidate pool; (None, None) when
    no topic or no answer is in the graph (relation targeting too: without an answer in the graph
    the question has no target path, so its R_* would never be trained on)."""
    topics = existing_entities(graph, q.topics)
    answers = existing_entities(graph, q.answers)
    if not topics or not answers:
        return None, None
    sg = fetch(graph, topics, emb, hops=hops, cap=cap, question=q.text, qid=q.id, **settings.fetch_bounds)
    return sg, relation_pool(sg) if method == RELATIONS_METHOD else build_pool(method, sg, answers)
