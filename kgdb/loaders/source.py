"""What a reader hands to the writer: normalised triples, readable names and what it skipped."""

from __future__ import annotations

from dataclasses import dataclass, field

from kgdb.loaders.badlines import BadLines

Triple = tuple[str, str, str]


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
