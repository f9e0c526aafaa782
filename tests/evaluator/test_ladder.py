"""The Ladder's walk (``evaluator.ladder``) on hand-computed cases."""

from __future__ import annotations

import pytest

from evaluator.ladder import Step, rounded, walk


def test_a_score_is_released_only_when_it_beats_the_best_by_more_than_the_threshold() -> None:
    # eta 0.01: 0.503 is released as 0.5; 0.509 is not > 0.51; 0.5131 is, released as 0.51;
    # 0.40 is worse; 0.5201 > 0.52: released as 0.52
    steps = walk([0.503, 0.509, 0.5131, 0.40, 0.5201], 0.01)
    assert steps == [
        Step(0.5, True),
        Step(0.5, False),
        Step(0.51, True),
        Step(0.51, False),
        Step(0.52, True),
    ]


def test_lower_is_better_is_mirrored() -> None:
    # a loss: 3.0 first, then 2.95 is not below 3.0 - 0.1, 2.84 is (released as 2.8)
    steps = walk([3.0, 2.95, 2.84, 2.9], 0.1, higher_is_better=False)
    assert [s.released for s in steps] == [3.0, 3.0, 2.8, 2.8]
    assert [s.improved for s in steps] == [True, False, True, False]


def test_an_incomplete_result_releases_nothing() -> None:
    assert walk([None, 0.2, None], 0.05) == [
        Step(None, False),
        Step(0.2, True),
        Step(0.2, False),
    ]


def test_released_scores_are_multiples_of_the_threshold_without_binary_noise() -> None:
    assert rounded(0.30000000001, 0.1) == 0.3
    assert rounded(0.7349, 0.01) == 0.73
    assert [s.released for s in walk([0.1, 0.25, 0.4], 0.1)] == [0.1, 0.2, 0.4]


def test_a_threshold_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        walk([0.5], 0)
