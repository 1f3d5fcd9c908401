"""Offline batch generation with `vllm.LLM` on a local GPU (optional extra `kgdb[vllm]`).

Imported lazily, so kgdb works without vLLM; not exercised by the test suite (no GPU, no vLLM
wheel on the CI machine).
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from kgdb.qa.prompts import Prompt
from kgdb.qa.reasoners.base import DEFAULT_MAX_TOKENS, DEFAULT_SEED, LLMError, Reasoning, finish

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
            finish(r, o.outputs[0].text if o.outputs else "", names[i] if names else None)
            results.append(r)
        return results
