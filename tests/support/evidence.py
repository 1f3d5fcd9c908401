"""Hand-made evidence for the reasoners' tests: a scored triple with only the fields the reasoners read
(`kgdb.qa.reasoners.base.EvidenceTriple`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class T:
    head: str
    relation: str
    tail: str
    score: float = 1.0
    head_id: str = ""
    tail_id: str = ""
