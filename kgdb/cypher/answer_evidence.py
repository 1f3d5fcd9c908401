"""What the graph holds about candidate answers that a constraint needs: their relation types by side (what
kind of thing each is, answer_types.cypher) and the literal values attached to them or to their CVT nodes
(dates and numbers, candidate_dates.cypher). kgdb.rrp.constraints turns these into answer-type and
literal-constraint scores; this module only reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kgdb.cypher import Graph


@dataclass(frozen=True)
class AttachedValue:
    """A literal value attached to a candidate: `relation` names the relationship(s) that hold it
    ("r1 / r2" through the CVT node `via`)."""

    relation: str
    value: str
    via: str | None = None


def type_features(graph: Graph, ids: Sequence[str], *, per_entity: int = 500) -> dict[str, frozenset[str]]:
    """Each known candidate's type evidence: `out:<relation>` / `in:<relation>` for the relationships it
    is the head / tail of, plus `literal` / `cvt` for those node kinds. Unknown ids are left out."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return {}
    out = {}
    for row in graph.run("answer_types", ids=ids, per_entity=int(per_entity)):
        marks = {"literal"} if row["literal"] else set()
        marks |= {"cvt"} if row["cvt"] else set()
        out[row["id"]] = frozenset(row["relations"]) | frozenset(marks)
    return out


def attached_values(graph: Graph, ids: Sequence[str], *, per_entity: int = 200) -> dict[str, list[AttachedValue]]:
    """The literal values one relationship from each candidate or two through a CVT node."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return {}
    return {
        row["id"]: [AttachedValue(v["relation"], str(v["value"]), v["via"]) for v in row["values"]]
        for row in graph.run("candidate_dates", ids=ids, per_entity=int(per_entity))
    }
