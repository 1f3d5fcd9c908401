"""A package of its own that plugs into kgdb by entry points only (kgdb_demo_plugins-0.1.dist-info):
a question-level retriever, a relation-path planner and a reasoner, each on kgdb's public seams. With
this folder on PYTHONPATH, `kgdb ask --retriever demo-neighbours`, `--planner demo-words` and
`--reasoner demo-far-end` use them, and `kgdb ask --help` lists them."""

from __future__ import annotations

from kgdb.errors import InputError
from kgdb.protocol import Retrieval, ScoredTriple
from kgdb.qa.planners import PlannerKind
from kgdb.qa.question_retrievers import QuestionRetrieverKind
from kgdb.qa.reasoners import ReasonerKind, Reasoning
from kgdb.reading import QuestionReading
from kgdb.reading.constraints import word_stems
from kgdb.rrp.plan import PathPlanner, Plan, PlannedPath, names_of

# write-back runs are relationships between entities too: never evidence
AROUND = """
MATCH (e:Entity)-[r]-(x:Entity) WHERE e.id IN $ids AND type(r) <> 'SCORED'
RETURN startNode(r).id AS head_id, startNode(r).name AS head, type(r) AS relation,
       endNode(r).id AS tail_id, endNode(r).name AS tail, startNode(r) = e AS outgoing
LIMIT $limit
"""
NAMED = "MATCH (e:Entity) WHERE e.id IN $keys OR e.name IN $keys RETURN DISTINCT e.id AS id, e.name AS name"


def overlap(reading: QuestionReading, relation: str) -> int:
    """How many word stems the question, as read, shares with a relation's name."""
    return len(reading.stems & word_stems(relation))


class NeighbourRetriever:
    """The triples around the topics, those whose relation words the question uses first."""

    name = "demo-neighbours"

    def __init__(self, graph, k: int):
        self.graph, self.k = graph, k

    def retrieve(
        self, question: QuestionReading, topics: list[str] | None = None, *, qid: str | None = None
    ) -> Retrieval:
        if not topics:
            raise InputError("demo-neighbours links nothing itself: name the topic entities", path="--topic")
        named = {r["id"]: r["name"] for r in self.graph.run_text(NAMED, keys=list(topics))}
        rows = self.graph.run_text(AROUND, ids=list(named), limit=1000)
        rows.sort(key=lambda r: (-overlap(question, r["relation"]), r["relation"], r["head"], r["tail"]))
        triples = [
            ScoredTriple(
                rank,
                r["head"],
                r["relation"],
                r["tail"],
                float(overlap(question, r["relation"])),
                r["head_id"],
                r["tail_id"],
                -1,
            )
            for rank, r in enumerate(rows[: self.k], 1)
        ]
        names = {**named, **{t.head_id: t.head for t in triples}, **{t.tail_id: t.tail for t in triples}}
        return Retrieval(question.text, qid, self.name, self.k, list(named), triples, names=names)


class WordsPlanner(PathPlanner):
    """One-hop relation paths from the topics, scored by the words the question shares with them."""

    name = "demo-words"

    def plan(self, graph, reading, topics, names) -> Plan:
        rows = graph.run_text(AROUND, ids=list(topics.ids), limit=1000)
        steps = {(r["relation"], 1 if r["outgoing"] else -1) for r in rows}
        scored = sorted(((overlap(reading, rel), rel, d) for rel, d in steps), reverse=True)
        paths = tuple(PlannedPath((rel,), float(score), (d,)) for score, rel, d in scored[:3] if score > 0)
        return Plan(topics, names_of(topics, names), paths, reading.plain())


class FarEnd:
    """Answers with the end of the best evidence triple that is not a topic."""

    name, uses_llm = "demo-far-end", False

    def reason(self, prompt, evidence=None, names=None) -> Reasoning:
        topics = set(evidence.topic_names) if evidence is not None else set()
        ends = [t.tail if t.tail not in topics else t.head for t in (evidence.triples if evidence else [])]
        answers = [e for e in ends if e not in topics][:1]
        return Reasoning(
            answers, "ans: " + (answers[0] if answers else "not available"), self.name, False, refused=not answers
        )

    def settings(self) -> dict:
        return {"reasoner": self.name}


RETRIEVER = QuestionRetrieverKind(
    "demo-neighbours",
    lambda graph, settings, options: NeighbourRetriever(graph, options.k),
    "demo plugin: the triples around the topics, those whose relation words the question uses first",
    evidence="triples around the topics",
)
PLANNER = PlannerKind(
    "demo-words",
    lambda graph, settings, checkpoint: WordsPlanner(),
    "demo plugin: one-hop relation paths whose words the question uses",
    needs_checkpoint=False,
)
REASONER = ReasonerKind(
    "demo-far-end", lambda settings, **options: FarEnd(), "demo plugin: the far end of the best evidence triple"
)
