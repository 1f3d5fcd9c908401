"""What an LLM endpoint can take, learnt once per endpoint, and prompts fitted to it in tokens.

A fixed `max_tokens` plus a prompt of 100 triples overflows the 2,048-token context many local
servers start with, and the server answers HTTP 400; kgdb therefore asks the endpoint for its
context length (vLLM's `/v1/models` `max_model_len`, llama.cpp's `/props` or `/v1/models` meta,
`KGDB_LLM_CONTEXT` overriding), counts with the model's own tokenizer where the server exposes one
(llama.cpp `/tokenize`, llama-cpp-python `/extras/tokenize`, vLLM `/tokenize`) and otherwise with a
conservative estimate, and drops the worst-ranked evidence lines until the prompt and the answer fit.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

# Chat templates wrap each message in a few special tokens (ChatML: `<|im_start|>role\n … <|im_end|>\n`).
MESSAGE_OVERHEAD = 8
# Without the model's tokenizer: Freebase relation names and ids split into many short tokens, so one
# token per 2.5 UTF-8 bytes over-counts English prose and stays above the count for dotted names.
BYTES_PER_TOKEN = 2.5
# What a structured or short free-text answer needs; the budget grows with the longest candidate name.
ANSWER_TOKENS = 256
# A prompt never asks for fewer answer tokens than this, however tight the context.
MIN_ANSWER_TOKENS = 32
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "0.0.0.0")
# Context lengths servers state in the 400 they send for an overlong request (llama-cpp-python, vLLM, OpenAI, llama.cpp).
_CONTEXT_IN_ERROR = re.compile(
    r"(?:context window of|maximum context length is|context length of|n_ctx[\"']?\s*[:=]\s*)\s*(\d+)", re.IGNORECASE
)


class PromptTooLong(ValueError):
    """Even the prompt without evidence does not leave room for an answer."""


def is_local(base_url: str | None) -> bool:
    """The endpoint runs on this machine (a llama.cpp or vLLM server on loopback)."""
    if not base_url:
        return False
    return (urlsplit(base_url).hostname or "") in _LOOPBACK


def context_from_error(message: str) -> int | None:
    """The context length an overlong request's error message states, if it states one."""
    m = _CONTEXT_IN_ERROR.search(message or "")
    return int(m.group(1)) if m else None


def estimate_tokens(text: str) -> int:
    return int(len(text.encode("utf-8")) / BYTES_PER_TOKEN) + 1


@dataclass
class Endpoint:
    """What kgdb learnt about one endpoint (base URL + model); learnt once, shared by every reasoner."""

    base_url: str | None
    model: str
    context: int | None = None  # tokens the server's context holds
    context_source: str = "unknown"  # "KGDB_LLM_CONTEXT", "/props", "/v1/models", "error message", ...
    slots: int | None = None  # requests the server decodes at once (None: no limit known)
    tokenizer: str | None = None  # the tokenize route that answered, or None (estimate)
    tokenizer_field: str = "content"  # llama.cpp "content", vLLM "prompt", llama-cpp-python "input"
    structured: bool | None = None  # honours response_format with a schema (None: not tried yet)
    # how the schema travels: OpenAI's `json_schema` (llama.cpp, vLLM, OpenAI) or llama-cpp-python's
    # `json_object` with a `schema` key (its server refuses the other type with HTTP 422)
    schema_form: str = "json_schema"
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # the model's tokenizer in this process (vLLM offline): text -> token count
    counter: Callable[[str], int] | None = field(default=None, repr=False)
    _post: Callable[[str, dict], Any] | None = field(default=None, repr=False)

    @property
    def root(self) -> str:
        url = (self.base_url or "").rstrip("/")
        return url.removesuffix("/v1")

    def count(self, messages: list[dict[str, str]]) -> int:
        """Prompt tokens of `messages`, with the model's tokenizer when the server offers one."""
        text = "\n".join(m.get("content") or "" for m in messages)
        overhead = MESSAGE_OVERHEAD * (len(messages) + 1)
        if self.counter is not None:
            return self.counter(text) + overhead
        if self.tokenizer and self._post is not None:
            try:
                return self._tokens(text) + overhead
            except (
                OSError,
                ValueError,
                KeyError,
                TypeError,
            ) as exc:  # a tokenizer that stops answering is not worth failing a question for
                log.debug("tokenizer %s failed (%s); estimating from now on", self.tokenizer, exc)
                self.tokenizer = None
        return estimate_tokens(text) + overhead

    def _tokens(self, text: str) -> int:
        assert self._post is not None and self.tokenizer is not None
        body: dict[str, Any] = {self.tokenizer_field: text}
        if self.tokenizer_field == "prompt":
            body["model"] = self.model
        data = self._post(self.root + self.tokenizer, body)
        if isinstance(data.get("count"), int):
            return int(data["count"])
        return len(data["tokens"])

    def describe(self) -> dict[str, Any]:
        counted = "model tokenizer" if self.counter is not None else self.tokenizer or "estimate"
        return {
            "context": self.context,
            "context_source": self.context_source,
            "slots": self.slots,
            "tokenizer": counted,
            "structured_output": self.structured,
        }


_ENDPOINTS: dict[tuple[str | None, str], Endpoint] = {}
_ENDPOINTS_LOCK = threading.Lock()


def endpoint(
    base_url: str | None,
    model: str,
    *,
    context: int | None = None,
    slots: int | None = None,
    api_key: str | None = None,
    timeout: float = 10.0,
) -> Endpoint:
    """The endpoint's facts, probed on first use (a few GETs; nothing fails if a route is missing).

    `context` and `slots` are the user's overrides (KGDB_LLM_CONTEXT, KGDB_LLM_CONCURRENCY)."""
    key = (base_url, model)
    with _ENDPOINTS_LOCK:
        found = _ENDPOINTS.get(key)
        if found is None:
            found = _ENDPOINTS[key] = _probe(base_url, model, api_key, timeout)
    with found.lock:
        if context:
            found.context, found.context_source = context, "KGDB_LLM_CONTEXT"
        if slots:
            found.slots = slots
    return found


def forget_endpoints() -> None:
    """Probe again on next use (a server restarted with another context)."""
    with _ENDPOINTS_LOCK:
        _ENDPOINTS.clear()


def _probe(base_url: str | None, model: str, api_key: str | None, timeout: float) -> Endpoint:
    out = Endpoint(base_url, model)
    if not base_url:  # api.openai.com: nothing to probe, contexts are large
        return out
    get, out._post = _requests(api_key, timeout)
    _read_models(out, get(out.root + "/v1/models") or {}, model)
    _read_props(out, get(out.root + "/props"))
    if out.slots is None and is_local(base_url):
        out.slots = 1  # a local server without /props (llama-cpp-python) decodes one request at a time
    _find_tokenizer(out)
    if out.tokenizer == "/extras/tokenize":  # only llama-cpp-python's server has the /extras routes
        out.schema_form = "json_object"
    log.debug("LLM endpoint %s: %s", base_url, out.describe())
    return out


def _requests(api_key: str | None, timeout: float) -> tuple[Callable[[str], Any], Callable[[str, dict], Any]]:
    """A tolerant GET (None where the route is missing) and a strict POST, both with the key and timeout."""
    headers = {"Authorization": f"Bearer {api_key or 'EMPTY'}", "Content-Type": "application/json"}

    def fetch(url: str, data: bytes | None) -> Any:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=timeout) as r:
            return json.loads(r.read())

    def call(url: str, body: dict | None = None) -> Any:
        # urllib's timeout bounds each socket read, so a server sending a byte at a time would hold the
        # caller for ever: the call runs on its own thread, and the caller waits `timeout` at the most.
        data = json.dumps(body).encode() if body is not None else None
        out: dict[str, Any] = {}

        def run() -> None:
            try:
                out["reply"] = fetch(url, data)
            except Exception as exc:  # handed to the caller, which knows which failures it tolerates
                out["error"] = exc

        worker = threading.Thread(target=run, name="kgdb-endpoint-probe", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            raise TimeoutError(f"{url}: no complete reply within {timeout:g} s")
        if "error" in out:
            raise out["error"]
        return out["reply"]

    def get(url: str) -> Any:
        try:
            return call(url)
        except (OSError, ValueError):  # URLError and HTTPError are OSErrors: the route is missing or the server is down
            return None

    def post(url: str, body: dict) -> Any:
        return call(url, body)

    return get, post


def _read_models(out: Endpoint, models: dict, model: str) -> None:
    """The context from /v1/models: vLLM's max_model_len, else llama-cpp-python's meta.n_ctx."""
    for item in models.get("data") or []:
        if not isinstance(item, dict) or (item.get("id") != model and len(models.get("data") or []) > 1):
            continue
        if isinstance(item.get("max_model_len"), int):  # vLLM
            out.context, out.context_source = item["max_model_len"], "/v1/models max_model_len"
        meta = item.get("meta") or {}
        if out.context is None and isinstance(meta.get("n_ctx"), int):
            out.context, out.context_source = meta["n_ctx"], "/v1/models meta.n_ctx"


def _read_props(out: Endpoint, props: Any) -> None:
    if not isinstance(props, dict):
        return
    # llama.cpp's own server: the context per slot and the number of slots
    settings = props.get("default_generation_settings") or {}
    if isinstance(settings.get("n_ctx"), int):
        out.context, out.context_source = settings["n_ctx"], "/props"
    if isinstance(props.get("total_slots"), int):
        out.slots = props["total_slots"]


def _find_tokenizer(out: Endpoint) -> None:
    """The first tokenize route and body form the server accepts; none leaves `out.tokenizer` None."""
    for route, name in (("/tokenize", "content"), ("/tokenize", "prompt"), ("/extras/tokenize", "input")):
        out.tokenizer, out.tokenizer_field = route, name
        try:
            out._tokens("kgdb")
            break
        except (OSError, ValueError, KeyError, TypeError):  # this route or body form is not the server's
            out.tokenizer = None


@dataclass
class Fitted:
    """A prompt cut to the endpoint's context: how many evidence lines went, what it costs."""

    messages: list[dict[str, str]]
    lines_sent: int
    lines_cut: int
    prompt_tokens: int  # counted before sending (the server's own count comes back in `usage`)
    max_tokens: int
    counted_with: str  # "tokenizer" or "estimate"

    def describe(self) -> dict[str, Any]:
        return {
            "lines_sent": self.lines_sent,
            "lines_cut": self.lines_cut,
            "prompt_tokens_counted": self.prompt_tokens,
            "max_tokens": self.max_tokens,
            "counted_with": self.counted_with,
        }


def fit(build: Callable[[int], list[dict[str, str]]], lines: int, ep: Endpoint, answer_tokens: int) -> Fitted:
    """The most evidence lines (best ranked first, so always a prefix) whose prompt leaves
    `answer_tokens` of the context free; fewer answer tokens when even no evidence leaves too little room.

    `build(n)` returns the messages with the first n lines. Without a known context nothing is cut."""
    counted = "tokenizer" if ep.tokenizer or ep.counter is not None else "estimate"
    full = build(lines)
    if not ep.context:
        return Fitted(full, lines, 0, ep.count(full), answer_tokens, counted)
    room = ep.context - answer_tokens
    tokens = ep.count(full)
    if tokens <= room:
        return Fitted(full, lines, 0, tokens, answer_tokens, counted)
    low, high, best = 0, lines - 1, None  # binary search: about log2(lines) counts
    while low <= high:
        mid = (low + high) // 2
        n_tokens = ep.count(build(mid))
        if n_tokens <= room:
            best, low = (mid, n_tokens), mid + 1
        else:
            high = mid - 1
    if best is None:
        bare = ep.count(build(0))
        left = ep.context - bare
        if left < MIN_ANSWER_TOKENS:
            raise PromptTooLong(
                f"the prompt needs {bare} tokens without any evidence, and the model's context holds {ep.context} "
                f"({ep.context_source}): start the server with a larger context (e.g. --n_ctx 8192) or set KGDB_LLM_CONTEXT"
            )
        return Fitted(build(0), 0, lines, bare, left, counted)
    return Fitted(build(best[0]), best[0], lines - best[0], best[1], answer_tokens, counted)
