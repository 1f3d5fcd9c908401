"""Checkpoints shipped with the package, for graphs that have no trained checkpoint of their own.

They read only text embeddings (no entity or relation ids), so they run on any graph embedded with
the same model:
- `cosine-dde-webqsp/`: the default retriever of a fresh install. `kgdb ask` uses it whenever the
  retriever asked for has no checkpoint trained on the connected graph; its inputs are question
  cosines and distances, so it beats cosine on graphs it was not trained on (docs/retrieval.md, "The default
  retriever"). It scores in numpy, so a cold ask still imports no torch.
- `rapl-webqsp/`: used only by `--retriever rapl` on a graph without a RAPL checkpoint; RAPL reads
  raw vectors and transfers worse than cosine, so it is never the fallback of other retrievers.
- `rrp-ranker-portable/`: RRP's path ranker in its portable form (`RankerConfig.for_any_graph`),
  trained on the WebQSP training split (read on the WebQSP subset and on the denser distractor
  graph with FB15k-237's CVT-collapsed relations) and MetaQA 1/2/3-hop together; it reads the connected
  graph's relation text table, so `--reasoner rrp` (and, without an LLM, `kgdb ask`) answers from
  relation paths on a graph that has no RRP model of its own.
- `answer-model/`: the answer model (`kgdb.rrp.answer_model`), two logistic models over numbers read from the
  question as read and the ranked paths, fitted on the val splits of WebQSP, CWQ and MetaQA 1/2/3-hop (the
  ranker's unseen questions); it gives every RRP answer a calibrated confidence and says "not sure" below
  the threshold chosen there (`config.json` holds every choice and the out-of-fold figures).
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_RETRIEVER = "cosine-dde"
SHIPPED_FOLDER = Path(__file__).parent
SHIPPED = {
    "cosine-dde": SHIPPED_FOLDER / "cosine-dde-webqsp",
    "rapl": SHIPPED_FOLDER / "rapl-webqsp",
    "rrp-ranker": SHIPPED_FOLDER / "rrp-ranker-portable",
}


def shipped_checkpoint(retriever: str = DEFAULT_RETRIEVER) -> Path | None:
    """The folder of the checkpoint shipped for `retriever`, or None when this install has none."""
    folder = SHIPPED.get(retriever)
    if folder is None or not (folder / "config.json").is_file() or not (folder / "model.safetensors").is_file():
        return None
    return folder
