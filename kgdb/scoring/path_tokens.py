"""How RRP's models read a question and a relation path, without torch: hashed word n-grams of the
question, and (relation, direction) steps as tokens. Token 0 is STOP (the planner's) or padding (the
ranker's); token 1 + 2*r is relation r forward, 2 + 2*r relation r backward."""

from __future__ import annotations

import re
import zlib

STOP = 0
_WORD = re.compile(r"[a-z0-9']+")


def text_features(text: str, buckets: int) -> list[int]:
    """Hashed word unigrams and bigrams of a question (stable across runs: crc32, not hash())."""
    words = ["<s>", *_WORD.findall(text.lower()), "</s>"]
    grams = words[1:-1] + [f"{a} {b}" for a, b in zip(words, words[1:])]
    return [zlib.crc32(g.encode()) % buckets for g in grams] or [0]


def token_of(relation: int, direction: int) -> int:
    return 1 + 2 * relation + (0 if direction > 0 else 1)


def step_of(token: int) -> tuple[int, int]:
    """(relation index, direction) of a non-STOP token."""
    return (token - 1) // 2, 1 if (token - 1) % 2 == 0 else -1
