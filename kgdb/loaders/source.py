"""What a reader hands to the writer: normalised triples, readable names and what it skipped.

Every reader is a stream first (`SourceStream`: triples and names yielded one at a time, so the
bulk path can write sources of any size with bounded memory) and `collect` turns a stream into the
in-memory `TripleSource` the Bolt writer takes. One reader per format, two consumers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

from kgdb.loaders.badlines import BadLines

Triple = tuple[str, str, str]
# (head, relation, tail, tail is a literal value) — the flag marks RDF literals, which become :Literal.
Record = tuple[str, str, str, bool]


@dataclass
class TripleSource:
    """Triples with ids normalised (`m.0abc`) and relations in Freebase dot form."""

    description: str
    triples: list[Triple]
    names: dict[str, str] = field(default_factory=dict)
    literals: set[str] = field(default_factory=set)  # ids known to be literal values (RDF literals)
    bad: BadLines = field(default_factory=BadLines)
    lines: int = 0  # input lines/rows read
    filtered: int = 0  # well-formed lines dropped by a filter (relation prefix, mid set, language)
    names_unused: int = 0  # names given for ids that no kept triple uses (not loaded, but counted)


@dataclass
class SourceStream:
    """A source read lazily. `records()` yields each triple once; `names()` (when the source has
    names) yields (id, name) pairs after the triples were read. The readers update `lines` and
    `filtered` as they go, and report bad lines to `bad`.

    Names policy, as the in-memory readers always had it: in a names file the last line of an id
    wins and names apply to every entity; names inside N-Triples dumps are first-wins and only
    given to heads and non-literal tails (`inline_names`)."""

    description: str
    bad: BadLines
    records: Callable[[], Iterator[Record]] = lambda: iter(())
    names: Callable[[], Iterator[tuple[str, str]]] | None = None
    inline_names: bool = False
    lines: int = 0
    filtered: int = 0
    names_unused: int = 0  # see TripleSource; the bulk path counts them as it writes the entities


def collect(stream: SourceStream) -> TripleSource:
    """The whole stream in memory (the Bolt path)."""
    source = TripleSource(description=stream.description, triples=[], bad=stream.bad)
    for h, r, t, literal in stream.records():
        source.triples.append((h, r, t))
        if literal:
            source.literals.add(t)
    if stream.names is not None:
        if stream.inline_names:
            wanted = {h for h, _, _ in source.triples} | {t for _, _, t in source.triples if t not in source.literals}
            for entity, name in stream.names():
                if entity not in wanted:
                    source.names_unused += 1  # a count, not a set: a filtered dump names millions of others
                elif entity not in source.names:
                    source.names[entity] = name
        else:
            given = dict(stream.names())
            used = {h for h, _, _ in source.triples} | {t for _, _, t in source.triples}
            source.names = {entity: name for entity, name in given.items() if entity in used}
            source.names_unused = len(given) - len(source.names)
    source.lines, source.filtered = stream.lines, stream.filtered
    return source
