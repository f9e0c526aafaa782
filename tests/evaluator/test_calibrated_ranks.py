"""A board ranked by scores calibrated by people's labels (``evaluator.board_stats.Rectified``):
the labels' corrections per stratum and their resamples, the paired test of calibrated scores
and rank intervals that hold the labels' uncertainty, on cases worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluator.board_stats import (
    Rectified,
    adjacent_p_values,
    board_statistics,
    minimum_detectable_effect,
    rank_intervals,
)
from evaluator.calibrated import Corrections, corrected_score, stratum_corrections

# the judge said 1, 1, 1, 0; people 1, 0, 1, 0: stratum "1" corrects by 0, -1, 0 and "0" by 0
JUDGE, PEOPLE, STRATA = [1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0], ["1", "1", "1", "0"]


def fixed(mean: list[float], variance: list[float], n_boot: int) -> Corrections:
    """Corrections whose every resample is their mean (labels that all agree)."""
    keys = tuple(str(i) for i in range(len(mean)))
    return Corrections(keys, np.array(mean), np.array(variance), np.tile(mean, (n_boot, 1)))


def test_stratum_corrections_by_hand() -> None:
    found = stratum_corrections(JUDGE, PEOPLE, STRATA, ["0", "1", "unlabelled"], n_boot=2000)
    assert found.mean.tolist() == pytest.approx([0.0, -1 / 3, 0.0])
    # "1": var(0, -1, 0) = 1/3 over 3 labels; "0": one label, the pooled var(0, -1, 0, 0) = 1/4
    assert found.variance.tolist() == pytest.approx([0.25, 1 / 9, 0.0])
    assert found.draws.shape == (2000, 3)
    assert set(np.round(found.draws[:, 1] * 3).tolist()) <= {0.0, -1.0, -2.0, -3.0}
    assert found.draws[:, 1].mean() == pytest.approx(-1 / 3, abs=0.03)
    assert (found.draws[:, [0, 2]] == 0).all()


def test_they_weigh_as_the_calibrated_score_does() -> None:
    shares = {"0": 0.25, "1": 0.75}
    found = stratum_corrections(JUDGE, PEOPLE, STRATA, list(shares), n_boot=10)
    weights = np.array(list(shares.values()))
    score = corrected_score(0.0, 0.0, JUDGE, PEOPLE, STRATA, shares)
    assert score.value == pytest.approx(weights @ found.mean)
    assert score.standard_error**2 == pytest.approx(weights**2 @ found.variance)


def test_the_paired_test_of_calibrated_scores_by_hand() -> None:
    values = [[1, 0, 1, 1], [0, 0, 0, 1]]  # the judge's: difference 0.5, its variance 1/12
    n_boot = 10
    # entry 1 is all of stratum 0, entry 2 all of stratum 1
    shares = np.array([[1.0, 0.0], [0.0, 1.0]])
    cancelled = Rectified(shares, fixed([-0.5, 0.0], [1 / 12, 0.0], n_boot))
    assert adjacent_p_values(values, cancelled).tolist() == [1.0]  # 0.5 - 0.5: no difference
    apart = Rectified(shares, fixed([0.25, 0.0], [1 / 12, 0.0], n_boot))
    z = 0.75 / math.sqrt(1 / 12 + 1 / 12)
    assert adjacent_p_values(values, apart).tolist() == pytest.approx([math.erfc(z / math.sqrt(2))])


def test_rank_intervals_hold_the_labels_uncertainty() -> None:
    values = [[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0]]  # the judge cannot tell them apart
    n_boot = 4000
    assert [a.tolist() for a in rank_intervals(values, shared=False, n_boot=n_boot)] == [
        [1, 2],
        [1, 2],
    ]
    shares = np.array([[1.0, 0.0], [0.0, 1.0]])
    # people raise entry 1's verdicts by 0.3, surely: it is always first
    sure = Rectified(shares, fixed([0.3, 0.0], [0.0, 0.0], n_boot))
    low, high = rank_intervals(values, shared=False, n_boot=n_boot, rectified=sure)
    assert (low.tolist(), high.tolist()) == ([1, 2], [1, 2])
    # two labels correcting by +1 and -1: resampled, +1 (1/4), 0 (1/2), -1 (1/4): entry 1 is
    # second in a quarter of the resamples
    unsure = stratum_corrections([0.0, 0.0], [1.0, -1.0], ["0", "0"], ["0", "1"], n_boot)
    low, high = rank_intervals(
        values, shared=False, n_boot=n_boot, rectified=Rectified(shares, unsure)
    )
    assert (low.tolist(), high.tolist()) == ([1, 1], [2, 2])


def test_board_statistics_with_the_calibration() -> None:
    values = [[1, 0, 1, 1], [0, 0, 0, 1]]
    rectified = Rectified(np.array([[1.0, 0.0], [0.0, 1.0]]), fixed([-0.5, 0.0], [0.0, 0.0], 500))
    found = board_statistics(values, n_boot=500, rectified=rectified, shared=True)
    assert found.groups == [1, 1]  # equal calibrated scores
    # resampled, the units' difference (1, 0, 1, 0) - 0.5 puts either first
    assert (found.rank_low, found.rank_high) == ([1, 1], [2, 2])
    assert found.minimum_detectable_effect == minimum_detectable_effect(values)  # the judge's


@pytest.mark.parametrize(
    ("shares", "draws", "message"),
    [
        (np.ones((2, 3)), 500, "one column per stratum"),
        (np.ones((3, 2)), 500, "shares of 3 entries for 2"),
        (np.ones((2, 2)), 20, "20 resamples of the labels for 500 of the units"),
    ],
)
def test_mismatched_calibrations_are_refused(shares: np.ndarray, draws: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        board_statistics(
            [[1, 0], [0, 1]], n_boot=500, rectified=Rectified(shares, fixed([0, 0], [0, 0], draws))
        )
