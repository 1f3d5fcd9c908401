"""A Freebase-shaped graph of any size, for scale benchmarks and tests, streamed to disk.

The shape is fitted to the shared data ($KGDB_DATA: the WebQSP Freebase subset and FB15k-237)
and printed next to the real figures: relation vocabulary and frequencies, power-law out- and
in-degree exponents (hubs), triples per entity, CVT share, name lengths. Questions are planted:
each asks for a chain of 1 to 3 relations from a topic entity, and no other triple of the graph
leaves a chain node with that chain's relation, so the planted answers are exactly the answers.

    python benchmarks/synth.py --triples 1000000 --seed 0 --out /tmp/synth-1m
    kgdb load freebase-subset /tmp/synth-1m/triples.tsv --names /tmp/synth-1m/names.tsv
    kgdb load questions /tmp/synth-1m/questions.jsonl

Writes triples.tsv (mid, relation, mid), names.tsv (mid, name; CVT nodes have none, as in
Freebase), questions.jsonl (the `kgdb load questions` JSONL) and stats.json. Memory is bounded by
the entity count (one int32 degree counter per entity for the printed statistics), never by the
triple count: triples are drawn and written in chunks. The same --seed gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
CHUNK = 1 << 20
_SYLLABLES = [c + v + e for c in "bcdfghjklmnprstvwz" for v in "aeiou" for e in ("", "n", "r", "s")]


@dataclass
class Shape:
    """What the generator reproduces; `fit` measures it on real files, `generate` on its output."""

    triples: int
    entities: int
    relations: int
    triples_per_entity: float
    out_alpha: float  # power-law exponent of the out-degree (discrete MLE, degree >= 2)
    in_alpha: float
    max_out_degree: int
    max_in_degree: int
    cvt_share: float  # unnamed compound-value nodes / entities
    name_words_mean: float
    name_chars_mean: float
    top_relation_share: float  # share of triples carried by the most frequent relation


def powerlaw_alpha(degrees: np.ndarray, kmin: int = 2) -> float:
    """Discrete power-law exponent, the Clauset-Shalizi-Newman approximation on degrees >= kmin."""
    k = degrees[degrees >= kmin].astype(np.float64)
    return float(1.0 + len(k) / np.log(k / (kmin - 0.5)).sum()) if len(k) else float("nan")


def _is_cvt(entity: str) -> bool:
    return entity[:2] in ("m.", "g.", "/m", "/g")


def measure(triples, names: dict[str, str] | None) -> tuple[Shape, Counter]:
    """The shape of an in-memory triple list (the real files are small enough)."""
    rel: Counter = Counter()
    out: Counter = Counter()
    inn: Counter = Counter()
    for h, r, t in triples:
        rel[r] += 1
        out[h] += 1
        inn[t] += 1
    entities = set(out) | set(inn)
    if names is None:  # names are ids (WebQSP): unnamed mids are the CVT nodes
        cvt = sum(1 for e in entities if _is_cvt(e))
        labels = [e for e in entities if not _is_cvt(e)]
    else:
        cvt = sum(1 for e in entities if e not in names)
        labels = [names[e] for e in entities if e in names]
    deg_out = np.array([out.get(e, 0) for e in entities])
    deg_in = np.array([inn.get(e, 0) for e in entities])
    n = len(triples)
    return Shape(
        triples=n,
        entities=len(entities),
        relations=len(rel),
        triples_per_entity=n / len(entities),
        out_alpha=powerlaw_alpha(deg_out),
        in_alpha=powerlaw_alpha(deg_in),
        max_out_degree=int(deg_out.max()),
        max_in_degree=int(deg_in.max()),
        cvt_share=cvt / len(entities),
        name_words_mean=float(np.mean([len(x.split()) for x in labels])),
        name_chars_mean=float(np.mean([len(x) for x in labels])),
        top_relation_share=rel.most_common(1)[0][1] / n,
    ), rel


def _read_tsv(path: Path):
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3:
                yield parts[0], parts[1], parts[2]


def _dotted(relation: str) -> str:
    return ".".join(p for p in relation.replace("/", ".").split(".") if p)


@dataclass
class Profile:
    """The fitted generator parameters."""

    relations: list[str]
    relation_p: np.ndarray
    out_alpha: float
    in_alpha: float
    out_hub_ratio: float  # largest degree / mean degree
    in_hub_ratio: float
    triples_per_entity: float
    cvt_share: float
    name_words: np.ndarray  # empirical distribution of words per name: P(words = i + 1)
    real: dict[str, Shape]


def fit(shared: Path) -> Profile:
    """Fit the shape to WebQSP kg.tsv and FB15k-237 (triples + names), each weighted equally."""
    webqsp = list(_read_tsv(shared / "webqsp" / "kg.tsv"))
    fb = [(h, _dotted(r), t) for h, r, t in _read_tsv(shared / "fb15k237" / "triples.tsv")]
    fb_names = dict(
        line.rstrip("\n").split("\t", 1) for line in (shared / "fb15k237" / "names.tsv").open(encoding="utf-8")
    )
    shape_w, rel_w = measure(webqsp, None)
    shape_f, rel_f = measure(fb, fb_names)
    vocab = sorted(set(rel_w) | set(rel_f))
    p = np.array([0.5 * rel_w[r] / shape_w.triples + 0.5 * rel_f[r] / shape_f.triples for r in vocab])
    names = [e for h, _, t in webqsp for e in (h, t) if not _is_cvt(e)] + list(fb_names.values())
    words = np.bincount(np.clip([len(x.split()) for x in names], 1, 12))[1:].astype(np.float64)
    return Profile(
        relations=vocab,
        relation_p=p / p.sum(),
        out_alpha=(shape_w.out_alpha + shape_f.out_alpha) / 2,
        in_alpha=(shape_w.in_alpha + shape_f.in_alpha) / 2,
        out_hub_ratio=(
            shape_w.max_out_degree / shape_w.triples_per_entity + shape_f.max_out_degree / shape_f.triples_per_entity
        )
        / 2,
        in_hub_ratio=(
            shape_w.max_in_degree / shape_w.triples_per_entity + shape_f.max_in_degree / shape_f.triples_per_entity
        )
        / 2,
        # Pooled: WebQSP is a sparse neighbourhood crawl (1.9 triples per entity), FB15k-237 a dense core (21).
        triples_per_entity=(shape_w.triples + shape_f.triples) / (shape_w.entities + shape_f.entities),
        cvt_share=shape_w.cvt_share,  # FB15k-237 has its CVTs collapsed into paths; WebQSP keeps them
        name_words=words / words.sum(),
        real={"webqsp": shape_w, "fb15k237": shape_f},
    )


class Popularity:
    """Entities drawn in proportion to a power-law weight (a Chung-Lu graph: expected degrees follow
    the weights, so the degree distribution has the fitted exponent). Weights are Pareto draws with
    tail exponent alpha, capped at the fitted hub size (largest degree / mean degree), so hubs are
    as big as in the real files and never swallow the graph. Heads and tails have their own weights."""

    def __init__(self, entities: int, alpha: float, hub_ratio: float, rng: np.random.Generator):
        w = (1.0 - rng.random(entities)) ** (-1.0 / max(alpha - 1.0, 0.05))
        for _ in range(20):  # the cap is relative to the capped mean: iterate to the fixed point
            w = np.minimum(w, hub_ratio * w.mean())
        self.cdf = np.cumsum(w)
        self.n = entities
        self.order = np.argsort(-w, kind="stable")  # most popular first

    def draw(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.minimum(np.searchsorted(self.cdf, rng.random(size) * self.cdf[-1], side="right"), self.n - 1)


def mid(i: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        i, d = divmod(i, 36)
        out = digits[d] + out
        if not i:
            return "m.0syn" + out


def is_cvt(entity: np.ndarray, share: float, seed: int) -> np.ndarray:
    """A fixed hash decides per entity; hubs (the 1% most popular head ranks) are never CVT."""
    h = (entity.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(seed)) & np.uint64((1 << 32) - 1)
    return h.astype(np.float64) / float(1 << 32) < share


def names_chunk(start: int, stop: int, profile: Profile, seed: int) -> list[str]:
    rng = np.random.default_rng([seed, 1, start])
    words = rng.choice(len(profile.name_words), size=stop - start, p=profile.name_words) + 1
    syl = rng.integers(0, len(_SYLLABLES), size=(stop - start, 12, 3))
    nsyl = rng.integers(1, 4, size=(stop - start, 12))
    return [
        " ".join("".join(_SYLLABLES[s] for s in syl[i, w, : nsyl[i, w]]).capitalize() for w in range(words[i]))
        for i in range(stop - start)
    ]


def relation_text(relation: str) -> str:
    return relation.rsplit(".", 1)[-1].replace("_", " ")


def generate(triples: int, seed: int, out: Path, profile: Profile, questions: int) -> Shape:
    out.mkdir(parents=True, exist_ok=True)
    n = max(16, int(round(triples / profile.triples_per_entity)))
    rng = np.random.default_rng([seed, 0])
    heads = Popularity(n, profile.out_alpha, profile.out_hub_ratio, rng)
    tails = Popularity(n, profile.in_alpha, profile.in_hub_ratio, rng)
    rel_cdf = np.cumsum(profile.relation_p)
    n_rel = len(profile.relations)
    hubs = set(heads.order[: max(1, n // 100)].tolist())
    cvt = lambda e: bool(is_cvt(np.array([e]), profile.cvt_share, seed)[0]) and e not in hubs  # noqa: E731

    # Planted chains first: each node of a chain keeps its chain relation to itself.
    planted: list[tuple[int, int, int]] = []
    reserved: set[int] = set()  # head * n_rel + relation pairs no random triple may use
    qs = []
    names_needed: dict[int, None] = {}
    middle = heads.order[n // 100 : max(n // 100 + 1, n // 5)]  # mid-popularity entities as topics
    for qi in range(questions):
        hop = 1 + qi % 3
        topic = int(rng.choice(middle))
        while cvt(topic) or topic * n_rel in reserved:
            topic = (topic + 1) % n
        frontier, rels = [topic], []
        for step in range(hop):
            r = int(np.searchsorted(rel_cdf, rng.random() * rel_cdf[-1]))
            while any(node * n_rel + r in reserved for node in frontier):  # another chain owns it
                r = (r + 1) % n_rel
            rels.append(r)
            nxt = []
            for node in frontier:
                reserved.add(node * n_rel + r)
                fan = 1 if step < hop - 1 else int(rng.integers(1, 4))
                for _ in range(fan):
                    t = int(tails.draw(rng, 1)[0])
                    if t == node:
                        t = (t + 1) % n
                    planted.append((node, r, t))
                    nxt.append(t)
            frontier = list(dict.fromkeys(nxt))
        for e in [topic, *frontier]:
            names_needed[e] = None
        text = relation_text(profile.relations[rels[0]])
        qs.append((f"synth-{seed}-{qi}", rels, topic, frontier, hop, text))

    deg_out = np.zeros(n, np.int32)
    deg_in = np.zeros(n, np.int32)
    rel_count = np.zeros(n_rel, np.int64)
    reserved_keys = np.fromiter(sorted(reserved), np.int64)
    written = 0
    start = time.perf_counter()
    with (out / "triples.tsv").open("w", encoding="utf-8") as fh:

        def emit(h: np.ndarray, r: np.ndarray, t: np.ndarray) -> None:
            nonlocal written
            np.add.at(deg_out, h, 1)
            np.add.at(deg_in, t, 1)
            rel_count[:] += np.bincount(r, minlength=n_rel)
            fh.write(
                "".join(
                    f"{mid(a)}\t{profile.relations[b]}\t{mid(c)}\n"
                    for a, b, c in zip(h.tolist(), r.tolist(), t.tolist())
                )
            )
            written += len(h)

        p = np.array(planted, np.int64).reshape(-1, 3)
        emit(p[:, 0], p[:, 1], p[:, 2])
        while written < triples:
            size = min(CHUNK, triples - written)
            h, t = heads.draw(rng, size), tails.draw(rng, size)
            r = np.minimum(np.searchsorted(rel_cdf, rng.random(size) * rel_cdf[-1]), n_rel - 1)
            keep = (h != t) & ~np.isin(h * n_rel + r, reserved_keys)
            emit(h[keep], r[keep], t[keep])
            print(
                f"triples: {written:,}/{triples:,} ({written / triples:.0%}), {time.perf_counter() - start:.1f} s",
                file=sys.stderr,
            )

    used = (deg_out + deg_in) > 0
    ids = np.flatnonzero(used)
    cvt_mask = is_cvt(ids, profile.cvt_share, seed) & ~np.isin(ids, np.fromiter(hubs, np.int64))
    cvt_mask &= ~np.isin(ids, np.fromiter(names_needed, np.int64))
    name_words: list[int] = []
    name_chars: list[int] = []
    topic_names: dict[int, str] = {}
    with (out / "names.tsv").open("w", encoding="utf-8") as fh:
        for lo in range(0, len(ids), CHUNK):
            block, block_cvt = ids[lo : lo + CHUNK], cvt_mask[lo : lo + CHUNK]
            labels = names_chunk(lo, lo + len(block), profile, seed)
            lines = []
            for e, c, name in zip(block.tolist(), block_cvt.tolist(), labels):
                if c:
                    continue
                name = f"{name} {mid(e)[6:].upper()}" if e in names_needed else name  # topics and answers unique
                if e in names_needed:
                    topic_names[e] = name
                lines.append(f"{mid(e)}\t{name}\n")
                if len(name_words) < 200_000:
                    name_words.append(len(name.split()))
                    name_chars.append(len(name))
            fh.write("".join(lines))

    with (out / "questions.jsonl").open("w", encoding="utf-8") as fh:
        for qid, rels, topic, answers, hop, _ in qs:
            chain = " of the ".join(relation_text(profile.relations[r]) for r in reversed(rels))
            fh.write(
                json.dumps(
                    {
                        "id": qid,
                        "question": f"what is the {chain} of {topic_names[topic]}?",
                        "q_entity": [mid(topic)],
                        "a_entity": [mid(a) for a in answers],
                        "answer": [topic_names[a] for a in answers],
                        "hop": hop,
                        "relations": [profile.relations[r] for r in rels],
                    }
                )
                + "\n"
            )

    shape = Shape(
        triples=written,
        entities=int(used.sum()),
        relations=int((rel_count > 0).sum()),
        triples_per_entity=written / max(1, int(used.sum())),
        out_alpha=powerlaw_alpha(deg_out[used]),
        in_alpha=powerlaw_alpha(deg_in[used]),
        max_out_degree=int(deg_out.max()),
        max_in_degree=int(deg_in.max()),
        cvt_share=float(cvt_mask.mean()),
        name_words_mean=float(np.mean(name_words)),
        name_chars_mean=float(np.mean(name_chars)),
        top_relation_share=float(rel_count.max() / written),
    )
    return shape


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--triples", type=int, required=True, help="number of triples to write")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True, help="folder for triples.tsv, names.tsv, questions.jsonl")
    ap.add_argument("--questions", type=int, default=600, help="planted questions (1, 2 and 3 hops in turn)")
    ap.add_argument("--shared", type=Path, default=SHARED, help="the shared data folder to fit the shape to")
    args = ap.parse_args()
    if args.triples < 100:
        sys.exit("--triples: at least 100")
    if not (args.shared / "webqsp" / "kg.tsv").is_file() or not (args.shared / "fb15k237" / "names.tsv").is_file():
        sys.exit(f"--shared: {args.shared} lacks webqsp/kg.tsv or fb15k237/ (the data the shape is fitted to)")
    t = time.perf_counter()
    profile = fit(args.shared)
    shape = generate(args.triples, args.seed, args.out, profile, args.questions)
    fitted = {
        "out_alpha": profile.out_alpha,
        "in_alpha": profile.in_alpha,
        "triples_per_entity": profile.triples_per_entity,
        "cvt_share": profile.cvt_share,
        "relations": len(profile.relations),
    }
    rows = {**{k: asdict(v) for k, v in profile.real.items()}, "fitted": fitted, "generated": asdict(shape)}
    (args.out / "stats.json").write_text(
        json.dumps({"seed": args.seed, "triples": args.triples, "shape": rows}, indent=1)
    )

    def cell(value) -> str:
        return (
            f"{value:>14,.3f}" if isinstance(value, float) else f"{value:>14,}" if value is not None else f"{'-':>14}"
        )

    print(f"{'statistic':<20}" + "".join(f"{k:>14}" for k in rows))
    for field in asdict(shape):
        print(f"{field:<20}" + "".join(cell(rows[k].get(field)) for k in rows))
    print(
        f"wrote {shape.triples:,} triples, {shape.entities:,} entities and {args.questions} questions to {args.out} "
        f"in {time.perf_counter() - t:.1f} s (seed {args.seed})"
    )


if __name__ == "__main__":
    main()
