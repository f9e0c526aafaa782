"""Repeated runs' statistics (``evaluator.repeats``) on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from evaluator.benchmarks import get_benchmark
from evaluator.repeats import between_sd, pass_k, repeat_statistics


def test_pass_k_counts_units_passed_in_every_run() -> None:
    runs = [[1, 1, -1, 0, 1], [1, 0, 1, 1, 1], [1, 1, 1, 1, -1]]
    # unit 0 passes in all three runs; units 1, 3 fail once, unit 2 once, unit 4 once
    assert pass_k(runs, 1.0) == pytest.approx(1 / 5)
    assert pass_k(runs, 0.0) == pytest.approx(3 / 5)  # units 0, 1, 3 reach 0 in every run
    assert pass_k(runs, -1.0) == 1.0


def test_between_sd_is_the_sample_standard_deviation() -> None:
    # mean 0.45; squares 0.0025, 0.0025, 0; / (3 - 1) = 0.0025; sd 0.05
    assert between_sd([0.4, 0.5, 0.45]) == pytest.approx(0.05)
    assert between_sd([0.3, 0.3]) == 0.0
    with pytest.raises(ValueError, match="two runs"):
        between_sd([0.3])


def test_an_entry_by_hand() -> None:
    # two runs of four units; per-unit means 1, 0, 0, -1; both runs score 0
    runs = [[1, 1, -1, -1], [1, -1, 1, -1]]
    (found,) = repeat_statistics([[0.0, 0.0]], [runs], passing=1.0)
    assert (found.runs, found.units) == (2, 4)
    assert found.mean == 0.0
    assert found.between_sd == 0.0
    assert found.pass_k == pytest.approx(0.25)  # unit 0 alone is correct in both runs
    # the runs agree on their scores, yet units 1 and 2 change from run to run: the interval
    # still has width (the per-unit means spread 1, 0, 0, -1)
    assert found.low < 0.0 < found.high
    assert found.low >= -1.0 and found.high <= 1.0


def test_identical_units_give_a_point_interval() -> None:
    (found,) = repeat_statistics([[0.5, 0.5, 0.5]], [[[0.5] * 6] * 3])
    assert (found.low, found.mean, found.high) == (0.5, 0.5, 0.5)
    assert found.pass_k is None  # no passing value: no pass^k


def test_the_interval_stands_around_the_scores_mean() -> None:
    # units' mean 0.5, scores' mean 0.55: the interval moves by 0.05
    runs = [[0.0, 1.0] * 50, [1.0, 0.0] * 50]
    (on_units,) = repeat_statistics([[0.5, 0.5]], [runs], seed=3)
    (moved,) = repeat_statistics([[0.5, 0.6]], [runs], seed=3)
    # each unit's mean is 0.5: no spread at all
    assert (on_units.low, on_units.high) == (0.5, 0.5)
    assert (moved.low, moved.mean, moved.high) == pytest.approx((0.55, 0.55, 0.55))


def test_the_interval_holds_the_variance_between_runs() -> None:
    """Per unit, the mean of k runs varies as s_units^2 + s_runs^2 / k; the interval's
    half-width is about 1.96 times its square root over n."""
    rng = np.random.default_rng(7)
    n, k = 4000, 3
    ability = rng.normal(0.0, 1.0, n)  # the units' spread
    runs = ability[None, :] + rng.normal(0.0, 2.0, (k, n))  # run-to-run noise within a unit
    scores = runs.mean(axis=1).tolist()
    (found,) = repeat_statistics([scores], [runs], n_boot=4000)
    expected = 1.96 * np.sqrt((1.0 + 4.0 / k) / n)
    assert (found.high - found.low) / 2 == pytest.approx(expected, rel=0.1)
    # one run alone would claim sqrt(1 + 4) / sqrt(n); the unit spread alone sqrt(1) / sqrt(n)
    assert (found.high - found.low) / 2 > 1.96 * np.sqrt(1.0 / n) * 1.2


def test_entries_share_draws_and_may_differ_in_units() -> None:
    a = [[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]
    b = [[0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 1.0, 0.0]]
    together = repeat_statistics([[2 / 3, 1 / 3], [0.5, 0.5, 0.5]], [a, b], passing=1.0)
    alone = repeat_statistics([[2 / 3, 1 / 3]], [a], passing=1.0)
    assert together[0] == alone[0]  # its draws do not depend on the other entry's
    assert together[0].pass_k == pytest.approx(1 / 3)
    assert together[1].runs == 3 and together[1].pass_k == 0.0
    assert together[1].between_sd == 0.0


@pytest.mark.parametrize(
    ("scores", "values", "message"),
    [
        ([[0.1]], [[[0.1, 0.2]]], "two runs or more"),
        ([[0.1, 0.2]], [[[0.1], [float("nan")]]], "finite"),
        ([[0.1, 0.2, 0.3]], [[[0.1], [0.2]]], "3 scores for 2 runs"),
        ([[0.1, 0.2]], [], "1 entries' scores for 0"),
    ],
)
def test_bad_input_is_refused(scores: list, values: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        repeat_statistics(scores, values)


def test_benchmarks_declare_their_passing_unit() -> None:
    assert get_benchmark("crag-mm").passing_unit == 1.0
    assert get_benchmark("visual-rag").passing_unit == 100.0
    assert get_benchmark("mrag-suite").passing_unit == 100.0
    assert get_benchmark("m2rag").passing_unit is None  # graded on a scale: no pass


def test_the_worked_example_of_the_docs() -> None:
    """docs/board-statistics.md, "Repeated runs", worked example."""
    runs = [[1, 1, -1, -1], [1, -1, 1, -1], [1, 1, 1, -1]]
    (found,) = repeat_statistics([[0.0, 0.0, 0.5]], [runs], passing=1.0)
    assert found.mean == pytest.approx(1 / 6)
    assert found.between_sd == pytest.approx(0.2887, abs=1e-4)
    assert found.pass_k == 0.25
    assert (found.low, found.high) == pytest.approx((-2 / 3, 5 / 6))
