"""Paired comparison of two runs on the same split."""

from __future__ import annotations

import dataclasses

import pytest

from evaluator.benchmarks.crag_mm.compare import compare_runs, format_comparison
from evaluator.benchmarks.crag_mm.metrics import score_turns
from evaluator.benchmarks.crag_mm.records import Verdict
from evaluator.records import EvaluatorError
from tests.evaluator.crag_mm_runs import graded_turn, load_parity_fixture, run


def relabel(turns: list, codes: str) -> list:
    """The same turns, with verdicts from ``codes`` (one letter per turn, in order)."""
    return [graded_turn(t.session_id, t.turn_idx, c) for t, c in zip(turns, codes, strict=True)]


def test_identical_runs_are_not_separable() -> None:
    turns = load_parity_fixture("random_multi_turn")
    result = compare_runs(turns, list(reversed(turns)))
    assert result["difference"] == 0.0
    assert result["difference_ci95"] == [0.0, 0.0]
    assert result["p_value"] == 1.0
    assert result["separable"] is False


def test_a_clearly_better_run_is_separable() -> None:
    base = run(*["C"] * 60)
    better = relabel(base, "C" * 50 + "M" * 10)
    worse = relabel(base, "C" * 20 + "H" * 30 + "M" * 10)
    result = compare_runs(better, worse)
    # (2 * 50 + 10) / 60 - 1 and (2 * 20 + 10) / 60 - 1
    assert result["truthfulness_a"] == pytest.approx(50 / 60)
    assert result["truthfulness_b"] == pytest.approx(-10 / 60)
    assert result["difference"] == pytest.approx(1.0)
    low, high = result["difference_ci95"]
    assert 0.0 < low < 1.0 < high
    assert result["separable"] is True and result["p_value"] < 0.001
    backwards = compare_runs(worse, better)
    assert backwards["difference"] == pytest.approx(-1.0)
    assert backwards["separable"] is True and backwards["difference_ci95"][1] < 0


def test_multi_turn_difference_is_the_difference_of_headline_truthfulness() -> None:
    a = load_parity_fixture("random_multi_turn")
    flipped = [
        dataclasses.replace(t, verdict=Verdict.CORRECT)
        if t.verdict is Verdict.HALLUCINATED and n % 3 == 0
        else t
        for n, t in enumerate(a)
    ]
    for counting in ("paper", "kit-a", "kit-b"):
        result = compare_runs(flipped, a, counting=counting, seed=1)
        expected = (
            score_turns(flipped, counting=counting)["all"]["truthfulness"]
            - score_turns(a, counting=counting)["all"]["truthfulness"]
        )
        assert result["multi_turn"] is True
        assert result["difference"] == expected
        assert result["difference_ci95"][0] <= expected <= result["difference_ci95"][1]
        assert result == compare_runs(flipped, a, counting=counting, seed=1)


def test_a_small_difference_is_not_separable() -> None:
    base = run(*["C"] * 40)
    a = relabel(base, "CH" * 20)
    b = relabel(base, "CH" * 19 + "HC")
    result = compare_runs(a, b)
    assert result["difference"] == 0.0
    assert result["separable"] is False and result["p_value"] > 0.5


def test_runs_over_different_turns_are_refused() -> None:
    a = run("CC", "CH", "HH")
    b = [t for t in a if t.interaction_id != "c1-1"] + [graded_turn("extra", 0, "C")]
    with pytest.raises(EvaluatorError, match=r"1 turn\(s\) only in run A \(e.g. c1/c1-1") as error:
        compare_runs(a, b)
    assert "only in run B (e.g. extra/extra-0" in str(error.value)


def test_unjudged_runs_cannot_be_compared() -> None:
    a = run("CC", "CH")
    b = relabel(a, "CUCH")
    with pytest.raises(EvaluatorError, match="run B has 1 unjudged"):
        compare_runs(a, b)


def test_bad_run_is_named() -> None:
    a = run("C", "H")
    with pytest.raises(EvaluatorError, match=r"run A: .*duplicate"):
        compare_runs(a + a[:1], a)


def test_bad_seed_and_single_conversations_are_refused() -> None:
    a = run("C", "H")
    with pytest.raises(EvaluatorError, match="seed"):
        compare_runs(a, a, seed=-3)
    with pytest.raises(EvaluatorError, match="at least two conversations"):
        compare_runs(run("CCH"), run("HHH"))


def test_format_comparison_is_readable() -> None:
    base = run(*["C"] * 30)
    result = compare_runs(relabel(base, "C" * 30), relabel(base, "H" * 30), seed=2)
    text = format_comparison(result, "team-a", "team-b")
    assert "team-a: +1.0000" in text and "team-b: -1.0000" in text
    assert "difference team-a - team-b: +2.0000" in text
    assert "separable: team-a is more truthful" in text
    assert "single-turn, 30 conversations, 30 turns" in text
