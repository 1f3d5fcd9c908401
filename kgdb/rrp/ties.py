"""How the answers tied on a question's best path are ordered (`Gathered.constrain`): by the attribute the
question asks about, its literal constraint (a year bound, "last" / "first") over the years each answer
carries, and, for a question linked from its text, their being next to another entity it mentions. Read
from the question's `QuestionReading` and from what the graph holds about the answers; the ranker's
choice of path stands.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from kgdb.cypher import Graph
from kgdb.cypher.answer_evidence import attached_values, type_features
from kgdb.cypher.topic_intersection import topics_next_to
from kgdb.reading import QuestionReading
from kgdb.reading.constraints import Constraints, word_stems
from kgdb.rrp.answering import Gathered, GroundedPath, best_per_answer, tied_at_best
from kgdb.rrp.constraints import apply_attributes, apply_literal, literal_choice, years_of

# Answers tied on the best path whose attached years a literal constraint reads (the first, by id).
LITERAL_READ = 200
# A linked question's other mentioned candidates its tied answers may be next to (`_next_to_other_mentions`);
# chosen on the CWQ and WebQSP training and val splits, topics linked.
OTHER_MENTIONS = 4


def answer_constraints(
    graph: Graph, reading: QuestionReading, g: Gathered, read_from: Iterable[str] = ()
) -> Callable[[list[str]], list[str]]:
    """`Gathered.constrain`: the question's literal constraint (`kgdb.rrp.constraints`: a year bound,
    "last" / "first"), read over the years each answer tied on the best path carries in its name or in the
    values attached to it or its CVT node; before it, the answers whose own relations name an attribute the
    question asks about and neither its topics nor its paths name (`apply_attributes`: "the university with
    the fewest *postgraduates*" puts a school with `number_of_postgraduates` first, even where the graph lost
    the count); and ahead of all, a linked question's answers next to another entity it mentions
    (`_next_to_other_mentions`; `read_from`: the topics the joint reading read it from besides those of `g`).
    One answer: the order as given. Moves answers only among those tied, so the ranker's choice of path
    stands. Measured on the training and val splits: literal constraints
    ComplexWebQuestions val Hit@1 +0.71, WebQSP and MetaQA val unchanged
    (docs/experiments/2026-11-28-literal-constraints.md); attributes CWQ val +1.07, train +0.82
    (docs/experiments/2026-11-29-attributes-and-descriptions.md); other mentions CWQ val +1, train +5 −1,
    topics linked (docs/experiments/2026-12-01-topics-the-graph-lacks.md). A question asking for a time whose
    tied answers carry no year gets a note (`_note_no_time`), even with one answer. In a joint reading the
    literal constraint first chooses among every joint answer on the planned reading's best path
    (`_literal_over_joint`)."""
    c = reading.constraints
    known = _literal_over_joint(graph, g, c) if g.joint and c.literal else {}
    paths = [p.path for p in g.joint or g.planned]
    best = best_per_answer(paths, set(g.found.ids) | g.cvt)
    tied = tied_at_best(best)
    # years order tied answers for a literal constraint, and say whether a time question reached a time at all
    dated = bool(tied) and (c.asks_a_time or (c.literal and len(tied) > 1))
    years = _answer_years(graph, g, tied, known) if dated else {}
    if c.asks_a_time and tied:
        _note_no_time(g, years)
    if len(tied) < 2:
        return list
    asked = _asked_words(reading, [g.names.get(t, t) for t in g.found.ids], [r for p in paths for r in p.relations])
    # no word left to name an attribute: no query for the tied answers' relations
    relations = type_features(graph, tied[:LITERAL_READ]) if asked else {}
    near = _next_to_other_mentions(graph, reading, g, tied, set(g.found.ids) | set(read_from))

    def order(ordered: list[str]) -> list[str]:
        out = apply_attributes(ordered, relations, asked)
        out = apply_literal(out, years, c) if c.literal else out
        return [a for a in out if a in near] + [a for a in out if a not in near]

    return order


def _answer_years(graph: Graph, g: Gathered, answers: list[str], known: dict[str, list[int]]) -> dict[str, list[int]]:
    """The years each of `answers` carries (`years_of`: its name, and the values attached to it or its CVT node,
    read for the first LITERAL_READ); those in `known` are not read again."""
    new = [a for a in answers if a not in known]
    values = attached_values(graph, new[:LITERAL_READ]) if new else {}
    return {a: known[a] if a in known else years_of(a, g.names.get(a), values.get(a, ())) for a in answers}


def _literal_over_joint(graph: Graph, g: Gathered, c: Constraints) -> dict[str, list[int]]:
    """The answers of the planned reading's best path (tied at its best score) that the joint reading reaches
    too and the question's literal constraint chooses among them (`literal_choice`) are raised to the joint
    reading's best strength, so they are tied with its best answers. A joint answer's strength adds the score
    of the path that reaches it from each topic, and the graph may store the same fact under a relation and
    under its inverse ("Stanley Cup" reaches one final by `championship`, the others by `events`): the second
    topic's scores then rank the answers by how their facts are stored, not by the year the question asks
    for. Measured on the CWQ and WebQSP training and val splits, topics given and linked: one WebQSP training
    question turned right (linked), none wrong. Returns the years it read."""
    excluded = set(g.found.ids) | g.cvt
    best = best_per_answer((p.path for p in g.joint), excluded)
    top = max(best.values(), default=None)
    planned = set(tied_at_best(best_per_answer((p.path for p in g.planned), excluded)))
    pool = sorted((a for a in best if a in planned), key=lambda a: (-best[a], a))[:LITERAL_READ]
    if top is None or all(best[a] == top for a in pool):
        return {}
    years = _answer_years(graph, g, pool, {})
    raised = {a for a in literal_choice(pool, years, c) if best[a] < top}
    if not raised:
        return years
    g.joint = [
        GroundedPath(replace(p.path, score=top), p.triples, p.s1) if p.path.answer in raised else p for p in g.joint
    ]
    g.notes.append(
        f"the question's {'year' if c.bounds else 'last / first'} constraint chose "
        f"{', '.join(sorted(g.names.get(a, a) for a in raised))} among the answers its best path and its topics "
        "together reach"
    )
    return years


def _next_to_other_mentions(
    graph: Graph, reading: QuestionReading, g: Gathered, tied: list[str], read: set[str]
) -> set[str]:
    """The `tied` answers of a question linked from its text that are joined (by one relationship, or two
    through a CVT node) to an entity it mentions and is not read from: one of the first OTHER_MENTIONS linked
    candidates that is none of the topics it was `read` from, whose mention shares no word with
    theirs (a namesake of a topic) and is not the noun the question asks for ("what *state* is …"). "Who is
    JFK's brothers that are *lawyers*?" reads JFK's siblings; the one with the profession Lawyer comes first.
    Empty when none or every tied answer is; else a note names the entities."""
    found = g.found
    if found.source != "linked":
        return set()
    words = {w for e in found.linked if e.id in read and e.mention for w in e.mention.split()}
    words.update(reading.asked_noun)  # the noun of "what state …" is the kind asked for
    kept = [e for e in found.linked if e.mention and e.id not in read and not words & set(e.mention.split())]
    others = {e.id: e.name for e in kept[:OTHER_MENTIONS]}
    if not others:
        return set()
    joined = topics_next_to(graph, tied[:LITERAL_READ], list(others), per_end=1)
    near = {c.answer for c in joined}
    if not near or len(near) == len(tied):
        return set()
    named = sorted({others[t] for c in joined for t in c.topics})
    g.notes.append(f"of the answers tied on the best path, those next to {', '.join(map(repr, named))} come first")
    return near


def _note_no_time(g: Gathered, years: dict[str, list[int]]) -> None:
    """For a question asking for a time: a note where no answer on the best path carries a year (`years`), in
    its name or in a date attached to it or its CVT node. The best path then reads another relation than the
    one asked about ("when did the bruins win the stanley cup?" answered with the teams that beat them), so a
    user looks at the other readings. It changes no answer."""
    if any(years.values()):
        return
    g.notes.append(
        "the question asks for a time, and no answer on the best path carries a year (in its name or a date "
        "attached to it): the path may read another relation than the one asked about"
    )


def _asked_words(reading: QuestionReading, topic_names: list[str], path_relations: list[str]) -> set[str]:
    """The stems of the question's words that neither a topic's name nor a relation of the planned paths writes,
    nor the noun it asks for ("which *school* …": a school's newspaper relation writes "school" too)."""
    known = {s for n in topic_names for s in word_stems(n)} | {s for r in path_relations for s in word_stems(r)}
    return set(reading.stems) - known - reading.cue_stems
