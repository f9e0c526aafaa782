"""The scores calibrated by people's labels per slice value: where the split's latest finished
judge audit (``calibration.rectifier``) labelled items of a value, each entry's score there
(its stored slice score of the primary metric, with its interval) corrected by those labels
alone, weighed by the shares of the entry's items of that value the judge gave each verdict
(``RunUnits.slice_verdicts``): the stratified estimate of ``leaderboard.calibration``
restricted to the slice. A value without labels has none, and says why; a split without a
finished audit has none anywhere (as its board)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from leaderboard import board_store, calibration
from leaderboard.models import EvaluationRun, RunUnits, SliceScore, Split
from leaderboard.slices import metric_numbers


@dataclass(frozen=True)
class SliceCalibration:
    """One slice value's calibrated scores by run (``[value, low, high]``) and what the page
    says of them: the audit, its judge and the labels there, or why there are none."""

    scores: dict[int, list[float]] = field(default_factory=dict)
    about: dict[str, Any] = field(default_factory=dict)


def calibrated(split: Split, setting: str, dimension: str) -> dict[str, SliceCalibration]:
    """Per value of ``dimension`` on the board of ``split`` in ``setting``, its calibrated
    scores; empty without a finished audit with labels."""
    found = calibration.rectifier(split)
    if found is None:
        return {}
    task = split.task
    runs = board_store.stored(split, setting).runs
    judged = list(
        EvaluationRun.objects.filter(pk__in=runs, judge_id=found.judge_id).values_list(
            "pk", flat=True
        )
    )
    number, low, high = metric_numbers(task.primary_metric)
    cells = (
        SliceScore.objects.filter(run_id__in=judged, dimension=dimension)
        .order_by()
        .annotate(number=number, low=low, high=high)
        .values_list("run_id", "value", "number", "low", "high")
    )
    counts = dict(
        RunUnits.objects.filter(run_id__in=judged).values_list("run_id", "slice_verdicts")
    )
    by_value: dict[str, SliceCalibration] = {}
    labelled: dict[str, calibration.Rectifier | None] = {}
    for run, value, score, score_low, score_high in cells:
        if value not in labelled:
            labelled[value] = found.within(dimension, value)
            by_value[value] = _about(found, labelled[value], dimension, value)
        there, within = by_value[value], labelled[value]
        verdicts = (counts.get(run) or {}).get(dimension, {}).get(value, {})
        if within is None or score is None or not verdicts:
            continue
        estimate = calibration.estimate(within, score, (score_low, score_high), verdicts)
        if estimate is not None:
            there.scores[run] = estimate
    return by_value


def _about(
    found: calibration.Rectifier,
    within: calibration.Rectifier | None,
    dimension: str,
    value: str,
) -> SliceCalibration:
    if within is None:
        reason = f"the judge audit #{found.audit_id} labelled no item of {dimension} {value}"
        return SliceCalibration(about={"unavailable": reason})
    return SliceCalibration(
        about={"audit": found.audit_id, "judge_id": found.judge_id, "labels": len(within.people)}
    )
