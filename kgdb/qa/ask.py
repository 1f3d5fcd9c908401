"""`kgdb ask` and `kgdb eval qa`: retrieval → evidence → prompt → reasoner → parsed, grounded answers.

`AskPipeline.ask()` runs one question: link (or resolve the given topics) → topic-centred subgraph →
retriever scores → write-back (a run id) → evidence chains (ReG reorganisation, from the run) →
prompt in the chosen format → reasoner (OpenAI-compatible, vLLM, or extractive without an LLM) →
answers, each marked grounded when it names an entity of the retrieved evidence.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kgdb.config import Settings
from kgdb.cypher import Graph, query
from kgdb.errors import InputError, KgdbError
from kgdb.heap import freeze_loaded
from kgdb.protocol import QuestionRetriever
from kgdb.ids import is_mid
from kgdb.qa.prompts import FORMATS, Prompt, build_prompt, render_triple
from kgdb.qa.metrics import normalize
from kgdb.qa.reasoners import LLMError, Reasoning, make_reasoner
from kgdb.qa.reasoners.extractive import Evidence

BROWSER_QUERY = "browser/evidence_chains"
RELATION_PATHS = "relation-paths"  # not a tensor retriever: plans relation paths and grounds them in Cypher
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
    missing_topics: list[str] = field(default_factory=list)  # given topics not in the graph (dropped)
    planner_usage: dict | None = None  # the LLM relation-path planner's calls and tokens (`--planner llm`)
    retrieval: dict = field(default_factory=dict)  # how the evidence was fetched: checkpoint, hops, cap, ...

    def to_json(self, show_prompt: bool = False) -> dict[str, Any]:
        r = self.reasoning
        out = {
            "question": self.question,
            "qid": self.qid,
            "retriever": self.retriever,
            "retriever_note": self.retriever_note,
            "retrieval": self.retrieval,
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
            "alternatives": r.alternatives if r else [],
            "usage": {"prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens, "calls": r.calls} if r else None,
            "planner_usage": self.planner_usage,
            "error": self.error,
            "evidence": self.evidence_lines,
            "browser_query": self.browser_query,
            "timings_ms": {k: round(v, 3) for k, v in self.timings.items()},
        }
        if show_prompt:
            out["prompt"] = self.prompt.messages
        return out


def _fallback_retrieval(graph: Graph, settings: Settings, retriever: str, exc: Exception, **kw):
    """No checkpoint of `retriever` for this graph: use the checkpoint shipped with the package for
    that retriever if there is one (rapl, cosine-dde), else the shipped default retriever
    (cosine-dde, which beats cosine on graphs it was not trained on), else cosine. A shipped
    checkpoint that does not fit the graph's embedding model is skipped with the reason.
    Returns the pipeline and the note saying which was used and why."""
    from kgdb.models.checkpoints import CheckpointError
    from kgdb.models.default import DEFAULT_RETRIEVER, shipped_checkpoint
    from kgdb.pipeline import RetrievePipeline

    why = ""
    for name in dict.fromkeys([retriever, DEFAULT_RETRIEVER]):
        shipped = shipped_checkpoint(name)
        if shipped is None:
            continue
        try:
            pipe = RetrievePipeline(graph, settings, name, str(shipped), **kw)
        except CheckpointError as err:  # the graph was embedded with another model
            why += f"; the shipped {name} checkpoint does not fit this graph: {err}"
            continue
        return pipe, (f"{exc}; meanwhile the {name} checkpoint shipped with kgdb was used "
                      f"(trained on {pipe.checkpoint.config.get('dataset', '?')}){why}")
    pipe = RetrievePipeline(graph, settings, "cosine", None, **kw)
    return pipe, f"{exc}; meanwhile the cosine retriever was used{why}"


def default_retriever(retriever: str | None, reasoner: str) -> str:
    return retriever or (RELATION_PATHS if reasoner == "rrp" else "subgraphrag")


def rrp_trained_for(graph: Graph, settings: Settings) -> bool:
    """A relation-path planner checkpoint (`kgdb train rrp-planner`) trained on this graph exists:
    read from the config files alone, so `kgdb ask` stays light when none does."""
    from kgdb.cypher.tables import graph_fingerprint

    folder = Path(settings.checkpoints_dir)
    configs = sorted(folder.glob("*/config.json")) if folder.is_dir() else []
    if not configs:
        return False
    fingerprint = graph_fingerprint(graph)[0]
    for path in configs:
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if config.get("retriever") == "rrp-planner" and config.get("graph_fingerprint") == fingerprint:
            return True
    return False


def answering_pipeline(graph: Graph, settings: Settings, *, retriever: str | None = None, reasoner: str = "auto",
                       checkpoint: str | None = None, fmt: str | None = None, **options: Any) -> "AskPipeline":
    """The pipeline `kgdb ask` and `Kgdb.ask` answer with; what they pick when the retriever is not
    named: RRP once trained for this graph (without an LLM its own reasoner, with one its rethought
    paths in the `paths` prompt); without an LLM and nothing trained, RRP with the portable ranker
    shipped with kgdb (docs/rrp.md, "RRP on any graph"); else, or where that ranker does not fit the
    graph, the default retriever (subgraphrag, falling back to the shipped cosine-dde) and `reasoner`."""
    from kgdb.models.checkpoints import NoCheckpointError
    from kgdb.models.default import shipped_checkpoint

    implicit = False
    if retriever is None and reasoner in ("auto", "rrp") and rrp_trained_for(graph, settings):
        retriever = RELATION_PATHS
        reasoner = "rrp" if reasoner == "rrp" or not settings.llm_model else reasoner
        fmt = fmt or ("paths" if reasoner != "rrp" else "triples")
    elif retriever is None and checkpoint is None and reasoner == "auto" and not settings.llm_model and shipped_checkpoint("rrp-ranker"):
        retriever, reasoner, implicit = RELATION_PATHS, "rrp", True
    options.update(checkpoint=checkpoint, fmt=fmt or "triples")
    try:
        return AskPipeline(graph, settings, retriever=default_retriever(retriever, reasoner), reasoner=reasoner, **options)
    except NoCheckpointError:
        if not implicit:
            raise
        pipe = AskPipeline(graph, settings, retriever=default_retriever(None, "auto"), reasoner="auto", **options)
        why = "the portable rrp-ranker shipped with kgdb does not fit this graph's embedding model, so RRP did not answer"
        pipe.retriever_note = "; ".join(n for n in (why, pipe.retriever_note) if n)
        return pipe


class AskPipeline:
    """Retriever + reasoner for one graph; `ask()` answers one question.

    `retriever` is a registered retriever's name (built through `kgdb.pipeline.RetrievePipeline`),
    `relation-paths` (the trained relation-path planner + Cypher grounding) or any `QuestionRetriever`. With `fallback`, a trainable retriever that has no
    checkpoint for this graph is replaced by a shipped checkpoint (`_fallback_retrieval`) or the
    cosine baseline and the result says so (`retriever_note`); without it the typed
    `NoCheckpointError` reaches the caller.
    """

    def __init__(
        self,
        graph: Graph,
        settings: Settings,
        *,
        retriever: str | QuestionRetriever = "subgraphrag",
        checkpoint: str | None = None,
        k: int = 100,
        fmt: str = "triples",
        reasoner: str | Any = "auto",
        hops: int | None = None,
        cap: int | None = None,
        chain_hops: int = 2,
        write: bool = True,
        chains: bool | None = None,
        prompt_version: int = 1,
        fallback: bool = True,
        planner: str = "trained",
    ):
        if fmt not in FORMATS:
            raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}", path="--format")
        for value, name in ((k, "--k"), (chain_hops, "--chain-hops")):
            if value < 1:  # every retriever, before anything is loaded (relation paths took k=0 as "no evidence")
                raise InputError(f"must be positive, got {value}", path=name)
        from kgdb.qa.llm_planner import PLANNERS

        if planner not in PLANNERS:
            raise InputError(f"{planner!r} is not one of {', '.join(PLANNERS)}", path="--planner")
        if planner == "llm" and retriever != RELATION_PATHS:
            raise InputError("the LLM planner plans relation paths: use it with --retriever relation-paths (or --reasoner rrp)", path="--planner")
        if cap is not None and retriever == RELATION_PATHS:
            raise InputError("relation paths are grounded hop by hop with their own frontier bound; --cap applies to subgraph retrievers",
                             path="--cap")
        if fmt in ("chains", "paths") and not write:
            raise InputError("the chains and paths formats are built from the written-back run; drop --no-write", path="--format")
        self.graph, self.settings = graph, settings
        self.k, self.fmt, self.chain_hops, self.write, self.prompt_version = k, fmt, chain_hops, write, prompt_version
        # Chains are needed for the chains/paths prompts; for triples they only decorate the output.
        self.chains = (fmt != "triples" or write) if chains is None else (chains and write)
        self.retriever_note: str | None = None
        if retriever == RELATION_PATHS:
            from kgdb.pipeline import relation_path_retriever

            # the trained planner (RRP §IV-A) for this graph, or the named planner checkpoint; or an LLM plans
            from kgdb.qa.llm_planner import llm_planner

            chosen = llm_planner(graph, settings, checkpoint) if planner == "llm" else None
            self.retrieval = relation_path_retriever(graph, settings, checkpoint=checkpoint, k=k, write=write, planner=chosen)
            self.retriever_note = "; ".join(self.retrieval.notes) or None  # e.g. the shipped ranker stood in for a trained one
        elif isinstance(retriever, str):
            from kgdb.models.checkpoints import NoCheckpointError
            from kgdb.pipeline import RetrievePipeline  # torch: imported only when a pipeline is built

            try:
                self.retrieval = RetrievePipeline(graph, settings, retriever, checkpoint, k=k, hops=hops, cap=cap, write=write)
            except NoCheckpointError as exc:
                if not fallback or checkpoint:
                    raise
                self.retrieval, self.retriever_note = _fallback_retrieval(graph, settings, retriever, exc, k=k, hops=hops, cap=cap, write=write)
        else:
            self.retrieval = retriever
        self.reasoner = make_reasoner(reasoner, settings) if isinstance(reasoner, str) else reasoner
        embedder = getattr(self.retrieval, "embedder", None)
        if not self.reasoner.uses_llm and embedder is not None and hasattr(self.reasoner, "embedder"):
            self.reasoner.embedder = embedder  # one model in memory

    def retrieval_settings(self) -> dict[str, Any]:
        """How evidence is fetched: the retriever's own description (checkpoint, hops, cap, ...)."""
        describe = getattr(self.retrieval, "describe", None)
        return describe() if describe else {"retriever": self.retrieval.name}

    def settings_json(self) -> dict[str, Any]:
        r = self.reasoner
        return {
            **self.retrieval_settings(),
            "retriever_note": self.retriever_note,
            "k": self.k,
            "format": self.fmt,
            "prompt_template": f"{self.fmt}_v{self.prompt_version}",
            "chain_hops": self.chain_hops,
            "write_back": self.write,
            "reasoner": r.settings() if hasattr(r, "settings") else {"reasoner": r.name},
            "embedding_model": getattr(self.retrieval, "embedding_model", None),
            "neo4j_uri": self.settings.neo4j_uri,
        }

    def ask(self, question: str, topics: list[str] | None = None, qid: str | None = None, q_emb: np.ndarray | None = None) -> AskResult:
        if not question or not question.strip():
            raise InputError("the question is empty: ask something, e.g. kgdb ask \"what is the capital of France?\"", path="QUESTION")
        # The retriever applies the one linking policy: a question naming no entity is refused
        # (NoTopicError) before anything is written back.
        if q_emb is not None:
            res = self.retrieval.retrieve(question, topics or None, qid=qid, q_emb=q_emb)
        else:
            res = self.retrieval.retrieve(question, topics or None, qid=qid)
        timings = dict(res.timings)
        id_to_name = res.names
        top = res.triples

        t = time.perf_counter()
        chains = None
        if self.chains and res.run:
            from kgdb.cypher.chains import evidence_chains

            chains = evidence_chains(self.graph, res.run, max_hops=self.chain_hops)
        timings["chains"] = _ms(t)

        t = time.perf_counter()
        if self.fmt == "triples":
            lines = [render_triple(x.head, x.relation, x.tail) for x in top]
        elif self.fmt == "paths" and res.paths:  # the retriever ordered reasoning paths itself
            lines = [_as_path(p.render()) for p in res.paths]
        else:
            rendered = [c.render() for c in chains.chains] if chains else []
            lines = rendered if self.fmt == "chains" else [_as_path(line) for line in rendered]
        prompt = build_prompt(self.fmt, question, lines, self.prompt_version)
        timings["prompt"] = _ms(t)

        t = time.perf_counter()
        evidence = Evidence(question, top, list(res.topics), [id_to_name.get(x, x) for x in res.topics], res.cvt,
                            paths=res.paths, from_paths=hasattr(self.retrieval, "planner"))
        names = {i: n for i, n in id_to_name.items() if is_mid(i) and n != i}
        reasoning, error = None, None
        try:
            reasoning = self.reasoner.reason(prompt, evidence, names)
        except LLMError as exc:
            error = str(exc)
        timings["reason"] = _ms(t)

        answers = ground_answers(reasoning.answers if reasoning else [], reasoning, top, chains, id_to_name)
        freeze_loaded()  # everything the first answer loaded lazily is loaded now
        evidence_names = list(dict.fromkeys(n for x in top for n in (x.head, x.tail)))
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
            evidence_entities=evidence_names,
            subgraph=res.subgraph,
            missing_topics=list(res.missing_topics),
            planner_usage=getattr(res, "llm_usage", None),
            retrieval=self.retrieval_settings(),
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
