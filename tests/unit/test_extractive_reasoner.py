"""The extractive reasoner on hand-made evidence: paths look through CVT records and never end at a
topic, the answers it picks without an LLM, and the score it ranks by is its weighted features."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

pytestmark = pytest.mark.usefixtures("one_thread")

from kgdb.embeddings import get_embedder
from kgdb.qa.reasoners.extractive import FEATURES, Evidence, ExtractiveReasoner, enumerate_paths
from support.bradfield import TRIPLES


@dataclass
class T:
    head_id: str
    relation: str
    tail_id: str
    score: float = 0.0

    @property
    def head(self):
        return self.head_id

    @property
    def tail(self):
        return self.tail_id


def test_enumerate_paths_looks_through_cvts_and_skips_topics():
    triples = [T(h, r, t) for h, r, t in TRIPLES]
    paths = enumerate_paths(triples, ["Sydney Harbour Bridge"], cvt={"m.0aw1", "m.0aw2"}, max_hops=2)
    by_rel = {tuple(r for r, _, _ in p.path.steps): p for p in paths}
    awards = by_rel[("architecture.structure.designer", "award.award_winner.awards_won", "award.award_honor.award")]
    assert awards.path.hops == 2  # the CVT hop is looked through, not counted
    assert set(awards.targets) == {"Telford Medal", "Peter Nicol Russell Medal"}
    # no path ends at a CVT or at the topic itself
    assert all(t not in {"m.0aw1", "m.0aw2", "Sydney Harbour Bridge"} for p in paths for t in p.targets)


def test_extractive_reasoner_on_hand_made_evidence():
    r = ExtractiveReasoner(get_embedder())
    triples = [T(h, r_, t, s) for s, (h, r_, t) in zip(range(len(TRIPLES), 0, -1), TRIPLES)]
    out = r.reason(
        None,
        Evidence(
            "what awards did the designer of the sydney harbour bridge win?",
            triples,
            ["Sydney Harbour Bridge"],
            ["Sydney Harbour Bridge"],
            cvt={"m.0aw1", "m.0aw2"},
        ),
    )
    assert sorted(out.answers) == ["Peter Nicol Russell Medal", "Telford Medal"]
    assert not out.llm_used and "No LLM was used" in out.reply and out.calls == 0
    assert all(out.support[a] for a in out.answers)  # each answer cites the triples it rests on
    one_hop = r.reason(None, Evidence("what is the capital of jamaica?", triples, ["Jamaica"], ["Jamaica"]))
    assert one_hop.answers == ["Kingston"]
    nothing = r.reason(None, Evidence("what is the capital of jamaica?", [], ["Jamaica"], ["Jamaica"]))
    assert nothing.answers == [] and nothing.refused


def test_extractive_scores_are_the_weighted_features():
    """The score `rank_paths` ranks by is `path_features @ weights` (what benchmarks/fit_extractive.py
    fits), column by column as `FEATURES` says."""
    r = ExtractiveReasoner(get_embedder())
    triples = [T(h, r_, t, s) for s, (h, r_, t) in zip(range(len(TRIPLES), 0, -1), TRIPLES)]
    question, topics, cvt = (
        "what awards did the designer of the sydney harbour bridge win?",
        ["Sydney Harbour Bridge"],
        {"m.0aw1", "m.0aw2"},
    )
    paths, features = r.path_features(Evidence(question, triples, topics, topics, cvt))
    assert features.shape == (len(paths), len(FEATURES)) and len(paths) == 3
    assert features[:, 1].tolist() == [p.path.hops - 1 for p in paths]
    assert all(0.0 <= x <= 1.0 for x in features[:, 2]) and all(0.0 < x <= 1.0 for x in features[:, 3])
    designer = next(
        i for i, p in enumerate(paths) if [s for s, _, _ in p.path.steps] == ["architecture.structure.designer"]
    )
    assert features[designer, 2] == 1.0  # "designer" names the relation outright
    expected = {p.path: float(f @ np.asarray(r.weights())) for p, f in zip(paths, features)}
    ranked = r.rank_paths(Evidence(question, triples, topics, topics, cvt))
    assert [p.path for p in ranked] == sorted(expected, key=lambda k: (-expected[k], k.hops, k.text(), k.anchor))
    assert all(abs(p.score - expected[p.path]) < 1e-9 for p in ranked)
