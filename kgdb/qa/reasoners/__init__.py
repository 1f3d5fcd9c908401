"""The reasoner registry: one name -> one way to build a `Reasoner`, so `kgdb ask`, `kgdb eval qa`,
`Kgdb.ask` and their help texts work for any registered reasoner without edits elsewhere.

Built-ins, one module each: `openai` (any OpenAI-protocol endpoint), `vllm` (local GPU),
`extractive` (no LLM), `rrp` (no LLM: end entities of the best grounded relation path), `candidates`
(the LLM chooses among the no-LLM answerer's top candidates, for small models). Each module
is imported only when its reasoner is built: the `openai` client and the embedding model cost
seconds of start-up that a question answered otherwise never needs. Third-party packages register
through the `kgdb.reasoners` entry-point group (the entry point names a `ReasonerKind` or a module
that calls `register_reasoner` when imported); a script or test calls `register_reasoner` itself.
`auto` is not a reasoner but the answering policy's choice (`kgdb.qa.policy`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kgdb.config import Settings
from kgdb.qa.reasoners.base import Evidence, LLMError, Reasoner, Reasoning
from kgdb.registry import UnknownNameError, registry_of

__all__ = [
    "AUTO",
    "REASONERS",
    "Evidence",
    "LLMError",
    "Reasoner",
    "ReasonerKind",
    "Reasoning",
    "UnknownReasonerError",
    "make_reasoner",
    "reasoner_choices",
    "reasoner_help",
    "reasoner_kind",
    "register_reasoner",
]

AUTO = "auto"


class UnknownReasonerError(UnknownNameError):
    """No reasoner is registered under that name."""


@dataclass(frozen=True)
class ReasonerKind:
    """How to build one registered reasoner.

    `build(settings, **options)` returns the reasoner; `summary` is its line in `--reasoner` help;
    `uses_llm` says whether it needs KGDB_LLM_MODEL; `needs_paths`: it answers only from relation
    paths (the policy then plans them); `reads_embeddings`: `build` takes `embedder=`, the
    retriever's question encoder, so one embedding model is in memory."""

    name: str
    build: Callable[..., Reasoner]
    summary: str
    uses_llm: bool = False
    needs_paths: bool = False
    reads_embeddings: bool = False


def register_reasoner(kind: ReasonerKind) -> ReasonerKind:
    """Make `kind` available under `kind.name` (a later registration replaces it)."""
    return REASONERS.register(kind)


def _openai(settings: Settings, **options: Any) -> Reasoner:
    from kgdb.qa.reasoners.openai_compatible import OpenAIReasoner

    return OpenAIReasoner.from_settings(settings, **options)


def _vllm(settings: Settings, **options: Any) -> Reasoner:
    from kgdb.qa.reasoners.vllm_offline import VLLMReasoner

    return VLLMReasoner(settings.llm_model or "", **options)


def _extractive(settings: Settings, **options: Any) -> Reasoner:
    from kgdb.qa.reasoners.extractive import ExtractiveReasoner

    return ExtractiveReasoner.from_settings(settings, **options)


def _candidates(settings: Settings, *, embedder: Any = None, **options: Any) -> Reasoner:
    from kgdb.qa.reasoners.candidates import CandidatesReasoner
    from kgdb.qa.reasoners.extractive import ExtractiveReasoner
    from kgdb.qa.reasoners.openai_compatible import OpenAIReasoner

    extra = {"embedder": embedder} if embedder is not None else {}
    proposer = ExtractiveReasoner.from_settings(settings, **extra)
    return CandidatesReasoner(OpenAIReasoner.from_settings(settings, **options), proposer, settings=settings)


BUILTINS = (
    ReasonerKind(
        "extractive",
        _extractive,
        "no LLM: the end points of the best relation path through the evidence",
        reads_embeddings=True,
    ),
    ReasonerKind("openai", _openai, "the OpenAI-compatible LLM of KGDB_LLM_BASE_URL / KGDB_LLM_MODEL", uses_llm=True),
    ReasonerKind("vllm", _vllm, "KGDB_LLM_MODEL run by vLLM on a local GPU (kgdb[vllm])", uses_llm=True),
    ReasonerKind(
        "candidates",
        _candidates,
        "the LLM of KGDB_LLM_MODEL chooses among the no-LLM answerer's top candidates and their paths (short prompt)",
        uses_llm=True,
        reads_embeddings=True,
    ),
)


def _builtins() -> None:
    for kind in BUILTINS:
        REASONERS.register(kind)


REASONERS = registry_of(
    ReasonerKind,
    "reasoner",
    "kgdb.reasoners",
    "--reasoner",
    builtins=_builtins,
    reserved=(AUTO,),
    error=UnknownReasonerError,
    choices=(AUTO,),
)


def reasoner_kind(name: str) -> ReasonerKind:
    return REASONERS.get(name)


def reasoner_choices() -> list[str]:
    """What `--reasoner` accepts: `auto`, then every registered name."""
    return [AUTO, *REASONERS.names()]


def reasoner_help(auto: str) -> str:
    """`--reasoner` help: `auto` as the command chooses it, then each registered reasoner's summary."""
    return "; ".join([f"{AUTO} ({auto})", *REASONERS.summaries()]) + "."


def auto_reasoner(settings: Settings) -> str:
    """What `auto` means where nothing else decides: the LLM when KGDB_LLM_MODEL is set, else extractive."""
    return "openai" if settings.llm_model else "extractive"


def make_reasoner(name: str, settings: Settings, *, embedder: Any = None, **options: Any) -> Reasoner:
    """The registered reasoner `name` (`auto`: `auto_reasoner`); `embedder` reaches only the reasoners
    that read embeddings."""
    kind = reasoner_kind(auto_reasoner(settings) if name == AUTO else name)
    if kind.reads_embeddings and embedder is not None:
        options["embedder"] = embedder
    return kind.build(settings, **options)
