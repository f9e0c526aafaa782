"""Bootstrap intervals and the paired sign-flip test, checked against scipy's reference ones."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evaluator.stats import (
    PairedComparison,
    bootstrap_mean_ci,
    paired_comparison,
    sign_flip_p_value,
)


def turn_scores(n: int, seed: int, weights: tuple[float, float, float] = (0.3, 0.3, 0.4)):
    return np.random.default_rng(seed).choice([-1.0, 0.0, 1.0], size=n, p=weights)


def test_interval_is_seeded() -> None:
    values = turn_scores(300, seed=1)
    assert bootstrap_mean_ci(values, seed=5) == bootstrap_mean_ci(values, seed=5)
    assert bootstrap_mean_ci(values, seed=5) != bootstrap_mean_ci(values, seed=6)


@pytest.mark.parametrize("distinct", ["few", "many"])
def test_interval_matches_scipy_percentile_bootstrap(distinct: str) -> None:
    rng = np.random.default_rng(2)
    # "many" distinct values exercises the chunked draws (1,500 distinct values).
    values = turn_scores(400, seed=3) if distinct == "few" else rng.normal(0.1, 1.0, 1500)
    ours = bootstrap_mean_ci(values, seed=0, n_boot=3000)
    reference = scipy_stats.bootstrap(
        (values,), np.mean, n_resamples=3000, method="percentile", random_state=1
    ).confidence_interval
    width = reference.high - reference.low
    assert ours[0] == pytest.approx(reference.low, abs=0.06 * width)
    assert ours[1] == pytest.approx(reference.high, abs=0.06 * width)
    assert ours[0] < values.mean() < ours[1]


def test_interval_covers_the_true_mean_about_95_percent_of_the_time() -> None:
    # Turn scores with true mean 0.1; 200 samples of 150 units each.
    hits = 0
    for sample in range(200):
        low, high = bootstrap_mean_ci(turn_scores(150, seed=100 + sample), n_boot=500)
        hits += low <= 0.1 <= high
    assert 0.88 <= hits / 200 <= 0.99


def test_degenerate_data_gives_a_point_interval() -> None:
    assert bootstrap_mean_ci([0.5]) == (0.5, 0.5)
    assert bootstrap_mean_ci([1.0, 1.0, 1.0]) == (1.0, 1.0)


@pytest.mark.parametrize(
    ("values", "kwargs", "message"),
    [
        ([], {}, "non-empty"),
        ([[1.0, 2.0]], {}, "one-dimensional"),
        ([1.0, float("nan")], {}, "finite"),
        ([1.0, 0.0], {"n_boot": 0}, "n_boot"),
        ([1.0, 0.0], {"confidence": 1.5}, "confidence"),
    ],
)
def test_bad_bootstrap_input(values: list, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bootstrap_mean_ci(values, **kwargs)


def test_sign_flip_of_identical_runs_is_one() -> None:
    assert sign_flip_p_value(np.zeros(50)) == 1.0


def test_sign_flip_of_a_consistent_difference_is_tiny() -> None:
    assert sign_flip_p_value(np.full(40, 2.0), n_permutations=5000) == pytest.approx(1 / 5001)


def test_sign_flip_matches_scipy_permutation_test() -> None:
    diffs = turn_scores(60, seed=7, weights=(0.25, 0.4, 0.35)) - turn_scores(60, seed=8)
    ours = sign_flip_p_value(diffs, seed=0, n_permutations=20000)
    reference = scipy_stats.permutation_test(
        (diffs,),
        np.mean,
        permutation_type="samples",
        n_resamples=20000,
        alternative="two-sided",
        random_state=0,
    ).pvalue
    assert 0.0 < ours <= 1.0
    assert ours == pytest.approx(reference, abs=0.02)


def test_sign_flip_is_seeded_and_validates() -> None:
    diffs = turn_scores(30, seed=9)
    assert sign_flip_p_value(diffs, seed=1) == sign_flip_p_value(diffs, seed=1)
    with pytest.raises(ValueError, match="n_permutations"):
        sign_flip_p_value(diffs, n_permutations=0)


def test_paired_comparison() -> None:
    a = turn_scores(200, seed=10, weights=(0.1, 0.2, 0.7))
    b = turn_scores(200, seed=11, weights=(0.4, 0.3, 0.3))
    result = paired_comparison(a, b, seed=0)
    assert result.units == 200
    assert result.difference == pytest.approx(a.mean() - b.mean())
    assert result.ci95[0] < result.difference < result.ci95[1]
    assert result.separable and result.p_value < 0.01
    same = paired_comparison(a, a)
    assert (same.difference, same.ci95, same.p_value, same.separable) == (
        0.0,
        (0.0, 0.0),
        1.0,
        False,
    )
    with pytest.raises(ValueError, match="same number of units"):
        paired_comparison(a, b[:-1])


@pytest.mark.parametrize(
    ("ci95", "separable"),
    [((0.01, 0.2), True), ((-0.3, -0.02), True), ((-0.1, 0.1), False), ((0.0, 0.1), False)],
)
def test_separable_means_the_interval_excludes_zero(ci95: tuple, separable: bool) -> None:
    assert PairedComparison(0.05, ci95, 0.5, 10).separable is separable
