"""Hand-made evidence for the reasoners' tests: a scored triple and the evidence a reasoner reads,
with only the fields the reasoners use."""

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


@dataclass
class E:
    question: str
    triples: list
    topics: list
    topic_names: list
    cvt: set
    paths: tuple = ()
    from_paths: bool = False
