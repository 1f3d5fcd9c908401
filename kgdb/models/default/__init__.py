"""The retriever shipped with the package, for graphs that have no trained checkpoint of their own.

`rapl-webqsp/` is a RAPL checkpoint (`model.safetensors` + `config.json`) trained on the WebQSP
training split. RAPL's inputs are text embeddings only (no entity or relation ids), so it runs on
any graph embedded with the same model; `kgdb ask --retriever rapl` uses it on a graph without a RAPL
checkpoint of its own. It is not the fallback of other retrievers: it transfers worse than cosine.
"""

from __future__ import annotations

from pathlib import Path

SHIPPED = Path(__file__).parent / "rapl-webqsp"


def shipped_checkpoint() -> Path | None:
    """The shipped default checkpoint's folder, or None when this install has none."""
    return SHIPPED if (SHIPPED / "config.json").is_file() and (SHIPPED / "model.safetensors").is_file() else None
