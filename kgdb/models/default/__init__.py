"""Checkpoints shipped with the package, for graphs that have no trained checkpoint of their own.

Both were trained on the WebQSP training split and read only text embeddings (no entity or
relation ids), so they run on any graph embedded with the same model:
- `cosine-dde-webqsp/`: the default retriever of a fresh install. `kgdb ask` uses it whenever the
  retriever asked for has no checkpoint trained on the connected graph; its inputs are question
  cosines and distances, so it beats cosine on graphs it was not trained on (README, "The default
  retriever"). It scores in numpy, so a cold ask still imports no torch.
- `rapl-webqsp/`: used only by `--retriever rapl` on a graph without a RAPL checkpoint; RAPL reads
  raw vectors and transfers worse than cosine, so it is never the fallback of other retrievers.
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_RETRIEVER = "cosine-dde"
SHIPPED_FOLDER = Path(__file__).parent
SHIPPED = {"cosine-dde": SHIPPED_FOLDER / "cosine-dde-webqsp", "rapl": SHIPPED_FOLDER / "rapl-webqsp"}


def shipped_checkpoint(retriever: str = DEFAULT_RETRIEVER) -> Path | None:
    """The folder of the checkpoint shipped for `retriever`, or None when this install has none."""
    folder = SHIPPED.get(retriever)
    if folder is None or not (folder / "config.json").is_file() or not (folder / "model.safetensors").is_file():
        return None
    return folder
