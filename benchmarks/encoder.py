"""The numpy MiniLM encoder (`kgdb/text_encoder.py`, what `kgdb ask` encodes with): ms per call for
calls of 1, 3, 8 and 48 texts, the shapes one ask sends (a question; a question with its short
mentions; relation and path texts).

    .venv/bin/python benchmarks/encoder.py [--rounds 20]
    PYTHONPATH=OTHER_CHECKOUT .venv/bin/python benchmarks/encoder.py --save a.npy   # then --compare a.npy

`--save` writes the vectors of every call, `--compare` prints the largest difference from a saved
run (0.0: bitwise the same), so two checkouts can be compared on one machine.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from kgdb.embeddings import get_embedder

QUESTION = "where are the timezones in the usa and what does gm make?"
RELATIONS = [
    "people person place of birth",
    "film film directed by ; film director film",
    "location country capital",
    "music artist genre",
    "sports team roster ; sports roster player",
    "book author works written",
    "tv actor starring roles ; tv regular appearance series",
    "government position held office holder",
]
CALLS = {
    "1 question": [QUESTION],
    "question + 2 short mentions": [QUESTION, "usa", "gm"],
    "8 relation texts": RELATIONS,
    "48 relation texts": RELATIONS * 6,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20, help="timed calls per shape (after one warm-up)")
    parser.add_argument("--save", help="write the vectors of every call here (.npy)")
    parser.add_argument("--compare", help="print the largest difference from vectors saved by --save")
    args = parser.parse_args()
    embedder = get_embedder()
    vectors = []
    for name, texts in CALLS.items():
        vectors.append(embedder.encode(texts))
        start = time.perf_counter()
        for _ in range(args.rounds):
            embedder.encode(texts)
        print(f"{name:28s} {(time.perf_counter() - start) / args.rounds * 1000:7.2f} ms per call")
    stacked = np.concatenate(vectors)
    if args.save:
        np.save(args.save, stacked)
    if args.compare:
        print(f"largest difference from {args.compare}: {float(np.abs(np.load(args.compare) - stacked).max())}")


if __name__ == "__main__":
    main()
