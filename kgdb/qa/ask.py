"""`kgdb ask` and `kgdb eval qa`: retrieval → evidence → prompt → reasoner → parsed, grounded answers.

`AskPipeline.ask()` runs one question: link (or resolve the given topics) → topic-centred subgraph →
retriever scores → write-back (a run id) → evidence chains (ReG reorganisation, from the run) →
prompt in the chosen format → reasoner (OpenAI-compatible, vLLM, or extractive without an LLM) →
answers, each marked grounded when it names an entity of the retrieved evidence. Which retriever,
checkpoint and reasoner answer is the answering policy's choice (`kgdb.qa.policy`), made before the
pipeline is built.
"""

from __future__ import annotations

import json
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

import numpy as np

from kgdb.config import Settings
from kgdb.cypher import Graph, query
from kgdb.cypher.tables import fingerprint_read_once
from kgdb.errors import InputError, KgdbError
from kgdb.heap import freeze_loaded
from kgdb.ids import is_mid
from kgdb.pipeline.model_choice import Fallback
from kgdb.protocol import DescribedRetriever, LinkingRetriever, QuestionRetriever, Retrieval
from kgdb.qa.metrics import normalize
from kgdb.qa.planners import DEFAULT_PLANNER, build_planner
from kgdb.qa.policy import AnsweringPlan, AnswerRequest, choose_answering
from kgdb.qa.prompts import Prompt, build_prompt, path_line, render_triple
from kgdb.qa.question_retrievers import QUESTION_RETRIEVERS, AskOptions
from kgdb.qa.reasoners import AUTO, Evidence, LLMError, Reasoner, Reasoning, make_reasoner
from kgdb.qa.result import AnswerEvidence, AskResult
from kgdb.reading import QuestionReading, read_question

__all__ = ["AnswerEvidence", "AskPipeline", "AskResult", "answering_pipeline", "plan_for"]

BROWSER_QUERY = "browser/evidence_chains"
# The reasoner that answers, without an LLM, what the answer model is sure of (`AskPipeline(escalate_below=)`).
ESCALATION = "rrp"
ASK_STAGES = ("embed", "link", "fetch", "featurise", "score", "write", "chains", "prompt", "reason")


def answering_pipeline(
    graph: Graph,
    settings: Settings,
    *,
    retriever: str | None = None,
    reasoner: str | Reasoner = AUTO,
    checkpoint: str | None = None,
    fmt: str | None = None,
    planner: str = DEFAULT_PLANNER,
    **options: Any,
) -> "AskPipeline":
    """The pipeline `kgdb ask` and `Kgdb.ask` answer with: what `kgdb.qa.policy.choose_answering`
    plans for the request (`pipe.plan` says what and why), built as planned."""
    plan = plan_for(
        graph, settings, retriever=retriever, reasoner=reasoner, checkpoint=checkpoint, fmt=fmt, planner=planner
    )
    return AskPipeline(graph, settings, plan=plan, reasoner=reasoner, **options)


def plan_for(
    graph: Graph,
    settings: Settings,
    *,
    retriever: str | QuestionRetriever | None = None,
    reasoner: str | Reasoner = AUTO,
    checkpoint: str | None = None,
    fmt: str | None = None,
    planner: str = DEFAULT_PLANNER,
    fallback: Fallback = Fallback.STAND_IN,
) -> AnsweringPlan:
    """`choose_answering` for `AskPipeline`'s arguments (a retriever or reasoner object is used as it is)."""
    given_retriever = None if retriever is None or isinstance(retriever, str) else retriever.name
    given_reasoner = None if isinstance(reasoner, str) else reasoner.name
    request = AnswerRequest(
        retriever=retriever if isinstance(retriever, str) else None,
        checkpoint=checkpoint,
        reasoner=reasoner if isinstance(reasoner, str) else AUTO,
        planner=planner,
        fmt=fmt,
        fallback=fallback,
        given_retriever=given_retriever,
        given_reasoner=given_reasoner,
    )
    return choose_answering(graph, settings, request)


@dataclass
class _Built:
    """The retrieval `AskPipeline` built from a plan, with what it records about it."""

    retrieval: QuestionRetriever
    describe: Callable[[], dict[str, Any]]
    notes: list[str]
    embedder: Any = None
    embedding_model: str | None = None
    from_paths: bool = False  # it answers from relation paths (a reasoner that needs them can read it)


class AskPipeline:
    """Retriever + reasoner for one graph, as an `AnsweringPlan` names them; `ask()` answers one question.

    Without `plan`, the plan is chosen here (`kgdb.qa.policy.choose_answering`) from `retriever`
    (a registered tensor or question-level retriever's name, any `QuestionRetriever` object, or None:
    the policy's choice), `checkpoint`, `reasoner` (a registered name, `auto`, or a `Reasoner` object), `planner` and
    `fmt`. With `fallback`, a trainable retriever that has no checkpoint for this graph is replaced by
    a shipped checkpoint or the cosine baseline and the result says so (`retriever_note`); without
    it only the same method's shipped checkpoint may stand in, else the typed `NoCheckpointError`
    reaches the caller.
    """

    def __init__(
        self,
        graph: Graph,
        settings: Settings,
        *,
        retriever: str | QuestionRetriever | None = "subgraphrag",
        checkpoint: str | None = None,
        k: int = 100,
        fmt: str | None = "triples",
        reasoner: str | Reasoner = AUTO,
        hops: int | None = None,
        cap: int | None = None,
        chain_hops: int = 2,
        write: bool = True,
        chains: bool | None = None,
        prompt_version: int = 1,
        fallback: bool = True,
        planner: str = DEFAULT_PLANNER,
        plan: AnsweringPlan | None = None,
        escalate_below: float | None = None,
    ):
        for value, name in ((k, "--k"), (chain_hops, "--chain-hops")):
            if value < 1:  # every retriever, before anything is loaded (relation paths took k=0 as "no evidence")
                raise InputError(f"must be positive, got {value}", path=name)
        # every part loaded below asks for the graph's fingerprint: one read serves them all
        with fingerprint_read_once(graph):
            if plan is None:
                plan = plan_for(
                    graph,
                    settings,
                    retriever=retriever,
                    reasoner=reasoner,
                    checkpoint=checkpoint,
                    fmt=fmt,
                    planner=planner,
                    fallback=Fallback.STAND_IN if fallback else Fallback.SHIPPED,
                )
            if cap is not None and plan.retriever in QUESTION_RETRIEVERS:
                raise InputError(
                    f"{plan.retriever} fetches no topic-centred subgraph (it bounds what it reads itself); "
                    "--cap applies to subgraph retrievers",
                    path="--cap",
                )
            if plan.fmt in ("chains", "paths") and not write:
                raise InputError(
                    "the chains and paths formats are built from the written-back run; drop --no-write", path="--format"
                )
            self.graph, self.settings, self.plan = graph, settings, plan
            self.k, self.fmt, self.chain_hops, self.write = k, plan.fmt, chain_hops, write
            self.prompt_version = prompt_version
            # Chains are needed for the chains/paths prompts; for triples they only decorate the output.
            self.chains = (plan.fmt != "triples" or write) if chains is None else (chains and write)
            if retriever is None or isinstance(retriever, str):
                built = self._build(plan, hops=hops, cap=cap)
            else:
                built = given_retrieval(retriever)
            self.retrieval, self._built = built.retrieval, built
            self.retriever_note = "; ".join([*plan.notes, *built.notes]) or None
            # The retriever's question encoder goes to a reasoner that reads embeddings: one model in memory.
            if isinstance(reasoner, str):
                self.reasoner: Reasoner = make_reasoner(plan.reasoner, settings, embedder=built.embedder)
            else:
                self.reasoner = reasoner
            # Escalation: a question the answer model is sure of is answered without the LLM (`ESCALATION`)
            self.escalate_below, self._confident = escalate_below, None
            if escalate_below is not None:
                if not self.reasoner.uses_llm or not built.from_paths:
                    raise InputError(
                        "escalation sends the questions the answer model is unsure of to an LLM reasoner: it needs "
                        "the relation-paths retriever and an LLM (e.g. --reasoner candidates with KGDB_LLM_MODEL set)",
                        path="--escalate-below",
                    )
                self._confident = make_reasoner(ESCALATION, settings)

    def _build(self, plan: AnsweringPlan, *, hops: int | None, cap: int | None) -> _Built:
        """The retrieval the plan names, built through its registry; nothing is chosen here."""
        graph, settings, ckpt = self.graph, self.settings, plan.checkpoint
        kind = QUESTION_RETRIEVERS.find(plan.retriever)
        if kind is not None:
            path = str(ckpt.path) if ckpt is not None else None
            planner = build_planner(plan.planner, graph, settings, path) if plan.planner else None
            r = kind.build(graph, settings, AskOptions(path, self.k, self.write, planner))
            return _built(r, kind.from_paths)
        from kgdb.pipeline import RetrievePipeline  # torch: imported only when a torch model scores

        pipe = RetrievePipeline(graph, settings, plan.retriever, ckpt, k=self.k, hops=hops, cap=cap, write=self.write)
        return _Built(pipe, pipe.describe, [], pipe.embedder, pipe.embedding_model)

    def retrieval_settings(self) -> dict[str, Any]:
        """How evidence is fetched: the retriever's own description (checkpoint, hops, cap, ...)."""
        return self._built.describe()

    def settings_json(self) -> dict[str, Any]:
        return {
            **self.retrieval_settings(),
            "retriever_note": self.retriever_note,
            "plan": self.plan.to_json(),
            "k": self.k,
            "format": self.fmt,
            "prompt_template": f"{self.fmt}_v{self.prompt_version}",
            "chain_hops": self.chain_hops,
            "write_back": self.write,
            "reasoner": self.reasoner.settings(),
            "embedding_model": self._built.embedding_model,
            "neo4j_uri": self.settings.neo4j_uri,
        }

    def ask(
        self, question: str, topics: list[str] | None = None, qid: str | None = None, q_emb: np.ndarray | None = None
    ) -> AskResult:
        if not question or not question.strip():
            raise InputError(
                'the question is empty: ask something, e.g. kgdb ask "what is the capital of France?"', path="QUESTION"
            )
        # The retriever applies the one linking policy: a question naming no entity is refused
        # (NoTopicError) before anything is written back.
        extra = {"q_emb": q_emb} if q_emb is not None else {}
        reading = read_question(question)  # the one place the question's text is read
        res = self.retrieval.retrieve(reading, topics or None, qid=qid, **extra)
        timings = dict(res.timings)
        top = res.triples
        with _stage(timings, "chains"):
            chains = self._chains(res.run)
        with _stage(timings, "prompt"):
            lines = self._lines(res, chains)
            prompt = build_prompt(self.fmt, question, lines, self.prompt_version)
        with _stage(timings, "reason"):
            evidence = Evidence(
                question,
                top,
                list(res.topics),
                [res.names.get(x, x) for x in res.topics],
                res.cvt,
                paths=res.paths,
                from_paths=self._built.from_paths,
            )
            reasoner, escalated = self._route(res)
            reasoning, error = self._reason(reasoner, prompt, evidence, res.names)
        answers = ground_answers(reasoning.answers if reasoning else [], reasoning, top, chains, res.names)
        judged = _judged(res, reasoning)
        if judged is not None:  # the answers are the retriever's own, in the answer model's order
            probability = {e.id: e.confidence for e in res.entities}
            answers = [replace(a, confidence=probability.get(a.entity_id or "")) for a in answers]
        freeze_loaded()  # everything the first answer loaded lazily is loaded now
        notes = [n for n in [self.retriever_note, *res.notes] if n]
        return AskResult(
            question=question,
            qid=qid,
            retriever=res.retriever,
            retriever_note="; ".join(notes) or None,
            k=res.k,  # what the retriever passed (a path retriever: its adaptive number)
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
            evidence_entities=list(dict.fromkeys(n for x in top for n in (x.head, x.tail))),
            subgraph=res.subgraph,
            missing_topics=list(res.missing_topics),
            planner_usage=res.llm_usage,
            retrieval=self.retrieval_settings(),
            plan=self.plan.to_json(),
            reading=res.reading or reading,
            escalated=escalated,
            **_verdict(judged),
        )

    def read(self, question: str, topics: list[str] | None = None) -> QuestionReading:
        """The question read, and linked where the retriever links without retrieving (`--explain`)."""
        reading = read_question(question)
        return self.retrieval.read(reading, topics) if isinstance(self.retrieval, LinkingRetriever) else reading

    def _chains(self, run: str | None) -> Any:
        if not (self.chains and run):
            return None
        from kgdb.cypher.chains import evidence_chains

        return evidence_chains(self.graph, run, max_hops=self.chain_hops)

    def _lines(self, res: Retrieval, chains: Any) -> list[str]:
        """The evidence lines of the prompt, in the chosen format."""
        if self.fmt == "triples":
            return [render_triple(x.head, x.relation, x.tail) for x in res.triples]
        if self.fmt == "paths" and res.paths:  # the retriever ordered reasoning paths itself
            return [_as_path(p.render()) for p in res.paths]
        rendered = [c.render() for c in chains.chains] if chains else []
        return rendered if self.fmt == "chains" else [_as_path(line) for line in rendered]

    def _route(self, res: Retrieval) -> tuple[Reasoner, bool | None]:
        """The reasoner of this question and whether it was escalated (None: no escalation asked for): the
        no-LLM answers where the answer model's confidence reaches `escalate_below`, else the LLM reasoner."""
        if self._confident is None or self.escalate_below is None:
            return self.reasoner, None
        confidence = (res.judgement or {}).get("confidence")
        if confidence is not None and confidence >= self.escalate_below:
            return self._confident, False
        return self.reasoner, True

    def _reason(
        self, reasoner: Reasoner, prompt: Prompt, evidence: Evidence, id_to_name: dict[str, str]
    ) -> tuple[Reasoning | None, str | None]:
        """The reasoner's answers, or the error of an LLM that failed (retrieval is still shown)."""
        names = {i: n for i, n in id_to_name.items() if is_mid(i) and n != i}
        try:
            return reasoner.reason(prompt, evidence, names), None
        except LLMError as exc:
            return None, str(exc)


def _judged(res: Retrieval, reasoning: Reasoning | None) -> dict | None:
    """The answer model's judgement of the retriever's answers, where they are the answers given (no LLM)."""
    return res.judgement if reasoning is not None and not reasoning.llm_used else None


def _verdict(judged: dict | None) -> dict[str, Any]:
    """`AskResult`'s confidence fields from a judgement (`kgdb.rrp.judging.JudgedAnswers.to_json`)."""
    keys = ("confidence", "min_confidence", "separated_by")
    return {k: judged[k] for k in keys} if judged else {}


def given_retrieval(retrieval: QuestionRetriever) -> _Built:
    """A retriever object the caller built; it answers from relation paths when the registered
    question-level retriever of its name does."""
    kind = QUESTION_RETRIEVERS.find(retrieval.name)
    return _built(retrieval, kind is not None and kind.from_paths)


def _built(retrieval: QuestionRetriever, from_paths: bool) -> _Built:
    """What is recorded of a question retriever: its own description, notes and encoder where it says them
    (`DescribedRetriever`), else its name."""
    if isinstance(retrieval, DescribedRetriever):
        return _Built(
            retrieval,
            retrieval.describe,
            list(retrieval.notes),
            retrieval.embedder,
            retrieval.embedding_model,
            from_paths,
        )
    return _Built(retrieval, lambda: {"retriever": retrieval.name}, [], from_paths=from_paths)


@contextmanager
def _stage(timings: dict[str, float], name: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[name] = _ms(start)


def _as_path(chain_line: str) -> str:
    """A chain line without the brackets around relations: RAPL/RRP path style (`a ← r ← b` against the edge)."""
    return path_line(chain_line)


def prompt_lines(prompt: Prompt, lines: list[str]) -> list[str]:
    return (
        [f"Chain {i}. {line}" for i, line in enumerate(lines, 1)]
        if prompt.template.startswith("chains")
        else list(lines)
    )


def ground_answers(
    answers: list[str], reasoning: Reasoning | None, top: list[Any], chains: Any, id_to_name: dict[str, str]
) -> list[AnswerEvidence]:
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
    """Paste into Neo4j Browser: the named query that draws the run's evidence, with the run written in.
    Browser runs text holding a `:param` line as a script of several statements, whose frames show no
    graph; one statement is drawn. The run id is written as a JSON string, which is a Cypher string."""
    if not run:
        return None
    try:
        text = query(BROWSER_QUERY)
    except KgdbError:
        return None
    # the file's `:param` example names another run: left out, so only the user's run is named
    lines = [line for line in text.strip().splitlines() if not (line.startswith("//") and ":param" in line)]
    return re.sub(r"\$run\b", lambda _: json.dumps(run), "\n".join(lines))


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
