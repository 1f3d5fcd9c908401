"""Offline batch generation with `vllm.LLM` on a local GPU (optional extra `kgdb[vllm]`).

Imported lazily, so kgdb works without vLLM; not exercised by the CPU test suite (no GPU, no vLLM
wheel on the CI machine). Reads replies like the HTTP reasoner (`replies.read_reply`): JSON answers
constrained to the evidence's entity names through vLLM's guided decoding where this vLLM offers it,
else `ans:` lines or the names the prose mentions; prompts are cut to the model's `max_model_len`,
counted with the model's own tokenizer.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kgdb.qa.prompts import Prompt
from kgdb.qa.reasoners.base import DEFAULT_SEED, Evidence, LLMError, Reasoning, finish
from kgdb.qa.reasoners.replies import LLMReasoning, Names, answer_schema, evidence_names, read_reply
from kgdb.qa.token_budget import ANSWER_TOKENS, Endpoint, PromptTooLong, fit


@dataclass
class _Request:
    messages: list[dict[str, str]]
    params: Any  # vllm.SamplingParams
    known: Names | None  # the evidence's names the reply may give; None: nothing to ground on
    out: LLMReasoning


class VLLMReasoner:
    """Offline batch generation with `vllm.LLM` on a local GPU (install `kgdb[vllm]`).

    The chat template of the model is applied by `LLM.chat`; decoding matches the HTTP reasoner.
    """

    uses_llm = True

    def __init__(
        self,
        model: str,
        *,
        seed: int = DEFAULT_SEED,
        max_tokens: int | None = None,
        structured: bool = True,
        **llm_kwargs: Any,
    ):
        try:
            import vllm
        except ImportError as exc:
            raise LLMError("the vllm reasoner needs `pip install 'kgdb[vllm]'` and a GPU") from exc
        if not model:
            raise LLMError("the vllm reasoner needs a model: set KGDB_LLM_MODEL (a Hugging Face id or folder)")
        self.vllm = vllm
        self.model = model
        self.name = f"vllm:{model}"
        self.seed = seed
        self.max_tokens = max_tokens
        self.llm = vllm.LLM(model=model, seed=seed, **llm_kwargs)
        tokenizer = self.llm.get_tokenizer()
        context = getattr(getattr(self.llm.llm_engine, "model_config", None), "max_model_len", None)
        self.endpoint = Endpoint(
            None,
            model,
            context=context,
            context_source="vllm max_model_len",
            counter=lambda text: len(tokenizer.encode(text)),
        )
        self.structured = structured and self._guided({"type": "object"}) is not None

    def settings(self) -> dict[str, Any]:
        return {
            "reasoner": self.name,
            "model": self.model,
            "temperature": 0.0,
            "seed": self.seed,
            "max_tokens": self.max_tokens or "what the answer needs",
            "endpoint": self.endpoint.describe(),
        }

    def _guided(self, schema: dict) -> Any:
        """This vLLM's way to constrain decoding to a JSON schema, or None."""
        params = getattr(self.vllm.sampling_params, "StructuredOutputsParams", None)
        if params is not None:
            return {"structured_outputs": params(json=schema)}
        params = getattr(self.vllm.sampling_params, "GuidedDecodingParams", None)
        return {"guided_decoding": params(json=schema)} if params is not None else None

    def reason(self, prompt: Prompt, evidence: Evidence, names: dict[str, str] | None = None) -> Reasoning:
        return self.reason_batch([prompt], [names], [evidence])[0]

    def reason_batch(
        self,
        prompts: Sequence[Prompt],
        names: Sequence[dict[str, str] | None] | None = None,
        evidence: Sequence[Evidence] | None = None,
    ) -> list[Reasoning]:
        """One result per prompt; `evidence` (one per prompt) holds the names the replies may give,
        None: the `ans:` lines as written."""
        start = time.perf_counter()
        requests = [
            self._request(prompt, evidence_names(evidence[i]) if evidence is not None else [])
            for i, prompt in enumerate(prompts)
        ]
        outputs = self.llm.chat([r.messages for r in requests], [r.params for r in requests], use_tqdm=False)
        per = (time.perf_counter() - start) / max(1, len(prompts))
        for i, (request, o) in enumerate(zip(requests, outputs)):
            r = request.out
            r.seconds = per
            r.prompt_tokens = len(o.prompt_token_ids or [])
            r.completion_tokens = sum(len(c.token_ids) for c in o.outputs)
            reply = o.outputs[0].text if o.outputs else ""
            ids = names[i] if names else None
            if request.known is None:
                finish(r, reply, ids)
                continue
            read = read_reply(reply, request.known, ids, structured=r.budget["structured_output"])
            finish(r, reply, ids, read)
            r.modes, r.dropped = read.modes, read.dropped
        return [r.out for r in requests]

    def _request(self, prompt: Prompt, found: list[str]) -> _Request:
        """One prompt fitted to the context, its sampling parameters (answers limited to the evidence's
        entity names where structured output is on) and the result it will fill."""
        structured = self.structured and bool(found)
        answer = self.max_tokens or ANSWER_TOKENS
        try:
            fitted = (
                fit(
                    lambda n: prompt.rebuilt(lines=n, example=prompt.has_example and not structured).messages,
                    len(prompt.lines),
                    self.endpoint,
                    answer,
                )
                if prompt.lines
                else None
            )
        except PromptTooLong as exc:
            raise LLMError(f"vLLM model {self.model!r}: {exc}") from None
        sent = fitted.messages if fitted else prompt.messages
        shown = [c for c in found if c in sent[-1]["content"]]
        extra = self._guided(answer_schema(shown)["json_schema"]["schema"]) if structured else None
        params = self.vllm.SamplingParams(
            temperature=0.0, seed=self.seed, max_tokens=fitted.max_tokens if fitted else answer, **(extra or {})
        )
        out = LLMReasoning(answers=[], reply="", reasoner=self.name, llm_used=True, calls=1)
        out.budget = {
            **(fitted.describe() if fitted else {}),
            **self.endpoint.describe(),
            "structured_output": structured,
        }
        return _Request(sent, params, Names(shown, prompt.question) if found else None, out)
