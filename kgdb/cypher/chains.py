"""Evidence chains (ReG's structure-aware reorganisation, Algorithm 1 + App. D.4) over one run.

Expansion runs in Cypher, one BFS level per query (`chains_seed.cypher`, `chains_expand.cypher`),
from the run's topic entities over its SCORED edges, forward (anchor is the head of the first triple)
and mirrored (anchor is the tail of the last triple). Merging and ranking happen here:

- prefixes: a chain that is the start of a longer chain adds nothing and is dropped;
- multi-answer merge: chains with the same anchor, direction and relation sequence become one, with
  targets (and differing intermediate entities) joined by "; ";
- ranking: a chain's score is its weakest edge (min score); a merged chain takes its best member;
  order is score desc, then fewer hops, then the rendered text (deterministic);
- multi-entity merge (more than one topic entity): walking the ranking, each chain pulls in the
  best-ranked chain of every other anchor whose targets overlap the running intersection; the
  group is placed together and every member's targets become the intersection;
- triples on no chain (not reachable within L hops, or a second route to an entity already reached)
  are kept in `Chains.unreachable`, best rank first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgdb.cypher import Graph
from kgdb.errors import KgdbError

ARROW = " → "


@dataclass(frozen=True)
class ChainEdge:
    """A scored edge of a write-back run, as a chain reads it (`kgdb.protocol.ScoredTriple` is a
    retriever's scored triple of a question)."""

    eid: str
    h: str
    h_name: str
    rel: str
    t: str
    t_name: str
    score: float
    rank: int

    def render(self) -> str:
        return f"{self.h_name}{ARROW}[{self.rel}]{ARROW}{self.t_name}"


@dataclass
class Chain:
    """One (possibly merged) evidence chain. `relations[0]` touches the anchor."""

    anchor: str  # entity id
    anchor_name: str
    direction: str  # "out": anchor → … → targets; "in": targets → … → anchor
    relations: tuple[str, ...]
    middle: list[list[str]]  # names of the intermediate entities per position (from the anchor outward)
    targets: list[str]  # entity ids at the far end
    target_names: list[str]
    score: float
    triples: list[ChainEdge] = field(default_factory=list)
    group: int | None = None  # multi-entity merge group (chains placed together)

    @property
    def hops(self) -> int:
        return len(self.relations)

    def render(self) -> str:
        """`h → [r] → t → [r2] → t2`, merged entities joined by '; ' (edges keep the graph's direction)."""
        far = "; ".join(self.target_names)
        mids = ["; ".join(m) for m in self.middle]
        if self.direction == "out":
            parts = [self.anchor_name]
            for rel, node in zip(self.relations, mids + [far]):
                parts += [f"[{rel}]", node]
        else:
            parts = [far]
            for rel, node in zip(reversed(self.relations), list(reversed(mids)) + [self.anchor_name]):
                parts += [f"[{rel}]", node]
        return ARROW.join(parts)


@dataclass
class Chains:
    run: str
    question: str | None
    anchors: list[str]
    chains: list[Chain]
    unreachable: list[ChainEdge]

    def render(self, unreachable: bool = True) -> str:
        lines = [f"Chain {i}. {c.render()}" for i, c in enumerate(self.chains, 1)]
        if unreachable and self.unreachable:
            lines.append("Other triples:")
            lines += [f"- {t.render()}" for t in self.unreachable]
        return "\n".join(lines)


def evidence_chains(graph: Graph, run: str, max_hops: int | None = 2) -> Chains:
    """Chains of run `run`, at most `max_hops` triples long (None: until no chain grows)."""
    if max_hops is not None and max_hops < 1:
        raise KgdbError(f"max_hops must be at least 1 (or unlimited), got {max_hops}")
    info = graph.single("chains_edges", run=run)
    if info is None:
        raise KgdbError(f"no retrieval run {run!r} (see `kgdb runs list`)")
    edges = {e["eid"]: ChainEdge(**e) for e in info["edges"]}
    anchors = sorted(info["anchors"])
    raw: list[dict] = []
    for direction in ("out", "in"):
        raw += _bfs(graph, run, direction, anchors, max_hops, limit=len(edges) + 1)
    for path in raw:
        path["triples"] = [edges[e] for e in path["edges"]]
    chains = _rank(_merge_answers(_drop_prefixes(raw)))
    if len(anchors) > 1:
        chains = _merge_entities(chains)
    used = {t.eid for c in chains for t in c.triples}
    unreachable = sorted((t for t in edges.values() if t.eid not in used), key=lambda t: t.rank)
    return Chains(run, info["question"], anchors, chains, unreachable)


def _bfs(graph: Graph, run: str, direction: str, anchors: list[str], max_hops: int | None, limit: int) -> list[dict]:
    level = graph.run("chains_seed", run=run, direction=direction)
    found = list(level)
    visited: list[list[str]] = []
    hops = 1
    while level and (max_hops is None or hops < max_hops) and hops < limit:
        level = graph.run("chains_expand", run=run, direction=direction, paths=level, anchors=anchors, visited=visited)
        visited += [[p["anchor"], p["last"]] for p in level]
        found += level
        hops += 1
    for path in found:
        path["direction"] = direction
    return found


def _drop_prefixes(paths: list[dict]) -> list[dict]:
    prefixes = {(p["direction"], tuple(p["edges"][:i])) for p in paths for i in range(1, len(p["edges"]))}
    return [p for p in paths if (p["direction"], tuple(p["edges"])) not in prefixes]


def _merge_answers(paths: list[dict]) -> list[Chain]:
    groups: dict[tuple, list[dict]] = {}
    for p in paths:
        key = (p["anchor"], p["direction"], tuple(t.rel for t in p["triples"]))
        groups.setdefault(key, []).append(p)
    chains = []
    for (anchor, direction, relations), members in groups.items():
        names = {}
        for p in members:
            for t in p["triples"]:
                names[t.h], names[t.t] = t.h_name, t.t_name
        middle = [_distinct(names[p["nodes"][i]] for p in members) for i in range(1, len(relations))]
        targets = _distinct(p["last"] for p in members)
        chains.append(
            Chain(
                anchor=anchor,
                anchor_name=names[anchor],
                direction=direction,
                relations=relations,
                middle=middle,
                targets=targets,
                target_names=[names[t] for t in targets],
                score=max(min(t.score for t in p["triples"]) for p in members),
                triples=sorted({t for p in members for t in p["triples"]}, key=lambda t: t.rank),
            )
        )
    return chains


def _rank(chains: list[Chain]) -> list[Chain]:
    return sorted(chains, key=lambda c: (-c.score, c.hops, c.render()))


def _merge_entities(chains: list[Chain]) -> list[Chain]:
    placed: set[int] = set()
    out: list[Chain] = []
    group = 0
    for i, chain in enumerate(chains):
        if i in placed:
            continue
        placed.add(i)
        members, shared, anchors = [chain], set(chain.targets), {chain.anchor}
        for j in range(i + 1, len(chains)):
            other = chains[j]
            if j in placed or other.anchor in anchors or not shared & set(other.targets):
                continue
            shared &= set(other.targets)
            members.append(other)
            anchors.add(other.anchor)
            placed.add(j)
        if len(members) > 1:
            group += 1
            for m in members:
                keep = [k for k, t in enumerate(m.targets) if t in shared]
                m.targets = [m.targets[k] for k in keep]
                m.target_names = [m.target_names[k] for k in keep]
                m.group = group
        out += members
    return out


def _distinct(values) -> list:
    return list(dict.fromkeys(values))
