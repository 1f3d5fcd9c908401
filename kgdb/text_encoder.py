"""The default embedding model (all-MiniLM-L6-v2) in plain numpy, so a short CLI run needs no torch.

Importing torch, transformers and sentence-transformers costs seconds on a cold start, while
encoding one question with a 6-layer, 384-wide BERT takes milliseconds. `NumpyBertEncoder` runs
the same computation as sentence-transformers does for this model (BERT forward, mean pooling
over the attention mask, L2 normalisation) from the bundled weights (`model.safetensors`, mapped
into memory) and the bundled `tokenizer.json` (HF `tokenizers`, Rust). Its vectors
equal sentence-transformers' within 1e-5 (tests/unit/test_fast_ask.py), so texts encoded here and
vectors stored by a bulk load live in one space. Which encoder is used when is decided in
`kgdb.embeddings`. This module never imports torch (import-linter contract).
"""

from __future__ import annotations

import json
import math
import mmap
from pathlib import Path

import numpy as np

from kgdb.blas import blas_threads

# BERT's float32 attention mask value (transformers uses the dtype's minimum).
_MASKED = np.finfo(np.float32).min


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in float64, absolute error below 1.5e-7 (Abramowitz & Stegun 7.1.26).

    numpy has no erf and scipy costs about a second to import; BERT's exact GELU needs erf (the
    tanh approximation would move vectors by ~1e-3), and float32 itself only resolves ~6e-8.
    """
    a = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return np.copysign(1.0 - poly * np.exp(-a * a), x)


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x), computed in float64 and returned as float32."""
    return (0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))).astype(np.float32)


# safetensors' dtype names, those a BERT checkpoint uses
_DTYPES = {"F32": "<f4", "F16": "<f2", "I64": "<i8"}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a `.safetensors` file as read-only arrays over one memory map of it.

    safetensors' own reader copies every tensor out of the file (90 MB for MiniLM, ~0.1 s of a cold
    `kgdb ask`), though a question reads a few rows of the 47 MB word-embedding table: mapped, the
    pages nobody reads are never loaded. The layout (an 8-byte little-endian header length, a JSON
    header of dtype, shape and byte range per tensor, then the data) is the format's specification.
    """
    with open(path, "rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)  # stays mapped while an array uses it
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + length])
    start = 8 + length
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = np.dtype(_DTYPES[info["dtype"]])
        begin, end = info["data_offsets"]
        count = (end - begin) // dtype.itemsize
        tensors[name] = np.frombuffer(data, dtype=dtype, count=count, offset=start + begin).reshape(info["shape"])
    return tensors


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + np.float32(eps)) * weight + bias


class NumpyBertEncoder:
    """A sentence-transformers BERT model with mean pooling and normalisation, in numpy.

    `folder` holds `config.json` (BERT), `tokenizer.json`, `model.safetensors`,
    `sentence_bert_config.json` (max_seq_length) and `1_Pooling/config.json` (mean pooling);
    any other layout is refused with ValueError, so the caller can use sentence-transformers.
    """

    def __init__(self, folder: str | Path, threads: int | None = 1):
        from tokenizers import Tokenizer

        folder = Path(folder)
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        st_config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
        if (
            config.get("model_type") != "bert"
            or config.get("hidden_act") != "gelu"
            or config.get("position_embedding_type", "absolute") != "absolute"
            or not pooling.get("pooling_mode_mean_tokens")
            or any(
                pooling.get(k)
                for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens")
            )
            or kinds != ["Transformer", "Pooling", "Normalize"]
            or st_config.get("do_lower_case")
        ):
            raise ValueError(f"{folder} is not a mean-pooled, normalised BERT sentence-transformers model")
        self.dim = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.max_length = int(st_config.get("max_seq_length") or config["max_position_embeddings"])
        self.threads = threads

        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()  # padded here, per batch, like sentence-transformers
        self.tokenizer.enable_truncation(max_length=self.max_length)

        w = read_safetensors(folder / "model.safetensors")
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""
        self.word = w[f"{prefix}embeddings.word_embeddings.weight"]
        self.position = w[f"{prefix}embeddings.position_embeddings.weight"]
        self.token_type = w[f"{prefix}embeddings.token_type_embeddings.weight"]
        self.emb_ln = (w[f"{prefix}embeddings.LayerNorm.weight"], w[f"{prefix}embeddings.LayerNorm.bias"])
        self.blocks = []
        for i in range(self.layers):
            p = f"{prefix}encoder.layer.{i}."

            def lin(name: str) -> tuple[np.ndarray, np.ndarray]:
                # stored [out, in] (torch Linear), used as x @ W.T with no copy of the 43 MB of dense
                # weights at each start: x has 2+ rows ([CLS] and [SEP]), so BLAS runs a matrix product
                # over the transposed view, which sums as over a contiguous copy (a one-row vector
                # product would not); the vectors are the same bits as with the copy
                return w[p + name + ".weight"].T, w[p + name + ".bias"]

            # Q, K and V in one matmul: one BLAS call instead of three.
            q, k, v = lin("attention.self.query"), lin("attention.self.key"), lin("attention.self.value")
            self.blocks.append(
                {
                    "qkv": (np.concatenate([q[0].T, k[0].T, v[0].T]).T, np.concatenate([q[1], k[1], v[1]])),
                    "attn_out": lin("attention.output.dense"),
                    "attn_ln": (w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]),
                    "inter": lin("intermediate.dense"),
                    "out": lin("output.dense"),
                    "out_ln": (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]),
                }
            )

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch(texts)]

    def encode(self, texts: list[str], batch_size: int = 8) -> np.ndarray:
        """[len(texts), dim] unit float32 vectors; batches group texts of similar length.

        Small batches: the texts of one ask (a question, relation and path texts) differ in
        length, and padding a batch to its longest text costs more than the per-batch overhead
        (49 path texts: 2.2 s in batches of 64, 1.0 s in batches of 8, on the busy dev machine).
        """
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = self.token_ids([str(t) for t in texts])
        order = sorted(range(len(texts)), key=lambda i: -len(ids[i]))
        with blas_threads(self.threads):
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                out[rows] = self._forward([ids[i] for i in rows])
        return out

    def _forward(self, ids: list[list[int]]) -> np.ndarray:
        b, length = len(ids), max(len(x) for x in ids)
        input_ids = np.zeros((b, length), dtype=np.int64)
        mask = np.zeros((b, length), dtype=np.float32)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1.0
        h = self.word[input_ids] + self.position[:length] + self.token_type[0]
        h = _layer_norm(h, *self.emb_ln, self.eps)
        bias = np.where(mask > 0, np.float32(0.0), _MASKED)[:, None, None, :]  # [b, 1, 1, L]
        hd = self.dim // self.heads
        scale = np.float32(1.0 / math.sqrt(hd))
        # The dense layers run on [b * L, d]: one BLAS call reads each weight matrix once per batch
        # (a [b, L, d] @ [d, e] product is b calls, each reading it again: 3x slower for 8 texts).
        h = h.reshape(b * length, self.dim)
        for blk in self.blocks:
            qkv = h @ blk["qkv"][0] + blk["qkv"][1]  # [b * L, 3d]
            qkv = qkv.reshape(b, length, 3, self.heads, hd).transpose(2, 0, 3, 1, 4)  # [3, b, H, L, hd]
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores = scores - scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b * length, self.dim)
            h = _layer_norm(ctx @ blk["attn_out"][0] + blk["attn_out"][1] + h, *blk["attn_ln"], self.eps)
            inter = _gelu(h @ blk["inter"][0] + blk["inter"][1])
            h = _layer_norm(inter @ blk["out"][0] + blk["out"][1] + h, *blk["out_ln"], self.eps)
        summed = (h.reshape(b, length, self.dim) * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
        norm = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norm, np.float32(1e-12))).astype(np.float32)
