"""QA metrics against hand-computed examples."""

from __future__ import annotations

import pytest

from kgdb.qa.metrics import MatchRules, match, normalize, score_question, summarize


def test_articles_alone_never_match():
    assert normalize("a") == "" and not match("a", "a")


def test_normalisation_rules():
    assert normalize("The  Beatles!") == "beatles"
    assert normalize("An Apple a day") == "apple day"
    assert normalize("The Beatles", MatchRules.strict()) == "The Beatles"
    assert normalize("The Beatles", MatchRules(strip_articles=False)) == "the beatles"


def test_substring_double_check_and_year_rules():
    assert match("Jamaican English language", "Jamaican English")  # gold ⊂ pred
    assert not match("English", "Jamaican English", "who speaks?")  # pred ⊂ gold: no cue
    assert match("English", "Jamaican English", "what language do they speak?")  # double_check cue
    assert not match("English", "Jamaican English", "what language", MatchRules(double_check=False))
    assert match("1969", "1969-07-20", "when did it land?")  # year truncation
    assert not match("1969", "1969-07-20", "when did it land?", MatchRules(year_truncation=False, double_check=False))
    assert not match("Jamaican English language", "Jamaican English", rules=MatchRules(substring=False))
    assert not match("", "x") and not match("x", "")


def test_rog_hit_is_not_hit_at_1():
    # RoG reports "Hits@1" but counts a hit at any position (RoG issue #11): the second answer is right here.
    s = score_question(["Lyon", "Paris"], ["Paris"])
    assert s.hit and not s.hit1
    assert s.precision == 0.5 and s.recall == 1.0 and s.f1 == pytest.approx(2 / 3)


def test_f1_one_to_one_matching():
    # two predictions both contain the single gold answer: only one may match it
    s = score_question(["Paris", "Paris, France"], ["Paris"])
    assert s.matched == 1 and s.precision == 0.5 and s.recall == 1.0
    s = score_question(["a1", "b1"], ["a1", "b1", "c1", "d1"])
    assert (s.precision, s.recall, s.f1) == (1.0, 0.5, pytest.approx(2 / 3))
    empty = score_question([], ["x"])
    assert (empty.hit, empty.hit1, empty.f1, empty.precision) == (False, False, 0.0, 0.0)


def test_macro_and_micro_f1_differ_as_computed_by_hand():
    q1 = score_question(["alpha"], ["alpha"])  # P=R=F1=1
    q2 = score_question(["beta", "xi"], ["beta", "gamma", "delta", "eps"])  # matched 1, P=1/2, R=1/4, F1=1/3
    m = summarize([q1, q2])
    assert m["n"] == 2
    assert m["macro_f1"] == pytest.approx(100 * (1 + 1 / 3) / 2)
    # pooled: matched 2, predicted 3, gold 5 -> P=2/3, R=2/5, F1=0.5
    assert m["micro_f1"] == pytest.approx(50.0)
    assert m["hit"] == 100 and m["hit1"] == 100
    assert m["answer_recall"] == pytest.approx(100 * (1 + 0.25) / 2)


def test_score_h_as_in_subgraphrag_appendix_c():
    in_kg = score_question(["alpha", "xi", "yota"], ["alpha"], answer_in_kg=True)
    assert in_kg.score_h == pytest.approx((1 - 1 - 1) / 3)
    assert score_question([], ["alpha"], answer_in_kg=True).score_h == 0.0
    assert score_question([], ["alpha"], answer_in_kg=False).score_h == 1.0  # refusal rewarded
    not_in_kg = score_question(["Paris", "Atlantis"], ["z"], answer_in_kg=False, evidence_entities=["Paris", "Lyon"])
    assert not_in_kg.score_h == pytest.approx((-1 - 1.5) / 2)
    m = summarize(
        [score_question(["alpha"], ["alpha"], answer_in_kg=True), score_question([], ["z"], answer_in_kg=False)]
    )
    assert m["score_h"] == pytest.approx(100 * ((1 + 1) / 2 + 1.5) / 2.5)


def test_rules_parse():
    assert MatchRules.parse("subgraphrag") == MatchRules()
    assert MatchRules.parse("strict") == MatchRules.strict()
    assert MatchRules.parse("subgraphrag,-substring").substring is False
    with pytest.raises(ValueError, match="unknown matching rule"):
        MatchRules.parse("fuzzy")
