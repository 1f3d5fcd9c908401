"""Reasoners: turn a prompt (and the evidence behind it) into parsed answers.

- `OpenAIReasoner`: any OpenAI-compatible chat-completions endpoint (OpenAI, a vLLM server, ...),
  through the `openai` client. Temperature 0 and a fixed seed; our own bounded retries with
  exponential backoff on timeouts, 429 and 5xx; one clear `LLMError` line for everything else.
- `VLLMReasoner`: offline batch generation with `vllm.LLM` (optional extra `kgdb[vllm]`, GPU);
  imported lazily, so kgdb works without it.
- `ExtractiveReasoner` (`kgdb.models.extractive`): no LLM at all; used when none is configured.

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
        from kgdb.models.extractive import ExtractiveReasoner

        return ExtractiveReasoner.from_settings(settings, **kwargs)
    raise KgdbError(f"unknown reasoner {kind!r}; choose one of {', '.join(REASONERS)}")
