"""Constraints on the core answer (kgdb/pipeline/constraints.py) over what a hand-made graph holds about the
candidates (kgdb/cypher/answer_evidence.py): year bounds, last / first, and answer types learned from relations."""

from __future__ import annotations

from kgdb.cypher.answer_evidence import attached_values, type_features
from kgdb.loaders.writer import write_graph
from kgdb.reading import LinkedEntity, Topics, read_question
from kgdb.reading.constraints import YearBound, parse_constraints
from kgdb.rrp.constraints import AnswerTypeModel, apply_bounds, apply_extreme, apply_literal, years_of

# A team's finals: two won (the date on the final itself, or on a CVT node of the final), one lost; films with
# release dates; people with birthplaces, and a school.
GRAPH = [
    ("Giants", "sports.sports_team.championships", "Final A"),
    ("Giants", "sports.sports_team.championships", "Final B"),
    ("Final C", "sports.sports_championship_event.runner_up", "Giants"),
    ("Final A", "time.event.start_date", "1987-01-25"),
    ("Final B", "sports.sports_championship_event.result", "m.0result_b"),
    ("m.0result_b", "sports.result.date", "2012-02-05"),
    ("Final C", "time.event.start_date", "2001-01-28"),
    ("Director", "film.director.film", "Film Old"),
    ("Director", "film.director.film", "Film New"),
    ("Director", "film.director.film", "Film Mid"),
    ("Film Old", "film.film.initial_release_date", "1994"),
    ("Film Mid", "film.film.initial_release_date", "2000"),
    ("Film New", "film.film.initial_release_date", "2006-07-01"),
    ("Ann", "people.person.place_of_birth", "Springfield"),
    ("Bob", "people.person.place_of_birth", "Shelbyville"),
    ("Cid", "people.person.place_of_birth", "Springfield"),
    ("Ann", "people.person.spouse_s", "m.0marriage_ab"),
    ("Bob", "people.person.spouse_s", "m.0marriage_ab"),
    ("Ann", "people.person.education", "m.0edu_a"),
    ("m.0edu_a", "education.education.institution", "Springfield College"),
    ("Springfield College", "location.location.containedby", "Springfield"),
    ("Shelbyville", "location.location.containedby", "State"),
    ("Springfield", "location.location.containedby", "State"),
]


def test_years_come_from_the_name_and_from_values_attached_directly_or_through_a_cvt(kept_graph):
    graph = kept_graph(GRAPH, embed=False)
    values = attached_values(graph, ["Final A", "Final B", "Final C", "Giants", "no such entity"])
    assert [v.value for v in values["Final A"]] == ["1987-01-25"]
    assert [(v.value, v.via) for v in values["Final B"]] == [("2012-02-05", "m.0result_b")]
    assert values["Giants"] == [] and "no such entity" not in values
    assert years_of("Final B", "Final B", values["Final B"]) == [2012]
    assert years_of("2011 Stanley Cup Finals", None, []) == [2011]


def test_last_puts_the_latest_won_final_first_and_first_the_earliest(kept_graph):
    graph = kept_graph(GRAPH, embed=False)
    won = ["Final A", "Final B"]  # the ranker's order, the runner-up final already excluded by the path
    values = attached_values(graph, won)
    years = {c: years_of(c, c, values.get(c, [])) for c in won}
    assert apply_literal(won, years, parse_constraints("when did the giants last win the final?")) == [
        "Final B",
        "Final A",
    ]
    assert apply_literal(won[::-1], years, parse_constraints("when did the giants first win the final?")) == [
        "Final A",
        "Final B",
    ]
    assert apply_extreme(["Undated"] + won, years, "latest") == ["Final B", "Undated", "Final A"]


def test_year_bounds_put_films_released_after_before_or_in_a_year_first(kept_graph):
    graph = kept_graph(GRAPH, embed=False)
    films = ["Film Old", "Film Mid", "Film New"]
    values = attached_values(graph, films)
    years = {c: years_of(c, c, values.get(c, [])) for c in films}
    assert years == {"Film Old": [1994], "Film Mid": [2000], "Film New": [2006]}
    assert apply_literal(films, years, parse_constraints("which film did he release after 2000?")) == [
        "Film New",
        "Film Old",
        "Film Mid",
    ]
    assert apply_bounds(films, years, [YearBound("before", 2000)]) == ["Film Old", "Film Mid", "Film New"]
    assert apply_bounds(films, years, [YearBound("in", 2000)]) == ["Film Mid", "Film Old", "Film New"]
    # a bound no candidate meets changes nothing, and the list is never emptied
    assert apply_literal(films, years, parse_constraints("a film released in 1950?")) == films
    # the latest among those released before 2001
    assert apply_literal(films, years, parse_constraints("his latest film released before 2001?"))[0] == "Film Mid"


def test_answer_types_learned_from_the_graph_put_a_place_first_for_where_and_a_person_for_who(kept_graph):
    graph = kept_graph(GRAPH, embed=False)
    people, places = ["Ann", "Bob", "Cid"], ["Springfield", "Shelbyville"]
    feats = type_features(graph, people + places + ["Springfield College", "m.0marriage_ab", "1987-01-25"])
    assert (
        "out:people.person.place_of_birth" in feats["Ann"] and "in:people.person.place_of_birth" in feats["Springfield"]
    )
    assert "cvt" in feats["m.0marriage_ab"] and "literal" in feats["1987-01-25"]
    # training questions: a where-question's gold is the place, a who-question's the person, each against the other
    examples = []
    for person, place in zip(people, ["Springfield", "Shelbyville", "Springfield"]):
        examples.append(("where", [feats[person], feats[place]], [False, True]))
        examples.append(("who", [feats[place], feats[person]], [False, True]))
    model = AnswerTypeModel.fit(examples, min_questions=2, min_count=2)
    # the spouse's birthplace question answered with the spouse (a person) first: the place goes first
    assert model.rerank("where", ["Bob", "Shelbyville"], feats) == ["Shelbyville", "Bob"]
    assert model.rerank("who", ["Shelbyville", "Bob"], feats) == ["Bob", "Shelbyville"]
    # a cue never seen falls back to its wh-word; a list whose first already fits is kept
    assert model.rerank("where exactly", ["Bob", "Shelbyville"], feats) == ["Shelbyville", "Bob"]
    assert model.rerank("where", ["Springfield", "Shelbyville", "Bob"], feats) == ["Springfield", "Shelbyville", "Bob"]
    # too few training questions for a cue: no weights, the order stays
    assert AnswerTypeModel.fit(examples, min_questions=10).rerank("where", ["Bob", "Shelbyville"], feats) == [
        "Bob",
        "Shelbyville",
    ]


def test_answering_puts_the_last_won_final_first_among_the_answers_tied_on_the_best_path(kept_graph):
    from kgdb.protocol import ScoredPath
    from kgdb.rrp.answering import Gathered, GroundedPath, answers_of, ranked_answers
    from kgdb.rrp.ties import answer_constraints

    graph = kept_graph(GRAPH, embed=False)

    def won(final: str, score: float) -> GroundedPath:
        path = ScoredPath(score, ("Giants", final), ("sports.sports_team.championships",), (1,), source="rrp-ranker")
        return GroundedPath(path, [(f"e-{final}", "Giants", "sports.sports_team.championships", final)], score)

    # the ranker's tie: both finals won on one path, the name orders them; a weaker path reaches the lost final
    planned = [won("Final A", 0.8), won("Final B", 0.8), won("Final C", 0.1)]

    def gathered(question: str) -> Gathered:
        g = Gathered(Topics(["Giants"], "given", [], []), {}, set(), planned, [], {}, {}, [], lambda ids: {}, None)
        g.constrain = answer_constraints(graph, read_question(question).linked(g.found, g.names), g)
        return g

    plain = gathered("when did the giants win the final?")
    assert answers_of("planner", plain, 0.5, 0.0) == ["Final A", "Final B"]
    last = gathered("when was the last time the giants won the final?")
    assert answers_of("planner", last, 0.5, 0.0) == ["Final B", "Final A"]
    assert answers_of("planner", gathered("when did the giants first win the final?"), 0.5, 0.0) == [
        "Final A",
        "Final B",
    ]
    # the order `kgdb ask` keeps (`ranked_answers`) agrees, and an answer off the best path never moves up
    best = {"Final A": 0.8, "Final B": 0.8, "Final C": 0.1}
    assert ranked_answers(best, last) == ["Final B", "Final A", "Final C"]
    assert ranked_answers(best, gathered("what did the giants win in 2001?")) == ["Final A", "Final B", "Final C"]


def test_answering_puts_the_school_with_the_asked_attribute_first_among_the_tied_answers(graph):
    from kgdb.protocol import ScoredPath
    from kgdb.rrp.answering import Gathered, GroundedPath, answers_of
    from kgdb.rrp.ties import answer_constraints

    write_graph(
        graph,
        [
            ("Ada", "people.person.education", "m.0edu_alder"),
            ("m.0edu_alder", "education.education.institution", "Alder College"),
            ("Ada", "people.person.education", "m.0edu_birch"),
            ("m.0edu_birch", "education.education.institution", "Birch School"),
            # the count itself is missing, as in a cut-out subgraph: the relationship to its CVT node is left
            ("Birch School", "education.university.number_of_postgraduates", "m.0count"),
            # a relationship named after the kind of thing asked for ("which school …") tells nothing
            ("Birch Bugle", "education.school_newspaper.school", "Birch School"),
            ("Alder College", "location.location.containedby", "State"),
            ("Birch School", "location.location.containedby", "State"),
        ],
        embedder=None,
    )
    relations = ("people.person.education", "education.education.institution")

    def attended(cvt: str, school: str) -> GroundedPath:
        path = ScoredPath(0.7, ("Ada", cvt, school), relations, (1, 1), source="rrp-ranker")
        triples = [(f"e-{cvt}", "Ada", relations[0], cvt), (f"e-{school}", cvt, relations[1], school)]
        return GroundedPath(path, triples, 0.7)

    planned = [attended("m.0edu_alder", "Alder College"), attended("m.0edu_birch", "Birch School")]

    def first(question: str) -> list[str]:
        g = Gathered(
            Topics(["Ada"], "given", [], []),
            {},
            {"m.0edu_alder", "m.0edu_birch"},
            planned,
            [],
            {},
            {},
            [],
            lambda ids: {},
            None,
        )
        g.constrain = answer_constraints(graph, read_question(question).linked(g.found, g.names), g)
        return answers_of("planner", g, 0.5, 0.0)

    assert first("which school did ada attend?") == ["Alder College", "Birch School"]
    assert first("which university with the fewest postgraduates did ada attend?") == ["Birch School", "Alder College"]
    # an attribute both schools have tells nothing
    assert first("which school in the state did ada attend?") == ["Alder College", "Birch School"]


def test_a_linked_question_puts_the_tied_answers_next_to_another_entity_it_mentions_first(graph):
    from kgdb.protocol import ScoredPath
    from kgdb.rrp.answering import Gathered, GroundedPath, answers_of
    from kgdb.rrp.ties import answer_constraints

    sibling = ("people.person.sibling_s", "people.sibling_relationship.sibling")
    write_graph(
        graph,
        [
            ("Jack", sibling[0], "m.0sib_abe"),
            ("m.0sib_abe", sibling[1], "Abe"),
            ("Jack", sibling[0], "m.0sib_zed"),
            ("m.0sib_zed", sibling[1], "Zed"),
            ("Zed", "people.person.profession", "Lawyer"),
            ("Abe", "people.person.profession", "Pilot"),
            ("Zed", "people.person.friend", "Jack Lawyer Jr."),
        ],
        embedder=None,
    )

    def brother(cvt: str, who: str) -> GroundedPath:
        path = ScoredPath(0.6, ("Jack", cvt, who), sibling, (1, 1), source="rrp-ranker")
        return GroundedPath(path, [(f"e-{cvt}", "Jack", sibling[0], cvt), (f"e-{who}", cvt, sibling[1], who)], 0.6)

    planned = [brother("m.0sib_abe", "Abe"), brother("m.0sib_zed", "Zed")]
    jack = LinkedEntity("Jack", "Jack", 3.0, "jack")

    def first(question: str, found: Topics, read_from: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
        g = Gathered(
            found, {"Jack": "Jack"}, {"m.0sib_abe", "m.0sib_zed"}, planned, [], {}, {}, [], lambda ids: {}, None
        )
        g.constrain = answer_constraints(graph, read_question(question).linked(g.found, g.names), g, read_from)
        return answers_of("planner", g, 0.5, 0.0), g.notes

    q = "who are jack's brothers that are lawyers?"
    linked = [jack, LinkedEntity("Lawyer", "Lawyer", 2.5, "lawyers")]
    answers, notes = first(q, Topics(["Jack"], "linked", linked, []))
    assert answers == ["Zed", "Abe"] and any("next to 'Lawyer'" in n for n in notes)
    # a topic the joint reading read the question from is no other mention
    assert first(q, Topics(["Jack"], "linked", linked, []), ("Lawyer",))[0] == ["Abe", "Zed"]
    # topics given: the question's other words are not read
    assert first(q, Topics(["Jack"], "given", [], []))[0] == ["Abe", "Zed"]
    # a namesake of the topic ("jack", a friend of Zed's) and the noun the question asks for are not other mentions
    namesake = [jack, LinkedEntity("Jack Lawyer Jr.", "Jack Lawyer Jr.", 2.0, "jack")]
    assert first(q, Topics(["Jack"], "linked", namesake, []))[0] == ["Abe", "Zed"]
    asked = [jack, LinkedEntity("Lawyer", "Lawyer", 2.5, "lawyer")]
    assert first("which lawyer is a brother of jack?", Topics(["Jack"], "linked", asked, []))[0] == ["Abe", "Zed"]
    # mentioned by another word, the same entity puts its friend first
    other = [jack, LinkedEntity("Jack Lawyer Jr.", "Jack Lawyer Jr.", 2.0, "junior")]
    assert first(q, Topics(["Jack"], "linked", other, []))[0] == ["Zed", "Abe"]


def test_a_question_asking_when_notes_answers_that_carry_no_year(kept_graph):
    from kgdb.protocol import ScoredPath
    from kgdb.rrp.answering import Gathered, GroundedPath
    from kgdb.rrp.ties import answer_constraints

    graph = kept_graph(GRAPH, embed=False)

    def reached(relation: str, end: str, direction: int = 1) -> GroundedPath:
        path = ScoredPath(0.8, ("Giants", end), (relation,), (direction,), source="rrp-ranker")
        return GroundedPath(path, [(f"e-{end}", "Giants", relation, end)], 0.8)

    finals = [
        reached("sports.sports_team.championships", "Final A"),
        reached("sports.sports_team.championships", "Final B"),
    ]
    teams = [reached("sports.sports_team.location", "Springfield"), reached("sports.sports_team.location", "State")]

    def notes(question: str, planned: list[GroundedPath]) -> list[str]:
        g = Gathered(Topics(["Giants"], "given", [], []), {}, set(), planned, [], {}, {}, [], lambda ids: {}, None)
        answer_constraints(graph, read_question(question).linked(g.found, g.names), g)
        return g.notes

    # the finals carry their dates (one directly, one through a CVT node): nothing to say
    assert notes("when did the giants win the final?", finals) == []
    assert notes("in what year did the giants win the final?", finals) == []
    # places carry no year: the best path read something else than a time
    for question in ("when did the giants win the final?", "what year did the giants win the final?"):
        assert any("asks for a time" in n for n in notes(question, teams)), question
    # a question that asks for no time is never noted
    assert notes("where do the giants play?", teams) == []


def test_last_chooses_among_the_best_path_answers_the_joint_reading_reaches_not_only_its_strongest(graph):
    from kgdb.protocol import ScoredPath
    from kgdb.rrp.answering import Gathered, GroundedPath, answers_of
    from kgdb.rrp.ties import answer_constraints

    # a final the Giants lost, later than every final they won
    write_graph(
        graph,
        [
            *GRAPH,
            ("Final D", "sports.sports_championship_event.runner_up", "Giants"),
            ("Final D", "time.event.start_date", "2016-02-07"),
        ],
        embedder=None,
    )
    won, lost = "sports.sports_team.championships", "sports.sports_championship_event.runner_up"

    def reached(final: str, relation: str, score: float, source: str = "rrp-ranker") -> GroundedPath:
        path = ScoredPath(score, ("Giants", final), (relation,), (1,), source=source)
        return GroundedPath(path, [(f"e-{final}", "Giants", relation, final)], score)

    planned = [reached("Final A", won, 0.8), reached("Final B", won, 0.8), reached("Final D", lost, 0.1)]
    # the other topic (the cup) reaches Final A by a stronger relation than the others: Final A alone is strongest
    joint = [
        reached("Final A", won, 1.5, "joint-topics"),
        reached("Final B", won, 1.2, "joint-topics"),
        reached("Final D", lost, 0.7, "joint-topics"),
    ]

    def first(question: str) -> tuple[list[str], list[str]]:
        g = Gathered(Topics(["Giants"], "given", [], []), {}, set(), planned, [], {}, {}, [], lambda ids: {}, None)
        g.joint = list(joint)
        g.constrain = answer_constraints(graph, read_question(question).linked(g.found, g.names), g)
        return answers_of("planner", g, 0.5, 0.0), g.notes

    answers, notes = first("when was the last time the giants won the final?")
    # the won final of 2012 joins the strongest; the lost final of 2016, off the best planned path, does not
    assert answers == ["Final B", "Final A"]
    assert any("constraint chose Final B" in n for n in notes)
    assert first("when did the giants win the final?") == (["Final A"], [])
    # the earliest won final is already the strongest: nothing is raised
    assert first("when did the giants first win the final?")[0] == ["Final A"]
    assert first("which final did the giants win after 2010?")[0] == ["Final B", "Final A"]
