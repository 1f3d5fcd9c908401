"""Any OpenAI-compatible chat-completions endpoint (OpenAI, a vLLM or llama.cpp server, ...).

Temperature 0 and a fixed seed. Transient failures (timeouts, 429, 5xx, dropped connections) are
retried by the `openai` client itself (exponential backoff that honours Retry-After); whatever is
left becomes one clear `LLMError` line. Two deadlines bound every call whatever the server does
(`deadlines`): one per request (`timeout`: connect and every read of one attempt) and one per ask
(`ask_timeout`: every attempt and follow-up turn of one question).

Built for small local models as much as for hosted ones:
- where the endpoint honours `response_format` (llama.cpp, vLLM, OpenAI), answers are asked for as
  JSON whose items are the evidence's entity names (an enum), so every answer is an evidence entity;
  whether it does is learnt from the first reply and remembered for the endpoint;
- otherwise the reply is read tolerantly (`replies.read_reply`): `ans:` lines, else the evidence
  names the prose mentions;
- the prompt is cut to the endpoint's context in tokens (`kgdb.qa.token_budget`), worst evidence first;
- requests to a server wait for one of its slots (one at a time for a local llama.cpp server), and
  a local server gets deadlines long enough for a CPU.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kgdb.config import Settings
from kgdb.errors import InputError
from kgdb.qa.prompts import Prompt, follow_up
from kgdb.qa.reasoners.base import DEFAULT_MAX_TOKENS, DEFAULT_SEED, Evidence, LLMError, Reasoning, finish
from kgdb.qa.reasoners.deadlines import Deadline, TimeUp, bounded_client, shared_transport
from kgdb.qa.reasoners.replies import (
    SCHEMA_AFTER_PROSE,
    LLMReasoning,
    Names,
    ReadReply,
    answer_schema,
    evidence_names,
    read_reply,
)
from kgdb.qa.token_budget import (
    ANSWER_TOKENS,
    MIN_ANSWER_TOKENS,
    Endpoint,
    PromptTooLong,
    context_from_error,
    endpoint,
    estimate_tokens,
    fit,
    is_local,
)

REMOTE_TIMEOUT = 60.0
# A 135M model on one CPU core took 60 s for its first 2,500-token prompt; larger local models take longer.
LOCAL_TIMEOUT = 600.0
# The deadline of one ask: two requests' deadlines (a question's reply and its follow-up turn may each take a
# full request on a slow server) and the client's back-off before a retry; a silent server costs that, not
# (retries + 1) request deadlines per request.
ASK_TIMEOUT_REQUESTS = 2
ASK_TIMEOUT_BACKOFF = 10.0
_GATES: dict[tuple[str | None, str], threading.Semaphore] = {}
_GATES_LOCK = threading.Lock()


class _SchemaRefused(Exception):
    """The endpoint rejected `response_format` (it has no structured output)."""


class OpenAIReasoner:
    """Chat completions over HTTP; one call per question. A reply with nothing readable gets a follow-up
    turn and then, where the endpoint honours a schema, one request held to it that must name an answer."""

    uses_llm = True

    def __init__(
        self,
        base_url: str | None,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float | None = None,
        ask_timeout: float | None = None,
        max_retries: int = 3,
        temperature: float = 0.0,
        seed: int | None = DEFAULT_SEED,
        max_tokens: int | None = None,
        follow_up: bool = True,
        context: int | None = None,
        concurrency: int | None = None,
        structured: bool | None = None,
    ):
        """`timeout`: the deadline of one request (connect and every read, per attempt); None: 600 s for a
        server on this machine, 60 s otherwise. `ask_timeout`: the deadline of one question, all attempts
        and follow-up turns together; None: 2 x `timeout` + 10 s. `max_tokens` None: what
        the answer needs. `context` / `concurrency` None: learnt from the endpoint. `structured` None:
        JSON answers where the endpoint honours `response_format` (found out on the first call); False:
        replies in prose (a schema only when a prose reply held nothing readable); True: JSON."""
        import openai

        if not model:
            raise LLMError(
                "no LLM model given: set KGDB_LLM_MODEL (e.g. gpt-4o-mini or the model a vLLM server serves)"
            )
        self.base_url = base_url
        self.model = model
        self.name = f"openai:{model}"
        self.api_key = api_key
        self.max_retries = max(0, max_retries)
        self.temperature = temperature
        self.seed = seed
        self.max_tokens = max_tokens
        self.follow_up = follow_up
        self.timeout = timeout if timeout is not None else (LOCAL_TIMEOUT if is_local(base_url) else REMOTE_TIMEOUT)
        self.ask_timeout = (
            ask_timeout if ask_timeout is not None else ASK_TIMEOUT_REQUESTS * self.timeout + ASK_TIMEOUT_BACKOFF
        )
        self.context, self.concurrency, self.structured = context, concurrency, structured
        self._endpoint: Endpoint | None = None
        # The client retries timeouts, dropped connections, 408/409/429 and 5xx itself, with
        # exponential backoff and jitter, waiting as long as a Retry-After header asks; each call gets
        # an http client of its own that holds its requests to their deadlines (`_create`).
        self._transport = shared_transport(base_url)
        self.client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or "EMPTY",
            timeout=self.timeout,
            max_retries=self.max_retries,
            http_client=bounded_client(self._transport, self.timeout, None, self.timeout),
        )

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> OpenAIReasoner:
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        options = {
            "timeout": settings.llm_timeout,
            "ask_timeout": settings.llm_ask_timeout,
            "max_retries": settings.llm_max_retries,
            "context": settings.llm_context,
            "concurrency": settings.llm_concurrency,
            "max_tokens": settings.llm_max_tokens,
            "structured": _reply_format(settings.llm_reply_format),
        }
        return cls(settings.llm_base_url, settings.llm_model or "", key, **{**options, **kwargs})

    @property
    def endpoint(self) -> Endpoint:
        """The endpoint's context, slots, tokenizer and structured-output support (probed once per process)."""
        if self._endpoint is None:
            self._endpoint = endpoint(
                self.base_url,
                self.model,
                context=self.context,
                slots=self.concurrency,
                api_key=self.api_key,
                timeout=min(self.timeout, 10.0),
            )
            if self.structured:  # asked for JSON replies: assumed supported until the endpoint refuses
                self._endpoint.structured = True
        return self._endpoint

    def settings(self) -> dict[str, Any]:
        return {
            "reasoner": self.name,
            "base_url": self.base_url,
            "model": self.model,
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens or "what the answer needs",
            "follow_up": self.follow_up,
            "max_retries": self.max_retries,
            "timeout": self.timeout,
            "ask_timeout": self.ask_timeout,
            "endpoint": self.endpoint.describe(),
        }

    def deadline(self) -> Deadline:
        """A fresh deadline for one ask; calls handed the same one (`complete(..., deadline=)`) share it."""
        return Deadline(self.ask_timeout)

    def reason(self, prompt: Prompt, evidence: Evidence, names: dict[str, str] | None = None) -> LLMReasoning:
        return self.choose(prompt, evidence_names(evidence), names, prompt.question or evidence.question)

    def choose(
        self, prompt: Prompt, candidates: list[str], names: dict[str, str] | None = None, question: str = ""
    ) -> LLMReasoning:
        """The reply to `prompt`, its answers read as names among `candidates` (held to them by a schema
        where the endpoint honours one); without candidates, its `ans:` lines as written. Names that
        `question` (empty: the prompt's) contains are its topics, rarely its answer."""
        start = time.perf_counter()
        out = LLMReasoning(answers=[], reply="", reasoner=self.name, llm_used=True)
        ep = self.endpoint
        deadline = self.deadline()
        structured = bool(candidates) and self.structured is not False and ep.structured is not False
        try:
            reply, sent = self._ask(prompt, candidates, structured, out, deadline)
        except _SchemaRefused:
            ep.structured = structured = False
            reply, sent = self._ask(prompt, candidates, False, out, deadline)
        if not candidates:  # nothing to ground on (a bare prompt): the `ans:` lines as written
            finish(out, reply, names)
            if self.follow_up and out.malformed:
                finish(out, self._followed_up(prompt, sent, reply, out, deadline), names)
        else:
            known = Names(_shown(candidates, sent), question or prompt.question)
            read = read_reply(reply, known, names, structured=structured)
            if structured:
                # a server that ignores response_format answers in prose: ask it in prose from now on
                ep.structured = structured = bool(reply.lstrip().startswith("{"))
            if self.follow_up and read.malformed and not structured:
                reply, read = self._read_again(prompt, candidates, sent, reply, known, names, out, deadline)
            finish(out, reply, names, read)
            out.modes, out.dropped = read.modes, read.dropped
        out.budget["structured_output"] = structured
        out.seconds = time.perf_counter() - start
        return out

    def _read_again(
        self,
        prompt: Prompt,
        candidates: list[str],
        sent: list[dict[str, str]],
        reply: str,
        known: Names,
        names: dict[str, str] | None,
        out: LLMReasoning,
        deadline: Deadline,
    ) -> tuple[str, ReadReply]:
        """A prose reply with nothing readable: SubgraphRAG's follow-up turn, then, where the endpoint
        may hold a reply to a schema, the question once more with at least one evidence name required."""
        reply = self._followed_up(prompt, sent, reply, out, deadline)
        read = read_reply(reply, known, names)
        if not read.malformed or self.endpoint.structured is False:
            return reply, read
        try:
            third, _ = self._ask(prompt, candidates, True, out, deadline, at_least=1)
        except _SchemaRefused:
            self.endpoint.structured = False
            return reply, read
        self.endpoint.structured = third.lstrip().startswith("{")
        held = read_reply(third, known, names, structured=True)
        if not held.answers:
            return reply, read
        held.modes = dict.fromkeys(held.answers, SCHEMA_AFTER_PROSE)
        return reply + "\n\n" + third, held

    def _followed_up(
        self, prompt: Prompt, sent: list[dict[str, str]], reply: str, out: LLMReasoning, deadline: Deadline
    ) -> str:
        """The reply with SubgraphRAG's follow-up turn's answer after it (the conversation as sent, then the reply)."""
        second = self._again(follow_up(Prompt(prompt.template, sent, prompt.evidence_lines), reply), out, deadline)
        return reply + "\n\n" + second

    def _ask(
        self,
        prompt: Prompt,
        candidates: list[str],
        structured: bool,
        out: LLMReasoning,
        deadline: Deadline,
        at_least: int = 0,
    ) -> tuple[str, list[dict[str, str]]]:
        """One fitted request; a server whose 400 states a smaller context than assumed gets one refitted retry."""
        ep = self.endpoint
        for attempt in (1, 2):
            sent, max_tokens = self._fitted(prompt, candidates, structured, out)
            shown = _shown(candidates, sent) if structured else []
            try:
                return self._complete(
                    sent,
                    out,
                    deadline,
                    max_tokens=max_tokens,
                    schema=answer_schema(shown, at_least=at_least) if structured else None,
                ), sent
            except _ContextExceeded as exc:
                if attempt == 2 or exc.context is None or (ep.context is not None and exc.context >= ep.context):
                    raise LLMError(exc.message) from None
                ep.context, ep.context_source = exc.context, "the server's error message"
        raise AssertionError("unreachable")

    def _fitted(
        self, prompt: Prompt, candidates: list[str], structured: bool, out: LLMReasoning
    ) -> tuple[list[dict[str, str]], int]:
        ep = self.endpoint
        example = prompt.has_example and not structured  # a schema fixes the reply's form; the example only leaks
        answer = self.max_tokens or _answer_tokens(candidates, structured)
        if not prompt.lines and prompt.evidence_lines == 0 and not prompt.question:  # built by hand: sent as it is
            messages = prompt.messages
            out.budget.update(
                lines_sent=0,
                lines_cut=0,
                prompt_tokens_counted=ep.count(messages),
                max_tokens=answer,
                counted_with="tokenizer" if ep.tokenizer else "estimate",
                **ep.describe(),
            )
            return messages, self._room(messages, answer)
        try:
            fitted = fit(lambda n: prompt.rebuilt(lines=n, example=example).messages, len(prompt.lines), ep, answer)
        except PromptTooLong as exc:
            raise LLMError(f"LLM endpoint {self.base_url} (model {self.model!r}): {exc}") from None
        out.budget.update(fitted.describe(), **ep.describe())
        return fitted.messages, fitted.max_tokens

    def _room(self, messages: list[dict[str, str]], wanted: int) -> int:
        """`wanted` answer tokens, or what the context leaves after the prompt; a clear error when nothing is left."""
        ep = self.endpoint
        if not ep.context:
            return wanted
        left = ep.context - ep.count(messages)
        if left < MIN_ANSWER_TOKENS:
            raise LLMError(
                f"LLM endpoint {self.base_url} (model {self.model!r}): the request needs about {ep.count(messages)} prompt "
                f"tokens and the model's context holds {ep.context} ({ep.context_source}): shorten the input, start the "
                "server with a larger context (e.g. --n_ctx 8192) or set KGDB_LLM_CONTEXT"
            )
        return min(wanted, left)

    def complete(self, messages: list[dict[str, str]], out: Reasoning, *, deadline: Deadline | None = None) -> str:
        """One chat completion (the client's own retries included); calls and tokens added to `out`.
        `deadline`: one shared with the other calls of the same ask (`deadline()`); None: its own.
        Thread-safe: `kgdb label` runs several at once; they queue for the endpoint's slots."""
        return self._again(messages, out, deadline or self.deadline(), self.max_tokens or DEFAULT_MAX_TOKENS)

    def _again(
        self, messages: list[dict[str, str]], out: Reasoning, deadline: Deadline, wanted: int | None = None
    ) -> str:
        """A request as it is (a follow-up turn, a label or planning prompt), its answer within what the context leaves."""
        try:
            return self._complete(
                messages, out, deadline, max_tokens=self._room(messages, wanted or self.max_tokens or ANSWER_TOKENS)
            )
        except _ContextExceeded as exc:
            raise LLMError(exc.message) from None

    def _gate(self) -> threading.Semaphore | None:
        slots = self.endpoint.slots
        if not slots:
            return None
        with _GATES_LOCK:
            return _GATES.setdefault((self.base_url, self.model), threading.BoundedSemaphore(slots))

    def _complete(
        self,
        messages: list[dict[str, str]],
        out: Reasoning,
        deadline: Deadline,
        *,
        max_tokens: int | None = None,
        schema: dict | None = None,
    ) -> str:
        import openai

        where = f"LLM endpoint {self.base_url or 'https://api.openai.com/v1'} (model {self.model!r})"
        extra = {"response_format": _schema_form(schema, self.endpoint.schema_form)} if schema else {}
        try:
            resp = self._create(messages, max_tokens or self.max_tokens or DEFAULT_MAX_TOKENS, extra, deadline)
        except TimeUp as exc:
            because = f" ({exc.why})" if exc.why else ""
            raise LLMError(
                f"{where}: no answer within the {deadline.seconds:g} s deadline for one question{because} "
                "(KGDB_LLM_ASK_TIMEOUT; each request has KGDB_LLM_TIMEOUT)"
            ) from None
        except (openai.APIError, ValueError) as exc:  # a body that is not a chat completion (JSON errors: ValueErrors)
            raise _failure(exc, where, schema, attempts=self.max_retries + 1, timeout=self.timeout) from exc
        out.calls += 1
        if resp.usage is not None:
            out.prompt_tokens += resp.usage.prompt_tokens or 0
            out.completion_tokens += resp.usage.completion_tokens or 0
        choices = getattr(resp, "choices", None)
        if not choices or choices[0].message is None:
            raise LLMError(f"{where} sent a malformed reply: no choices/message in the completion")
        return choices[0].message.content or ""

    def _create(self, messages: list[dict[str, str]], max_tokens: int, extra: dict, deadline: Deadline) -> Any:
        gate = self._gate()
        if gate is not None:
            with deadline.paused():  # waiting here, not on the server, keeps the deadlines for the requests
                gate.acquire()
        try:
            client = self.client.with_options(
                http_client=bounded_client(self._transport, self.timeout, deadline, self.timeout)
            )
            return client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=self.temperature,
                seed=self.seed,
                max_tokens=max_tokens,
                **extra,  # type: ignore[arg-type]
            )
        finally:
            if gate is not None:
                gate.release()


def _failure(exc: Exception, where: str, schema: dict | None, attempts: int, timeout: float) -> Exception:
    """The one-line error for a failed request; a schema or context refusal gets its own type, as callers retry those."""
    import openai

    if isinstance(exc, openai.AuthenticationError):
        return LLMError(f"{where} refused the API key (401): set KGDB_LLM_API_KEY")
    if isinstance(exc, openai.PermissionDeniedError):
        return LLMError(f"{where} denied access (403): {_detail(exc)}")
    if isinstance(exc, openai.NotFoundError):
        return LLMError(f"{where} answered 404: wrong KGDB_LLM_BASE_URL (it usually ends in /v1) or unknown model")
    if isinstance(exc, openai.BadRequestError):
        return _bad_request(_detail(exc), where, schema)
    transient = (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError, openai.APIConnectionError)
    if isinstance(exc, transient):
        return LLMError(f"{where}: {_describe(exc, timeout)}, still failing after {attempts} attempt(s)")
    if isinstance(exc, openai.UnprocessableEntityError):
        if schema:  # a server whose request model has no such response_format (llama-cpp-python: 422)
            return _SchemaRefused(_detail(exc))
        return LLMError(f"{where} answered HTTP 422: {_detail(exc)}")
    if isinstance(exc, openai.APIStatusError):
        return LLMError(f"{where} answered HTTP {exc.status_code}: {_detail(exc)}")
    return LLMError(f"{where} sent a malformed reply: {exc}")


def _bad_request(detail: str, where: str, schema: dict | None) -> Exception:
    if schema and _about_schema(detail):
        return _SchemaRefused(detail)
    if _about_context(detail):
        return _ContextExceeded(
            f"{where} rejected the request as too long for the model's context (400): {detail}",
            context_from_error(detail),
        )
    return LLMError(f"{where} rejected the request (400): {detail}")


class _ContextExceeded(Exception):
    def __init__(self, message: str, context: int | None):
        super().__init__(message)
        self.message, self.context = message, context


def _reply_format(value: str) -> bool | None:
    choices = {"auto": None, "json": True, "text": False}
    if value not in choices:
        raise InputError(f"must be one of {', '.join(choices)}, got {value!r}", path="KGDB_LLM_REPLY_FORMAT")
    return choices[value]


def _schema_form(response_format: dict, form: str) -> dict:
    if form == "json_object":
        return {"type": "json_object", "schema": response_format["json_schema"]["schema"]}
    return response_format


def _shown(candidates: list[str], messages: list[dict[str, str]]) -> list[str]:
    """The candidates the fitted prompt still shows (cut evidence takes its entities with it)."""
    text = messages[-1]["content"] if messages else ""
    return [c for c in candidates if c in text]


def _answer_tokens(candidates: list[str], structured: bool) -> int:
    """Room for the answer: a JSON list of up to ten of the longest names, or a short free-text reply."""
    if not structured:
        return ANSWER_TOKENS
    longest = max((estimate_tokens(c) for c in candidates), default=8)
    return max(MIN_ANSWER_TOKENS, min(ANSWER_TOKENS, 16 + 10 * (longest + 3)))


def _about_schema(detail: str) -> bool:
    d = detail.lower()
    return any(w in d for w in ("response_format", "json_schema", "grammar", "structured output", "guided"))


def _about_context(detail: str) -> bool:
    d = detail.lower()
    return any(
        w in d
        for w in ("context window", "context length", "context size", "maximum context", "n_ctx", "too many tokens")
    )


def _detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(getattr(exc, "message", exc))


def _describe(exc: Exception, timeout: float) -> str:
    import openai

    if isinstance(exc, openai.RateLimitError):
        return "rate limited (429)"
    if isinstance(exc, openai.InternalServerError):
        return f"server error (HTTP {exc.status_code})"
    if isinstance(exc, openai.APITimeoutError):
        return f"timed out: no complete reply within the {timeout:g} s deadline per request (KGDB_LLM_TIMEOUT)"
    return "cannot connect (is the server running? check KGDB_LLM_BASE_URL)"
