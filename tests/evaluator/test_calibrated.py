"""The prediction-powered estimate against its formula on a small fixed sample
(``evaluator.calibrated``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluator.calibrated import calibrated_mean, labels_only

JUDGED = [1, 0, 1, 1, 0, 1, 0, 1]  # the judge on all 8 items
ON_LABELLED = [1, 0, 1, 1]  # the judge on the 4 labelled ones (the first four)
LABELS = [1, 0, 0, 1]  # people on them: the judge was wrong on the third


def test_the_estimate_is_the_papers_formula() -> None:
    # theta = mean(f) + mean(y - f) = 5/8 - 1/4; var = var(f)/N + var(y - f)/n
    found = calibrated_mean(JUDGED, ON_LABELLED, LABELS)
    variance = (8 / 7 * 0.625 * 0.375) / 8 + 0.25 / 4
    assert found.value == pytest.approx(0.375)
    assert found.standard_error == pytest.approx(math.sqrt(variance))
    half = 1.959964 * math.sqrt(variance)
    assert found.ci == pytest.approx((0.375 - half, 0.375 + half), rel=1e-6)
    assert (found.labels, found.items) == (4, 8)


def test_the_stratified_estimate_by_hand() -> None:
    # strata by the judge's verdict: "1" holds 5/8 of the items and 3 labels (corrections
    # 0, -1, 0), "0" holds 3/8 and one label (correction 0: the pooled variance, 1/4)
    found = calibrated_mean(
        JUDGED, ON_LABELLED, LABELS, strata=["1", "0", "1", "1"], shares={"1": 5 / 8, "0": 3 / 8}
    )
    assert found.value == pytest.approx(0.625 + 5 / 8 * (-1 / 3))
    variance = (8 / 7 * 0.625 * 0.375) / 8 + (5 / 8) ** 2 * (1 / 3) / 3 + (3 / 8) ** 2 * 0.25
    assert found.standard_error == pytest.approx(math.sqrt(variance))


def test_labels_only_is_the_sample_mean() -> None:
    found = labels_only(LABELS)
    assert found.value == pytest.approx(0.5)
    assert found.standard_error == pytest.approx(math.sqrt(np.var(LABELS, ddof=1) / 4))


def test_a_perfect_judge_narrows_the_interval_to_the_judges_own() -> None:
    rng = np.random.default_rng(0)
    judged = rng.integers(0, 2, 1000).astype(float)
    found = calibrated_mean(judged, judged[:50], judged[:50])
    assert found.value == pytest.approx(judged.mean())
    assert found.width < labels_only(judged[:50]).width / 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"labels": [1, 0]}, "4 judge values for 2 labels"),
        ({"strata": ["a", "b", "a", "a"]}, "share of the items"),
        ({"strata": ["a"], "shares": {"a": 1.0}}, "strata: 1 for 4 labels"),
        ({"strata": ["a", "b", "a", "a"], "shares": {"a": 1.0}}, "without a share"),
    ],
)
def test_bad_input_is_refused(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"judge_on_labelled": ON_LABELLED, "labels": LABELS} | kwargs
    with pytest.raises(ValueError, match=message):
        calibrated_mean(JUDGED, **arguments)  # type: ignore[arg-type]
