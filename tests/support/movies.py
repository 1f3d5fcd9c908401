"""A tiny movie graph (films, directors, actors and writers; one pair joined by two relations) with
MetaQA-style 1- and 2-hop question templates over it, for the relation-path (RRP) tests."""

from __future__ import annotations

from kgdb.data.relation_paths import reach

MOVIES = [f"Film {c}" for c in "ABCDEFGHIJ"]
DIRECTORS = ["Ada Lovelace", "Grace Hopper", "Alan Turing"]
ACTORS = ["Marie Curie", "Niels Bohr", "Lise Meitner", "Emmy Noether", "Paul Dirac"]
TRIPLES = sorted(
    {(m, "movie.directed_by", DIRECTORS[i % 3]) for i, m in enumerate(MOVIES)}
    | {(m, "movie.starred_actors", ACTORS[i % 5]) for i, m in enumerate(MOVIES)}
    | {(m, "movie.starred_actors", ACTORS[(i + 2) % 5]) for i, m in enumerate(MOVIES)}
    | {(m, "movie.written_by", DIRECTORS[(i + 1) % 3]) for i, m in enumerate(MOVIES[:4])}
    | {("Film C", "movie.written_by", "Alan Turing")}  # a parallel relationship (Film C: directed_by Alan Turing too)
)
TEMPLATES = {  # hop -> (question template, relation path)
    1: [
        ("who directed [{}]", (("movie.directed_by", 1),), MOVIES),
        ("which films did [{}] direct", (("movie.directed_by", -1),), DIRECTORS),
        ("who acted in [{}]", (("movie.starred_actors", 1),), MOVIES),
    ],
    2: [
        ("who directed the films starring [{}]", (("movie.starred_actors", -1), ("movie.directed_by", 1)), ACTORS),
        (
            "who acted in the films directed by [{}]",
            (("movie.directed_by", -1), ("movie.starred_actors", 1)),
            DIRECTORS,
        ),
        ("which actors co-starred with [{}]", (("movie.starred_actors", -1), ("movie.starred_actors", 1)), ACTORS),
    ],
}


def path_answers(arrays, topic, path):
    """The names the (relation, direction) steps of `path` reach from `topic`, sorted, the topic left out."""
    codes = tuple(2 * arrays.relations.index(r) + (0 if d > 0 else 1) for r, d in path)
    ends = reach(arrays, arrays.index[topic], len(path))[-1].get(codes, [])
    return sorted(arrays.ids[e] for e in ends if arrays.ids[e] != topic)
