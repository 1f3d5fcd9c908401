"""Reasoners: turn a prompt (and the evidence behind it) into parsed answers.

- `OpenAIReasoner`: any OpenAI-compatible chat-completions endpoint (OpenAI, a vLLM server, ...),
  through the `openai` client. Temperature 0 and a fixed seed; our own bounded retries with
  exponential backoff on timeouts, 429 and 5xx; one clear `LLMError` line for everything else.
- `VLLMReasoner`: offline batch generation with `vllm.LLM` (optional extra `kgdb[vllm]`, GPU);
  imported lazily, so kgdb works without it.
- `ExtractiveReasoner` (below): no LLM at all; used when none is configured.

All return a `Reasoning`, which records the raw reply, the parsed answers and the token usage.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, Sequence

from kgdb.config import Settings
from kgdb.errors import KgdbError
from kgdb.models.answers import parse_answers
from kgdb.models.prompts import Prompt, follow_up

DEFAULT_SEED = 0  # SubgraphRAG: temperature 0, seed 0
DEFAULT_MAX_TOKENS = 1024


class LLMError(KgdbError):
    """The LLM endpoint failed in a way retrying will not fix (or retries ran out)."""


@dataclass
class Reasoning:
    answers: list[str]
    reply: str
    reasoner: str  # "openai:<model>", "vllm:<model>", "extractive"
    llm_used: bool
    refused: bool = False
    malformed: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    seconds: float = 0.0
    # answer -> indices of the evidence lines it rests on (filled by the extractive reasoner)
    support: dict[str, list[int]] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Reasoner(Protocol):
    name: str
    uses_llm: bool

    def reason(self, prompt: Prompt, evidence: Any = None, names: dict[str, str] | None = None) -> Reasoning: ...


def _finish(reasoning: Reasoning, reply: str, names: dict[str, str] | None) -> Reasoning:
    parsed = parse_answers(reply, names)
    reasoning.reply = reply
    reasoning.answers = parsed.answers
    reasoning.refused = parsed.refused
    reasoning.malformed = parsed.malformed
    return reasoning


class OpenAIReasoner:
    """Chat completions over HTTP; one call per question, plus one follow-up when no `ans:` line came back."""

    uses_llm = True

    def __init__(
        self,
        base_url: str | None,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        temperature: float = 0.0,
        seed: int | None = DEFAULT_SEED,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        follow_up: bool = True,
    ):
        import openai

        if not model:
            raise LLMError("no LLM model given: set KGDB_LLM_MODEL (e.g. gpt-4o-mini or the model a vLLM server serves)")
        self.base_url = base_url
        self.model = model
        self.name = f"openai:{model}"
        self.max_retries = max(0, max_retries)
        self.backoff = backoff
        self.temperature = temperature
        self.seed = seed
        self.max_tokens = max_tokens
        self.follow_up = follow_up
        # Retries are ours (bounded, logged into the error); the client's own are off.
        self.client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "EMPTY", timeout=timeout, max_retries=0
        )

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> "OpenAIReasoner":
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        return cls(
            settings.llm_base_url,
            settings.llm_model or "",
            key,
            timeout=settings.llm_timeout,
            max_retries=settings.llm_max_retries,
            **kwargs,
        )

    def settings(self) -> dict[str, Any]:
        return {
            "reasoner": self.name,
            "base_url": self.base_url,
            "model": self.model,
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "follow_up": self.follow_up,
            "max_retries": self.max_retries,
        }

    def reason(self, prompt: Prompt, evidence: Any = None, names: dict[str, str] | None = None) -> Reasoning:
        start = time.perf_counter()
        out = Reasoning(answers=[], reply="", reasoner=self.name, llm_used=True)
        reply = self._complete(prompt.messages, out)
        _finish(out, reply, names)
        if self.follow_up and out.malformed:
            # SubgraphRAG asks once more when the first reply has no `ans:` line.
            second = self._complete(follow_up(prompt, reply), out)
            _finish(out, reply + "\n\n" + second, names)
        out.seconds = time.perf_counter() - start
        return out

    def _complete(self, messages: list[dict[str, str]], out: Reasoning) -> str:
        import openai

        where = f"LLM endpoint {self.base_url or 'https://api.openai.com/v1'} (model {self.model!r})"
        attempt = 0
        while True:
            try:
                resp = self.client.chat.completions.create(
                    model=self.model,
                    messages=messages,  # type: ignore[arg-type]
                    temperature=self.temperature,
                    seed=self.seed,
                    max_tokens=self.max_tokens,
                )
                break
            except openai.AuthenticationError as exc:
                raise LLMError(f"{where} refused the API key (401): set KGDB_LLM_API_KEY") from exc
            except openai.PermissionDeniedError as exc:
                raise LLMError(f"{where} denied access (403): {_detail(exc)}") from exc
            except openai.NotFoundError as exc:
                raise LLMError(
                    f"{where} answered 404: wrong KGDB_LLM_BASE_URL (it usually ends in /v1) or unknown model"
                ) from exc
            except openai.BadRequestError as exc:
                raise LLMError(f"{where} rejected the request (400): {_detail(exc)}") from exc
            except (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError, openai.APIConnectionError) as exc:
                if attempt >= self.max_retries:
                    raise LLMError(f"{where}: {_describe(exc)}, still failing after {attempt + 1} attempt(s)") from exc
                time.sleep(self.backoff * (2**attempt))
                attempt += 1
            except openai.APIStatusError as exc:
                raise LLMError(f"{where} answered HTTP {exc.status_code}: {_detail(exc)}") from exc
            except (openai.APIError, ValueError) as exc:  # a body that is not a chat completion (JSON errors are ValueErrors)
                raise LLMError(f"{where} sent a malformed reply: {exc}") from exc
        out.calls += 1
        if resp.usage is not None:
            out.prompt_tokens += resp.usage.prompt_tokens or 0
            out.completion_tokens += resp.usage.completion_tokens or 0
        choices = getattr(resp, "choices", None)
        if not choices or choices[0].message is None:
            raise LLMError(f"{where} sent a malformed reply: no choices/message in the completion")
        return choices[0].message.content or ""


def _detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(getattr(exc, "message", exc))


def _describe(exc: Exception) -> str:
    import openai

    if isinstance(exc, openai.RateLimitError):
        return "rate limited (429)"
    if isinstance(exc, openai.InternalServerError):
        return f"server error (HTTP {exc.status_code})"
    if isinstance(exc, openai.APITimeoutError):
        return "timed out (raise KGDB_LLM_TIMEOUT?)"
    return "cannot connect (is the server running? check KGDB_LLM_BASE_URL)"


class VLLMReasoner:
    """Offline batch generation with `vllm.LLM` on a local GPU (install `kgdb[vllm]`).

    Not exercised by the test suite: this machine has no GPU and vLLM is not installed. The chat
    template of the model is applied by `LLM.chat`; decoding matches the HTTP reasoner.
    """

    uses_llm = True

    def __init__(self, model: str, *, seed: int = DEFAULT_SEED, max_tokens: int = DEFAULT_MAX_TOKENS, **llm_kwargs: Any):
        try:
            import vllm
        except ImportError as exc:
            raise LLMError("the vllm reasoner needs `pip install 'kgdb[vllm]'` and a GPU") from exc
        if not model:
            raise LLMError("the vllm reasoner needs a model: set KGDB_LLM_MODEL (a Hugging Face id or folder)")
        self.model = model
        self.name = f"vllm:{model}"
        self.seed = seed
        self.max_tokens = max_tokens
        self.llm = vllm.LLM(model=model, seed=seed, **llm_kwargs)
        self.params = vllm.SamplingParams(temperature=0.0, seed=seed, max_tokens=max_tokens)

    def settings(self) -> dict[str, Any]:
        return {"reasoner": self.name, "model": self.model, "temperature": 0.0, "seed": self.seed, "max_tokens": self.max_tokens}

    def reason(self, prompt: Prompt, evidence: Any = None, names: dict[str, str] | None = None) -> Reasoning:
        return self.reason_batch([prompt], [names])[0]

    def reason_batch(self, prompts: Sequence[Prompt], names: Sequence[dict[str, str] | None] | None = None) -> list[Reasoning]:
        start = time.perf_counter()
        outputs = self.llm.chat([p.messages for p in prompts], self.params, use_tqdm=False)
        per = (time.perf_counter() - start) / max(1, len(prompts))
        results = []
        for i, o in enumerate(outputs):
            r = Reasoning(answers=[], reply="", reasoner=self.name, llm_used=True, calls=1, seconds=per)
            r.prompt_tokens = len(o.prompt_token_ids or [])
            r.completion_tokens = sum(len(c.token_ids) for c in o.outputs)
            _finish(r, o.outputs[0].text if o.outputs else "", names[i] if names else None)
            results.append(r)
        return results


REASONERS = ("auto", "extractive", "openai", "vllm")


def make_reasoner(kind: str, settings: Settings, **kwargs: Any) -> Any:
    """`auto`: the OpenAI-compatible reasoner when KGDB_LLM_MODEL is set, else the extractive one."""
    if kind == "auto":
        kind = "openai" if settings.llm_model else "extractive"
    if kind == "openai":
        return OpenAIReasoner.from_settings(settings, **kwargs)
    if kind == "vllm":
        return VLLMReasoner(settings.llm_model or "", **kwargs)
    if kind == "extractive":
        return ExtractiveReasoner.from_settings(settings, **kwargs)
    raise KgdbError(f"unknown reasoner {kind!r}; choose one of {', '.join(REASONERS)}")


# --------------------------------------------------------------------------------------------
# Extractive reasoner: no LLM.


class EvidenceTriple(Protocol):
    """What the extractive reasoner reads of a retrieved triple (`kgdb.pipeline.ScoredTriple` fits)."""

    head: str
    relation: str
    tail: str
    score: float
    head_id: str
    tail_id: str


@dataclass
class Evidence:
    """The retrieved triples behind one prompt, as the extractive reasoner needs them."""

    question: str
    triples: Sequence[EvidenceTriple]  # best retriever score first
    topics: list[str]  # entity ids
    topic_names: list[str] = field(default_factory=list)
    cvt: set[str] = field(default_factory=set)  # ids of compound-value nodes


@dataclass(frozen=True)
class RelationPath:
    """A sequence of (relation, direction) steps from a topic entity; +1 follows head→tail."""

    anchor: str  # entity id
    # (relation, direction, through_cvt): through_cvt=1 marks the step out of a CVT node, which
    # continues the hop into it rather than counting as a hop of its own
    steps: tuple[tuple[str, int, int], ...]

    @property
    def hops(self) -> int:
        return sum(1 for _, _, through in self.steps if not through)

    def text(self) -> str:
        from kgdb.embeddings import relation_text

        return " ; ".join(relation_text(r) for r, _, _ in self.steps)

    def render(self, anchor_name: str | None = None) -> str:
        parts = [anchor_name or self.anchor]
        parts += [f"[{r}]" if d > 0 else f"[{r}] (reversed)" for r, d, _ in self.steps]
        return " → ".join(parts)


@dataclass
class CandidatePath:
    path: RelationPath
    targets: dict[str, list[int]]  # target entity id -> triple indices (one route) leading to it
    score: float = 0.0


def enumerate_paths(
    triples: Sequence[EvidenceTriple],
    topics: Sequence[str],
    cvt: set[str],
    max_hops: int = 3,
    max_targets: int = 5000,
) -> list[CandidatePath]:
    """Relation paths from each topic through the retrieved triples, with the entities they reach.

    Walks both edge directions. A step into a CVT (compound value) node is looked through: the walk
    continues from it without counting a hop and a CVT is never a target. Topic entities are never
    targets either. Each relation path keeps one route (triple indices) per target: the first found.
    """
    adj: dict[str, list[tuple[int, str, int, str]]] = {}
    for i, t in enumerate(triples):
        adj.setdefault(t.head_id, []).append((i, t.relation, 1, t.tail_id))
        adj.setdefault(t.tail_id, []).append((i, t.relation, -1, t.head_id))
    topic_set = set(topics)
    out: list[CandidatePath] = []
    for anchor in dict.fromkeys(topics):
        # frontier: relation path -> {entity: route}; CVT entities stay in the frontier un-hopped
        frontier: dict[tuple, dict[str, list[int]]] = {(): {anchor: []}}
        for hop in range(max_hops):
            nxt: dict[tuple, dict[str, list[int]]] = {}
            for steps, nodes in frontier.items():
                for node, route in nodes.items():
                    for i, rel, direction, other in adj.get(node, ()):
                        if i in route or other == anchor:
                            continue
                        key = steps + ((rel, direction, 0),)
                        reached = nxt.setdefault(key, {})
                        if other not in reached and len(reached) < max_targets:
                            reached[other] = route + [i]
            # Look through CVTs: expand every CVT once more before counting the hop.
            for steps in list(nxt):
                for node, route in list(nxt[steps].items()):
                    if node not in cvt:
                        continue
                    for i, rel, direction, other in adj.get(node, ()):
                        if i in route or other == anchor or other in cvt:
                            continue
                        key = steps + ((rel, direction, 1),)
                        reached = nxt.setdefault(key, {})
                        if other not in reached and len(reached) < max_targets:
                            reached[other] = route + [i]
            for steps, nodes in nxt.items():
                targets = {e: r for e, r in nodes.items() if e not in cvt and e not in topic_set}
                if targets:
                    out.append(CandidatePath(RelationPath(anchor, steps), targets))
            # CVTs were looked through above; expanding them again would count their hop twice.
            frontier = {k: kept for k, v in nxt.items() if (kept := {e: r for e, r in v.items() if e not in cvt})}
            if not frontier:
                break
    return out


_FUNCTION_WORDS = frozenset("has have the and for with from are was were its into that this what which who whom".split())


def word_stems(text: str) -> set[str]:
    """Crude stems (first 4 letters) of the content words of `text`: `directors` ~ `directed_by`."""
    import re

    return {w[:4] for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 3 and w not in _FUNCTION_WORDS}


def strip_mentions(question: str, names: Sequence[str]) -> str:
    """The question without the topic entity names (so its vector is about the relations asked)."""
    import re

    q = question
    for name in sorted((n for n in names if n), key=len, reverse=True):
        q = re.sub(re.escape(name), " ", q, flags=re.IGNORECASE)
    q = " ".join(q.split())
    return q or question


class ExtractiveReasoner:
    """Answers without an LLM: the end points of the best relation path through the evidence.

    Every relation path from a topic entity through the retrieved triples (both directions, up to
    `max_hops` hops, CVT nodes looked through) is scored by

        cos(question without topic names, relation-path text) − hop_penalty·(hops − 1)
        + lexical_weight · share of its relations whose name shares a word stem with the question
        + retriever_weight · mean rank-normalised retriever score of its triples

    (relation–question similarity favours longer paths, which mention more relations; the hop
    penalty asks each extra hop to earn its place; the lexical term rewards relations the question
    names outright, which sentence embeddings blur; the retriever term prefers what the retriever
    ranked high). The weights were chosen from a handful of round values on a 150-question sample
    per MetaQA hop of the visible files (offline, relation paths over the whole KB), not fitted. The answers are the targets of the best path, ordered by the retriever score of
    the triple that reaches them; topic entities and CVT nodes are never answers. Weights are
    fixed defaults, not fitted to any evaluation set.
    """

    uses_llm = False
    name = "extractive"

    def __init__(
        self,
        embedder: Any,
        *,
        max_hops: int = 3,
        hop_penalty: float = 0.06,
        lexical_weight: float = 0.2,
        retriever_weight: float = 0.1,
        max_answers: int = 50,
        max_encoded: int = 32,
        cache_size: int = 100_000,
    ):
        self.max_encoded = max_encoded
        self.embedder = embedder
        self.max_hops = max_hops
        self.hop_penalty = hop_penalty
        self.lexical_weight = lexical_weight
        self.retriever_weight = retriever_weight
        self.max_answers = max_answers
        self._cache: dict[str, Any] = {}
        self._cache_size = cache_size

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> "ExtractiveReasoner":
        from kgdb.embeddings import get_embedder

        return cls(get_embedder(settings.embedding_model, settings.device, settings.embedding_batch_size), **kwargs)

    def settings(self) -> dict[str, Any]:
        return {
            "reasoner": self.name,
            "max_hops": self.max_hops,
            "hop_penalty": self.hop_penalty,
            "lexical_weight": self.lexical_weight,
            "retriever_weight": self.retriever_weight,
            "max_answers": self.max_answers,
            "max_encoded": self.max_encoded,
            "embedding_model": getattr(self.embedder, "name", None),
        }

    def _vectors(self, texts: list[str]) -> Any:
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            if len(self._cache) + len(missing) > self._cache_size:
                self._cache.clear()
            for text, vec in zip(missing, self.embedder.encode(missing)):
                self._cache[text] = vec
        return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, self.embedder.dim), np.float32)

    def rank_paths(
        self,
        question: str,
        triples: Sequence[EvidenceTriple],
        topics: Sequence[str],
        topic_names: Sequence[str] = (),
        cvt: set[str] | None = None,
    ) -> list[CandidatePath]:
        """All candidate relation paths, best first (ties: fewer hops, then text, deterministic)."""
        from kgdb.embeddings import relation_text

        paths = enumerate_paths(triples, topics, cvt or set(), self.max_hops)
        if not paths:
            return []
        stripped = strip_mentions(question, topic_names)
        q = self._vectors([stripped])[0]
        q_words = word_stems(stripped)
        lexical = [
            sum(1.0 for r, _, _ in p.path.steps if word_stems(r.rsplit(".", 1)[-1]) & q_words) / len(p.path.steps)
            for p in paths
        ]
        # Encoding every path text costs ~2-20 ms each on a CPU; a cheap pre-score (mean relation–question
        # similarity, hop penalty) keeps the `max_encoded` most promising paths for the full score.
        if len(paths) > self.max_encoded:
            rels = sorted({r for p in paths for r, _, _ in p.path.steps})
            rel_sim = dict(zip(rels, (self._vectors([relation_text(r) for r in rels]) @ q).tolist()))
            pre = [
                sum(rel_sim[r] for r, _, _ in p.path.steps) / len(p.path.steps)
                - self.hop_penalty * (p.path.hops - 1)
                + self.lexical_weight * lex
                for p, lex in zip(paths, lexical)
            ]
            keep = sorted(sorted(range(len(paths)), key=lambda i: (-pre[i], i))[: self.max_encoded])
            paths, lexical = [paths[i] for i in keep], [lexical[i] for i in keep]
        sims = self._vectors([p.path.text() for p in paths]) @ q
        k = max(1, len(triples))
        for p, sim, lex in zip(paths, sims.tolist(), lexical):
            # rank-normalised retriever score: 1 for the best triple, → 0 for the K-th
            routes = list(p.targets.values())
            rank_score = sum(1.0 - i / k for r in routes for i in r) / max(1, sum(len(r) for r in routes))
            p.score = (
                sim
                - self.hop_penalty * (p.path.hops - 1)
                + self.lexical_weight * lex
                + self.retriever_weight * rank_score
            )
        return sorted(paths, key=lambda p: (-p.score, p.path.hops, p.path.text(), p.path.anchor))

    def reason(self, prompt: Prompt | None, evidence: Evidence, names: dict[str, str] | None = None) -> Reasoning:
        """Same call as the LLM reasoners; the prompt is ignored (no LLM reads it)."""
        return self.answer(evidence.question, evidence.triples, evidence.topics, evidence.topic_names, evidence.cvt, names)

    def answer(
        self,
        question: str,
        triples: Sequence[EvidenceTriple],
        topics: Sequence[str],
        topic_names: Sequence[str] = (),
        cvt: set[str] | None = None,
        names: dict[str, str] | None = None,
    ) -> Reasoning:
        start = time.perf_counter()
        ranked = self.rank_paths(question, triples, topics, topic_names, cvt)
        out = Reasoning(answers=[], reply="", reasoner=self.name, llm_used=False, calls=0)
        if not ranked:
            out.refused = True
            out.reply = "No LLM was used (extractive reasoner). No retrieved triple leads away from the topic entities.\nans: not available"
            out.seconds = time.perf_counter() - start
            return out
        best = ranked[0]
        names = dict(names or {})
        for t in triples:
            names.setdefault(t.head_id, t.head)
            names.setdefault(t.tail_id, t.tail)
        # Order targets by their route's best (lowest) retriever rank, then name.
        targets = sorted(best.targets.items(), key=lambda kv: (min(kv[1]), names.get(kv[0], kv[0])))
        for entity, route in targets[: self.max_answers]:
            answer = names.get(entity, entity)
            if answer in out.scores:
                continue
            out.answers.append(answer)
            out.scores[answer] = round(best.score, 6)
            out.support[answer] = sorted(route)
        lines = [
            "No LLM was used (extractive reasoner): the answers are the end points of the best-scoring "
            f"relation path {best.path.render(names.get(best.path.anchor))} (score {best.score:.3f}).",
        ]
        lines += [f"ans: {a}" for a in out.answers]
        out.reply = "\n".join(lines)
        out.seconds = time.perf_counter() - start
        return out
