"""Reasoners, one module each: `openai_compatible` (any OpenAI-protocol endpoint), `vllm_offline`
(local GPU), `extractive` (no LLM), `rrp` (no LLM: end entities of the best grounded relation path). `make_reasoner` picks one by name."""

from __future__ import annotations

from typing import Any

from kgdb.config import Settings
from kgdb.errors import InputError
from kgdb.qa.reasoners.base import LLMError, Reasoner, Reasoning

__all__ = ["REASONERS", "LLMError", "Reasoner", "Reasoning", "make_reasoner"]

REASONERS = ("auto", "extractive", "openai", "vllm", "rrp")


def make_reasoner(kind: str, settings: Settings, **kwargs: Any) -> Reasoner:
    """`auto`: the OpenAI-compatible reasoner when KGDB_LLM_MODEL is set, else the extractive one.

    Each reasoner's module is imported only when it is chosen: the `openai` client and the
    embedding model cost seconds of start-up that a question answered otherwise never needs.
    """
    if kind == "auto":
        kind = "openai" if settings.llm_model else "extractive"
    if kind == "openai":
        from kgdb.qa.reasoners.openai_compatible import OpenAIReasoner

        return OpenAIReasoner.from_settings(settings, **kwargs)
    if kind == "vllm":
        from kgdb.qa.reasoners.vllm_offline import VLLMReasoner

        return VLLMReasoner(settings.llm_model or "", **kwargs)
    if kind == "extractive":
        from kgdb.qa.reasoners.extractive import ExtractiveReasoner

        return ExtractiveReasoner.from_settings(settings, **kwargs)
    if kind == "rrp":
        from kgdb.qa.reasoners.rrp import PathReasoner

        return PathReasoner(**kwargs)
    raise InputError(f"unknown reasoner {kind!r}; choose one of {', '.join(REASONERS)}", path="--reasoner")
