"""Visual-RAG retrieval metrics: hand-computed cases, edge cases and properties (hypothesis)."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.benchmarks.visual_rag.retrieval import KS, RankingScore, score_ranking

CANDIDATES = {"a", "b", "c", "x", "y", "z", "w"} | {f"n{i}" for i in range(40)}
D2, D3, D4, D5 = (1 / math.log2(i + 1) for i in (2, 3, 4, 5))  # gains at ranks 2..5
# D2 = 1/log2 3 = 0.63093, D3 = 1/log2 4 = 0.5, D4 = 1/log2 5 = 0.43068, D5 = 1/log2 6 = 0.38685


def score(ranking: list[str], clues: set[str], **kw: object) -> RankingScore:
    return score_ranking(ranking, clues, CANDIDATES, **kw)  # type: ignore[arg-type]


def test_ks_and_example_from_the_brief() -> None:
    # clues a, b, c at ranks 2, 4, 6 of a 6-id ranking
    s = score(["x", "a", "y", "b", "z", "c"], {"a", "b", "c"})
    assert KS == (1, 5, 10, 20, 30)
    assert set(s.recall) == set(KS)
    assert s.hit_count == {1: 0, 5: 2, 10: 3, 20: 3, 30: 3}
    assert s.hit == {1: 0.0, 5: 1.0, 10: 1.0, 20: 1.0, 30: 1.0}
    assert s.recall[1] == 0.0 and s.recall[5] == pytest.approx(2 / 3) and s.recall[10] == 1.0
    assert s.ndcg[1] == 0.0
    # NDCG@5 = (1/log2 3 + 1/log2 5) / (1 + 1/log2 3 + 1/log2 4) = 1.06161 / 2.13093 = 0.498189
    assert s.ndcg[5] == pytest.approx((D2 + D4) / (1 + D2 + D3))
    assert s.ndcg[5] == pytest.approx(0.49818925746641285, abs=1e-12)
    # NDCG@10 adds rank 6 (1/log2 7 = 0.35621): 1.41781 / 2.13093 = 0.665350; ideal stays 3 clues
    assert s.ndcg[10] == pytest.approx(0.6653497124326151, abs=1e-12)
    assert s.ndcg[30] == s.ndcg[10]
    assert s.warnings == ()


def test_short_ranking_is_scored_as_it_is() -> None:
    # one id, a clue, of two clues: k=1 perfect; k=5: DCG 1, ideal 1 + 1/log2 3 -> 0.613147
    s = score(["a"], {"a", "b"})
    assert s.ndcg[1] == 1.0 and s.hit[1] == 1.0 and s.recall[1] == 0.5
    assert s.ndcg[5] == pytest.approx(0.6131471927654584, abs=1e-12)
    assert s.recall[30] == 0.5 and s.hit_count[30] == 1


def test_empty_ranking_scores_zero() -> None:
    s = score([], {"a"})
    for k in KS:
        assert (s.recall[k], s.ndcg[k], s.hit[k], s.hit_count[k]) == (0.0, 0.0, 0.0, 0)
    assert s.warnings == ()


def test_clue_at_rank_1_only() -> None:
    ranking = ["a"] + [f"n{i}" for i in range(35)]
    s = score(ranking, {"a", "b"})
    assert s.hit_count == dict.fromkeys(KS, 1)
    assert s.ndcg[1] == 1.0
    for k in (5, 10, 20, 30):  # ideal DCG has 2 clues from k=2 on: 1 / (1 + 0.63093) = 0.613147
        assert s.ndcg[k] == pytest.approx(1 / (1 + D2))
        assert s.recall[k] == 0.5


def test_no_clue_retrieved() -> None:
    s = score(["x", "y", "z", "w"], {"a", "b"})
    assert all(v == 0 for m in (s.recall, s.ndcg, s.hit, s.hit_count) for v in m.values())


def test_more_clues_than_k() -> None:
    clues = {f"n{i}" for i in range(7)}
    s = score([f"n{i}" for i in range(7)], clues)
    # top 5 all clues: ideal DCG@5 uses min(5, 7) = 5 clues -> NDCG@5 exactly 1
    assert s.ndcg == dict.fromkeys(KS, 1.0)
    assert s.hit_count == {1: 1, 5: 5, 10: 7, 20: 7, 30: 7}
    assert s.recall[5] == pytest.approx(5 / 7) and s.recall[10] == 1.0
    # a miss at rank 1 with 7 clues: NDCG@5 = (D2 + D3 + D4 + D5) / (1 + D2 + D3 + D4 + D5)
    s = score(["x", "n0", "n1", "n2", "n3"], clues)
    assert s.ndcg[5] == pytest.approx((D2 + D3 + D4 + D5) / (1 + D2 + D3 + D4 + D5))
    assert s.ndcg[5] == pytest.approx(0.660840, abs=1e-6)  # 1.94846 / 2.94846


def test_rank_k_is_inside_the_top_k_and_k_plus_1_is_not() -> None:
    fill = [f"n{i}" for i in range(29)]
    assert score([*fill, "a"], {"a"}).hit == {1: 0.0, 5: 0.0, 10: 0.0, 20: 0.0, 30: 1.0}
    s = score([*fill, "x", "a"], {"a"})
    assert s.hit[30] == 0.0 and s.ndcg[30] == 0.0
    s = score([*fill, "x", "a"], {"a"}, ks=(31,))
    assert s.hit == {31: 1.0} and s.ndcg[31] == pytest.approx(1 / math.log2(32))  # 0.2


def test_repeated_clue_counts_once_at_its_first_place() -> None:
    # a, a, b: the second a is a non-clue at rank 2; b at rank 3.
    # NDCG@5 = (1 + 1/log2 4) / (1 + 1/log2 3) = 1.5 / 1.63093 = 0.919721
    s = score(["a", "a", "b"], {"a", "b"})
    assert s.ndcg[5] == pytest.approx(0.9197207891481876, abs=1e-12)
    assert s.hit_count[5] == 2 and s.recall[5] == 1.0
    same = score(["a", "x", "b"], {"a", "b"})
    assert (s.recall, s.ndcg, s.hit, s.hit_count) == (
        same.recall,
        same.ndcg,
        same.hit,
        same.hit_count,
    )
    assert score(["a", "b"], {"a", "b"}).ndcg[5] == 1.0  # without the repeat: higher
    assert s.warnings == ("ranking: id 'a' repeated (counted once, at rank 1)",)


def test_repeated_clue_never_fills_a_clue_slot() -> None:
    # a repeated 5 times, one clue of two: hit count 1, not 5; NDCG@5 = 1 / (1 + D2)
    s = score(["a"] * 5, {"a", "b"})
    assert s.hit_count[5] == 1 and s.recall[5] == 0.5
    assert s.ndcg[5] == pytest.approx(1 / (1 + D2))
    assert len(s.warnings) == 1


def test_repeated_non_clue() -> None:
    # x, x, a: a at rank 3 -> NDCG@5 = 1/log2 4 / 1 = 0.5
    s = score(["x", "x", "a"], {"a"}, where="query 7: ")
    assert s.ndcg[1] == 0.0 and s.ndcg[5] == 0.5 and s.recall[5] == 1.0
    assert s.warnings == ("query 7: ranking: id 'x' repeated (counted once, at rank 1)",)


def test_unknown_ids_are_non_clues_with_one_warning_each() -> None:
    # u is not a candidate: a at rank 2 -> NDCG@5 = 1/log2 3 = 0.630930
    s = score(["u", "a", "u", "v"], {"a"}, where="q1: ")
    assert s.ndcg[5] == pytest.approx(0.6309297535714575, abs=1e-12)
    assert s.hit_count[1] == 0 and s.hit_count[5] == 1
    assert s.warnings == (
        "q1: ranking: id 'u' is not a candidate (scored as a non-clue, at rank 1)",
        "q1: ranking: id 'u' repeated (counted once, at rank 1)",
        "q1: ranking: id 'v' is not a candidate (scored as a non-clue, at rank 4)",
    )


def test_warnings_cover_ids_beyond_the_largest_k() -> None:
    ranking = [f"n{i}" for i in range(35)] + ["n0", "zz"]
    s = score(ranking, {"a"})
    assert len(s.warnings) == 2
    assert "'n0' repeated" in s.warnings[0] and "'zz' is not a candidate" in s.warnings[1]


@pytest.mark.parametrize("ks", [(), (0,), (-1, 5), (True,), (1.5,), ("5",)])
def test_bad_ks(ks: tuple) -> None:
    with pytest.raises(ValueError, match="ks"):
        score(["a"], {"a"}, ks=ks)


def test_bad_clues_and_ranking() -> None:
    with pytest.raises(ValueError, match="clue"):
        score(["a"], set())
    with pytest.raises(ValueError, match="not among the candidates"):
        score(["a"], {"a", "nope"})
    with pytest.raises(TypeError):
        score_ranking("abc", {"a"}, CANDIDATES)
    with pytest.raises(TypeError):
        score_ranking(["a"], "a", CANDIDATES)


def test_clue_and_candidate_lists_are_accepted() -> None:
    s = score_ranking(("a", "b"), ["a", "a"], ["a", "b"], ks=[1, 2])
    assert s.recall == {1: 1.0, 2: 1.0} and s.ndcg == {1: 1.0, 2: 1.0}  # clue a counts once


# --- properties -------------------------------------------------------------------------------

POOL = [f"n{i}" for i in range(12)] + ["u0", "u1"]  # u0, u1 are not candidates
PROPERTY_SETTINGS = settings(max_examples=300, deadline=None)


def naive(ranking: list[str], clues: set[str], k: int) -> tuple[float, float, float, int]:
    """Straight from the definitions, per k: (recall, ndcg, hit, hit_count)."""
    seen: set[str] = set()
    rel = []
    for id_ in ranking[:k]:
        rel.append(1 if id_ in clues and id_ not in seen else 0)
        seen.add(id_)
    dcg = sum(r / math.log2(i + 2) for i, r in enumerate(rel))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(clues))))
    n = sum(rel)
    return n / len(clues), dcg / ideal, float(n > 0), n


@st.composite
def queries(draw: st.DrawFn) -> tuple[list[str], set[str], tuple[int, ...]]:
    clues = draw(st.sets(st.sampled_from(POOL[:12]), min_size=1, max_size=8))
    ranking = draw(st.lists(st.sampled_from(POOL), max_size=20))
    ks = tuple(sorted(draw(st.sets(st.integers(1, 25), min_size=1, max_size=6))))
    return ranking, clues, ks


@PROPERTY_SETTINGS
@given(queries())
def test_bounds_monotonicity_and_definitions(query: tuple) -> None:
    ranking, clues, ks = query
    s = score_ranking(ranking, clues, set(POOL[:12]), ks=ks)
    for k in ks:
        assert 0.0 <= s.recall[k] <= 1.0 and 0.0 <= s.ndcg[k] <= 1.0
        assert s.hit[k] in (0.0, 1.0) and s.hit[k] == float(s.hit_count[k] > 0)
        assert 0 <= s.hit_count[k] <= min(k, len(clues))
        expected = naive(ranking, clues, k)
        assert s.recall[k] == pytest.approx(expected[0], abs=1e-12)
        assert s.ndcg[k] == pytest.approx(expected[1], abs=1e-12)
        assert (s.hit[k], s.hit_count[k]) == expected[2:]
    for small, large in pairwise(ks):
        assert s.recall[small] <= s.recall[large]
        assert s.hit[small] <= s.hit[large]
        assert s.hit_count[small] <= s.hit_count[large]
    if 1 in ks:
        assert s.ndcg[1] == s.hit[1]
    assert bool(s.warnings) == (
        len(set(ranking)) < len(ranking) or "u0" in ranking or "u1" in ranking
    )


@PROPERTY_SETTINGS
@given(queries(), st.data())
def test_repeating_an_id_never_raises_a_metric(query: tuple, data: st.DataObject) -> None:
    ranking, clues, ks = query
    if not ranking:
        return
    copy = data.draw(st.sampled_from(ranking))
    at = data.draw(st.integers(ranking.index(copy) + 1, len(ranking)))
    longer = [*ranking[:at], copy, *ranking[at:]]
    before = score_ranking(ranking, clues, set(POOL[:12]), ks=ks)
    after = score_ranking(longer, clues, set(POOL[:12]), ks=ks)
    for k in ks:
        assert after.recall[k] <= before.recall[k] and after.ndcg[k] <= before.ndcg[k]
        assert after.hit_count[k] <= before.hit_count[k]
    assert any("repeated" in w and repr(copy) in w for w in after.warnings)
