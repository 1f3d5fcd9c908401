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
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, Callable

from kgdb.config import Settings
from kgdb.errors import InputError
from kgdb.qa.reasoners.base import Evidence, LLMError, Reasoner, Reasoning

__all__ = [
    "AUTO",
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


class UnknownReasonerError(InputError):
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


_REGISTRY: dict[str, ReasonerKind] = {}
_loaded = False


def register_reasoner(kind: ReasonerKind) -> ReasonerKind:
    """Make `kind` available under `kind.name` (a later registration replaces it)."""
    if not isinstance(kind, ReasonerKind):
        raise TypeError(f"{kind!r} is not a kgdb.qa.reasoners.ReasonerKind")
    if not kind.name or kind.name == AUTO or not kind.name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(
            f"a reasoner name must be a word (letters, digits, - or _) other than {AUTO!r}, got {kind.name!r}"
        )
    if not callable(kind.build):
        raise TypeError(f"reasoner {kind.name}: build must be callable")
    _REGISTRY[kind.name] = kind
    return kind


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


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for kind in BUILTINS:
        _REGISTRY.setdefault(kind.name, kind)
    for ep in entry_points(group="kgdb.reasoners"):
        obj = ep.load()
        if isinstance(obj, ReasonerKind):
            register_reasoner(obj)
        elif not isinstance(obj, ModuleType):  # a module registers itself when imported
            raise TypeError(f"entry point {ep.name} = {ep.value} names neither a ReasonerKind nor a module")


def reasoner_kind(name: str) -> ReasonerKind:
    _load()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownReasonerError(
            f"unknown reasoner {name!r}; choose one of {', '.join(reasoner_choices())}", path="--reasoner"
        ) from None


def reasoner_choices() -> list[str]:
    """What `--reasoner` accepts: `auto`, then every registered name."""
    _load()
    return [AUTO, *sorted(_REGISTRY)]


def reasoner_help(auto: str) -> str:
    """`--reasoner` help: `auto` as the command chooses it, then each registered reasoner's summary."""
    _load()
    return (
        "; ".join(
            [f"{AUTO} ({auto})", *(f"{k.name} ({k.summary})" for k in sorted(_REGISTRY.values(), key=lambda k: k.name))]
        )
        + "."
    )


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
