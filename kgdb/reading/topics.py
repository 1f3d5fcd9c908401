"""Which of a question's linked candidates are its topics: the namesakes that compete to be its one topic,
the names written as names among them, and the several topics a question naming more than one thing is
read from, one by one. Rules over the reading (its mentions, the words it writes as names, the noun it
asks for) and linking's scores; the path ranker then weighs the competing candidates by their paths."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from kgdb.reading.names import names_mention
from kgdb.reading.question import LinkedEntity, QuestionReading, Topics

# Topics linked from the text: the first TOPIC_CANDIDATES mentioned candidates within TOPIC_LINK_MARGIN
# of the best link score compete to be the topic (`competing_topics`; the path ranker weighs each by the
# paths from it, `kgdb.rrp.path_ranker.RankedPathPlanner.choose_topic`). Chosen on the WebQSP training split
# on both graphs (docs/answering.md, "Linking by answerability"); the margin keeps ~95 % of the gain at half
# the rankings.
TOPIC_CANDIDATES = 3
TOPIC_LINK_MARGIN = 0.3
# At most this many of them share one mention: a word that names many things alike ("national anthem":
# Chile's, Afghanistan's, Russia's) would otherwise take every place from the name the question is about
# ("the national anthem of the place where Tsakhur is spoken"). Chosen on the CWQ training split.
NAMESAKES_COMPETING = 2
# A name the question writes in quotes or with capitals competes alone (`names_first`), from as far as
# NAME_LINK_MARGIN below the best link score. Chosen on the CWQ training split, topics linked (0.5 against
# 0.8; docs/experiments/2026-11-28-names-as-the-writer-marks-them.md).
NAME_LINK_MARGIN = 0.5
# A question linked from its text is read from each of its first JOIN_CANDIDATES mentioned candidates
# within JOIN_MARGIN of the best link score (`topics_to_join`): wider than the namesakes that compete to
# be its one topic, since a second name ("what david slade film starred taylor lautner?") links lower than
# the first and still has to be reached. Beyond the namesakes' margin only a mention of JOIN_WIDE_WORDS
# words or more joins, or one the question writes with a capital: a lower-case one-word mention that far
# below is most often the question's wording ("what kind of monarchy does japan have?"), a capitalised one
# a name ("...which has a country capital of Grodno?"). A mention whose names link within NAMESAKE_TIE of
# one another names none of them ("world series": the 2010 World Series and the World Series itself) and
# is no topic to be read from; with those left out, the count and margin were widened from 3 and 0.8.
# Chosen on the CWQ and WebQSP training splits, topics linked (docs/experiments/2026-11-28-linked-second-
# topics.md, 2026-11-28-capitalised-names.md, 2026-11-29-names-a-question-is-read-from.md).
JOIN_CANDIDATES = 4
JOIN_MARGIN = 1.2
JOIN_WIDE_WORDS = 2
NAMESAKE_TIE = 0.1


def competing_topics(
    found: Topics, first: int = TOPIC_CANDIDATES, margin: float = TOPIC_LINK_MARGIN
) -> list[LinkedEntity]:
    """The linked candidates that compete to be the topic (`RankedPathPlanner.choose_topic`): the `first`
    mentioned candidates (at most NAMESAKES_COMPETING of one mention) within `margin` of the best link
    score; with a wider count and margin, those a several-topic question is read from when it was linked
    (`kgdb.rrp.retriever.topics_to_join`)."""
    candidates: list[LinkedEntity] = []
    for e in found.linked:
        if not e.mention or sum(c.mention == e.mention for c in candidates) >= NAMESAKES_COMPETING:
            continue
        # a word inside a longer mention ("stone" in "philip stone") stays below it, as the linker ranks it
        if not any(len(c.mention or "") > len(e.mention) and f" {e.mention} " in f" {c.mention} " for c in candidates):
            candidates.append(e)
    return [e for e in candidates[:first] if e.score >= candidates[0].score - margin] if candidates else []


def names_first(reading: QuestionReading, found: Topics) -> list[LinkedEntity]:
    """Of the candidates that compete to be the topic (`competing_topics`), those the question writes as
    names (`written_as_name`: in quotes, or capitalised by a writer who capitalises names); else the names
    among the first TOPIC_CANDIDATES mentioned candidates within NAME_LINK_MARGIN of the best link score;
    else all the competing candidates. A common word of the wording ("the writer who produced the lyrics
    for \"Kaaren\"", "the religion which includes Zhang Jue") links high as a class entity (Writer,
    Religion) and is seldom what the question is about."""
    candidates = competing_topics(found)
    # competing_topics keeps the candidates with a mention only
    names = [e for e in candidates if reading.written_as_name(cast(str, e.mention))]
    if names:
        return names
    wider = competing_topics(found, TOPIC_CANDIDATES, NAME_LINK_MARGIN)
    return [e for e in wider if reading.written_as_name(cast(str, e.mention))] or candidates


def topics_to_join(reading: QuestionReading) -> dict[str, str]:
    """The topics a question is read from one by one (id -> name): every given topic, or, linked from
    the text, the mentioned candidates that compete to be its topic (`competing_topics`) and the names of
    several words (or one the question writes with a capital) linked up to JOIN_MARGIN below the best,
    whose names are their mention (`names_mention`: held, or several words misspelt), one per group of
    words (two namesakes of "kirk" are one topic read two ways, not two topics), the one whose mention holds
    the others' words and more where there is one ("american graffiti series" over "american graffiti"),
    none whose mention names others as well (`NAMESAKE_TIE`), and none whose mention starts with the noun
    the question asks for ("which politician who fought …", "what time zone is …") unless written as a
    name. Fewer than two: no joint reading."""
    found, names = _linked(reading)
    if found.source != "linked":
        return {i: names.get(i, i) for i in found.ids}
    picked: list = []
    near = {e.id for e in competing_topics(found)}
    written = reading.capitalised
    asked = reading.asked_noun  # the noun of "which politician …", "what time zone …"
    for e in competing_topics(found, JOIN_CANDIDATES, JOIN_MARGIN):
        mention = cast(str, e.mention)  # competing_topics keeps the candidates with a mention only
        words = set(mention.split())
        if asked and mention.split()[0] == asked[0] and not words <= written:
            continue  # the kind of thing asked for, not a thing the answer is reached from
        if e.id not in near and len(mention.split()) < JOIN_WIDE_WORDS and not words <= written:
            continue
        if not names_mention(e.name, mention) or _tied_with_a_namesake(e, found):
            continue
        shared = [p for p in picked if words & set(p.mention.split())]
        if not shared:
            picked.append(e)
        elif len(shared) == 1 and words > set(shared[0].mention.split()):
            picked[picked.index(shared[0])] = e
    return {e.id: e.name for e in picked}


def with_the_first_topic(several: dict[str, str], first: Topics, found: Topics) -> dict[str, str]:
    """`several` (the topics a linked question is read from one by one) with the topic its first reading
    chose, which the joint reading needs as much as the others though its name may not be its mention
    ("JFK", "USA", "American League West" for "american league"); a topic whose mention shares a word
    with the chosen one's is a namesake of it and leaves."""
    if found.source != "linked" or len(first.ids) != 1 or first.ids[0] in several:
        return several
    mentions = {e.id: e.mention for e in found.linked}
    chosen = next((e for e in found.linked if e.id == first.ids[0]), None)
    if chosen is None:
        return several
    words = set((chosen.mention or "").split())  # a topic found by its vector alone has no mention
    return {
        chosen.id: chosen.name,
        **{i: n for i, n in several.items() if not words & set((mentions.get(i) or "").split())},
    }


def all_written_as_names(reading: QuestionReading, several: dict[str, str]) -> bool:
    """Whether each of the `several` names a linked question is read from is one it writes as a name (in
    quotes, or capitalised by a writer who capitalises names: `written_as_name`). Such a question, where no
    answer is reached from two of its names, is read from all of them at once, as topics given are: "What
    country neighboring France is the nation where Waldenburg is a second level division?" Names linked from
    words of the wording (Actor, Time Zone) are never given; reading them together was worse."""
    found = _linked(reading)[0]
    if found.source != "linked":
        return False
    mentions = {e.id: e.mention for e in found.linked}
    return all(reading.written_as_name(mentions.get(i) or "") for i in several)


def _tied_with_a_namesake(e: LinkedEntity, found: Topics) -> bool:
    return any(
        o.id != e.id
        and o.mention == e.mention
        and abs(o.score - e.score) <= NAMESAKE_TIE
        and names_mention(o.name, cast(str, o.mention))  # e's mention: e is one of competing_topics
        for o in found.linked
    )


def _linked(reading: QuestionReading) -> tuple[Topics, Mapping[str, str]]:
    if reading.topics is None:
        raise ValueError("the question is not linked yet: QuestionReading.linked(topics, names) first")
    return reading.topics, reading.names
