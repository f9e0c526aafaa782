"""Rank intervals, separable groups and the minimum detectable effect on small boards whose
answers are worked out by hand (``evaluator.board_stats``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluator.board_stats import (
    adjacent_p_values,
    board_statistics,
    corrected,
    groups,
    minimum_detectable_effect,
    rank_intervals,
    resample_counts,
)


def test_resampled_counts_draw_every_unit_n_times_in_all() -> None:
    counts = resample_counts(7, 500, np.random.default_rng(0))
    assert counts.shape == (500, 7)
    assert (counts.sum(axis=1) == 7).all()
    # each unit is drawn once per resample on average
    assert counts.mean() == pytest.approx(1.0)
    assert abs(counts[:, 3].mean() - 1.0) < 0.15


def test_an_entry_better_on_every_unit_keeps_its_rank() -> None:
    low, high = rank_intervals([[1, 1, 1, 1], [0.5, 0.5, 0.5, 0.5], [0, 0, 0, 0]], n_boot=200)
    assert low.tolist() == [1, 2, 3]
    assert high.tolist() == [1, 2, 3]


def test_lower_is_better_ranks_the_smallest_first() -> None:
    low, high = rank_intervals([[1, 1], [0, 0]], higher_is_better=False, n_boot=50)
    assert (low.tolist(), high.tolist()) == ([2, 1], [2, 1])


@pytest.mark.parametrize(("shared", "ranks"), [(True, [1, 1]), (False, [1, 2])])
def test_ties_follow_the_boards_tie_rule(shared: bool, ranks: list[int]) -> None:
    # two identical entries: every resample ties them
    low, high = rank_intervals([[1, 0, 1], [1, 0, 1]], shared=shared, n_boot=100)
    assert low.tolist() == ranks
    assert high.tolist() == ranks


def test_rank_interval_matches_the_enumerated_bootstrap() -> None:
    # Two units; resamples {u1,u1} (1/4), {u1,u2} (1/2), {u2,u2} (1/4). A = [1, 0] and
    # B = [0, 0.6] have means (1, 0), (0.5, 0.3), (0, 0.6): A is second in 1/4 of resamples.
    values = [[1.0, 0.0], [0.0, 0.6]]
    low, high = rank_intervals(values, n_boot=4000, confidence=0.95)
    assert (low.tolist(), high.tolist()) == ([1, 1], [2, 2])
    # the central 40 % (quantiles 0.3 and 0.7): A always first, B always second
    low, high = rank_intervals(values, n_boot=4000, confidence=0.4)
    assert (low.tolist(), high.tolist()) == ([1, 2], [1, 2])


def test_rank_intervals_are_seeded() -> None:
    values = np.random.default_rng(3).random((6, 40))
    assert [a.tolist() for a in rank_intervals(values, seed=4)] == [
        a.tolist() for a in rank_intervals(values, seed=4)
    ]


def test_the_paired_z_test_by_hand() -> None:
    # differences [1, 0, 1, 0]: mean 0.5, sd sqrt(1/3), z = 0.5 / (sqrt(1/3) / 2) = sqrt(3)
    p = adjacent_p_values([[1, 0, 1, 1], [0, 0, 0, 1]])
    assert p.tolist() == pytest.approx([math.erfc(math.sqrt(3) / math.sqrt(2))])
    assert p[0] == pytest.approx(0.08326, abs=1e-5)


def test_differences_without_spread() -> None:
    p = adjacent_p_values([[1, 1, 1], [0, 0, 0], [0, 0, 0]])
    assert p.tolist() == [0.0, 1.0]


def test_holm_and_bonferroni_by_hand() -> None:
    p = np.array([0.01, 0.04, 0.03])
    # Holm: sorted 0.01, 0.03, 0.04 -> 3 x 0.01, 2 x 0.03, max(0.06, 1 x 0.04)
    assert corrected(p, "holm").tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert corrected(p, "bonferroni").tolist() == pytest.approx([0.03, 0.12, 0.09])
    assert corrected(p, "none").tolist() == pytest.approx([0.01, 0.04, 0.03])
    with pytest.raises(ValueError, match="unknown correction 'sidak'"):
        corrected(p, "sidak")  # type: ignore[arg-type]


def test_groups_on_a_small_board() -> None:
    # A beats B on every unit; B and C are the same; D is below C on every unit
    values: list[list[float]] = [[1, 1, 1, 1], [0.5, 0, 0.5, 0], [0.5, 0, 0.5, 0], [-1, -1, -1, -1]]
    assert groups(values) == [1, 2, 2, 3]


def test_the_correction_can_merge_groups() -> None:
    # z = sqrt(3) for each neighbouring pair: p = 0.0833 each, apart at 0.10 uncorrected,
    # not after Holm (2 x 0.0833 > 0.10)
    values = [[2, 1, 2, 2], [1, 1, 1, 2], [0, 1, 0, 2]]
    assert groups(values, alpha=0.10, correction="none") == [1, 2, 3]
    assert groups(values, alpha=0.10, correction="holm") == [1, 1, 1]


def test_minimum_detectable_effect_by_hand() -> None:
    # sd of differences sqrt(1/3), 4 units: (1.959964 + 0.841621) * sqrt(1/3) / 2
    effect = minimum_detectable_effect([[1, 0, 1, 1], [0, 0, 0, 1]])
    assert effect == pytest.approx((1.959964 + 0.841621) * math.sqrt(1 / 3) / 2, rel=1e-5)
    assert minimum_detectable_effect([[1, 0]]) is None


def test_board_statistics_together() -> None:
    found = board_statistics([[1, 1, 1, 1], [0, 0, 0, 0]], n_boot=100)
    assert (found.rank_low, found.rank_high, found.groups) == ([1, 2], [1, 2], [1, 2])
    assert found.units == 4
    assert found.alpha == pytest.approx(0.05)
    assert found.correction == "holm"


@pytest.mark.parametrize(
    ("values", "message"),
    [([[1.0]], "two units or more"), ([[1.0, float("nan")]], "finite"), ([], "two units")],
)
def test_bad_input_is_refused(values: list[list[float]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rank_intervals(values)
