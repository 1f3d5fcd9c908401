"""Any OpenAI-compatible chat-completions endpoint (OpenAI, a vLLM or llama.cpp server, ...).

Temperature 0 and a fixed seed. Transient failures (timeouts, 429, 5xx, dropped connections) are
retried by the `openai` client itself (exponential backoff that honours Retry-After); whatever is
left becomes one clear `LLMError` line.
"""

from __future__ import annotations

import time
from typing import Any

from kgdb.config import Settings
from kgdb.qa.prompts import Prompt, follow_up
from kgdb.qa.reasoners.base import DEFAULT_MAX_TOKENS, DEFAULT_SEED, LLMError, Reasoning, finish

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
        self.temperature = temperature
        self.seed = seed
        self.max_tokens = max_tokens
        self.follow_up = follow_up
        # The client retries timeouts, dropped connections, 408/409/429 and 5xx itself, with
        # exponential backoff and jitter, waiting as long as a Retry-After header asks.
        self.client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "EMPTY", timeout=timeout, max_retries=self.max_retries
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
        finish(out, reply, names)
        if self.follow_up and out.malformed:
            # SubgraphRAG asks once more when the first reply has no `ans:` line.
            second = self._complete(follow_up(prompt, reply), out)
            finish(out, reply + "\n\n" + second, names)
        out.seconds = time.perf_counter() - start
        return out

    def complete(self, messages: list[dict[str, str]], out: Reasoning) -> str:
        """One chat completion (the client's own retries included); calls and tokens added to `out`.
        Thread-safe: `kgdb label` runs several at once."""
        return self._complete(messages, out)

    def _complete(self, messages: list[dict[str, str]], out: Reasoning) -> str:
        import openai

        where = f"LLM endpoint {self.base_url or 'https://api.openai.com/v1'} (model {self.model!r})"
        try:
            resp = self.client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=self.temperature,
                seed=self.seed,
                max_tokens=self.max_tokens,
            )
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
            attempts = self.max_retries + 1
            raise LLMError(f"{where}: {_describe(exc)}, still failing after {attempts} attempt(s)") from exc
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
