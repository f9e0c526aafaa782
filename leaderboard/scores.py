"""Writing aggregated results: the evaluator's scores dict and paired comparisons.

Pages only read what these functions store; nothing is recomputed on a page view.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from leaderboard.models import EntryComparison, EvaluationRun, SliceScore, Split
from leaderboard.models.results import ALL, EGO, SCORE_COLUMNS

BLOCK_COUNTS = ("turns", "conversations")


class ScoresError(ValueError):
    """A scores dict that does not have the evaluator's shape; the message says where."""


def _number(block: Mapping[str, Any], name: str, where: str) -> float | None:
    value = block.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ScoresError(f"{where}.{name}: expected a finite number or null, got {value!r}")
    return float(value)


def _slice_row(run: EvaluationRun, dimension: str, value: str, block: Any, where: str):
    if not isinstance(block, Mapping):
        raise ScoresError(
            f"{where}: expected a metric block (an object), got {type(block).__name__}"
        )
    fields: dict[str, Any] = {}
    for name in SCORE_COLUMNS:
        number = _number(block, name, where)
        if name in BLOCK_COUNTS:
            if number is None or number < 0 or number != int(number):
                raise ScoresError(f"{where}.{name}: expected a count, got {block.get(name)!r}")
            number = int(number)
        fields[name] = number
    ci = block.get("truthfulness_ci95")
    if ci is None:
        low = high = None
    elif isinstance(ci, list | tuple) and len(ci) == 2:
        low = _number({"low": ci[0]}, "low", f"{where}.truthfulness_ci95")
        high = _number({"high": ci[1]}, "high", f"{where}.truthfulness_ci95")
    else:
        raise ScoresError(f"{where}.truthfulness_ci95: expected [low, high] or null, got {ci!r}")
    return SliceScore(
        run=run,
        dimension=dimension,
        value=value,
        truthfulness_ci_low=low,
        truthfulness_ci_high=high,
        metrics=dict(block),
        **fields,
    )


def _blocks(scores: Mapping[str, Any]) -> Iterator[tuple[str, str, Any, str]]:
    for dimension, value in (ALL, EGO):
        if dimension not in scores:
            raise ScoresError(f"scores: missing the {dimension!r} block")
        yield dimension, value, scores[dimension], f"scores.{dimension}"
    slices = scores.get("slices", {})
    if not isinstance(slices, Mapping):
        raise ScoresError("scores.slices: expected {dimension: {value: block}}")
    for dimension, values in slices.items():
        if dimension in (ALL[0], EGO[0]):
            raise ScoresError(f"scores.slices.{dimension}: this dimension name is reserved")
        if not isinstance(values, Mapping):
            raise ScoresError(f"scores.slices.{dimension}: expected {{value: block}}")
        for value, block in values.items():
            yield str(dimension), str(value), block, f"scores.slices.{dimension}.{value}"


@transaction.atomic
def store_scores(run: EvaluationRun, scores: Mapping[str, Any]) -> int:
    """Replace the run's SliceScore rows with the blocks of ``scores``; returns the row count.

    ``scores`` is the evaluator's dict: ``{"counting", "complete", "unjudged", "all": block,
    "ego": block, "slices": {dimension: {value: block}}}``. The whole dict is checked before
    anything is written, so bad input leaves the earlier rows in place.
    """
    if not isinstance(scores, Mapping):
        raise ScoresError(f"scores: expected an object, got {type(scores).__name__}")
    rows = [_slice_row(run, *item) for item in _blocks(scores)]
    unjudged = scores.get("unjudged", 0)
    if isinstance(unjudged, bool) or not isinstance(unjudged, int) or unjudged < 0:
        raise ScoresError(f"scores.unjudged: expected a count, got {unjudged!r}")
    SliceScore.objects.filter(run=run).delete()
    SliceScore.objects.bulk_create(rows, batch_size=1000)
    run.counting = str(scores.get("counting", ""))
    run.scores_complete = bool(scores.get("complete", unjudged == 0))
    run.unjudged_turns = unjudged
    run.save(update_fields=["counting", "scores_complete", "unjudged_turns"])
    Split.results_changed(run.split_id)
    return len(rows)


@transaction.atomic
def store_comparison(
    run_a: EvaluationRun, run_b: EvaluationRun, result: Mapping[str, Any]
) -> EntryComparison:
    """Store ``evaluator.compare.compare_runs(a, b)``'s result for the pair (replacing any).

    ``result`` needs ``difference`` (a - b), ``difference_ci95`` ([low, high]) and ``p_value``;
    the pair is kept in id order with the sign flipped as needed, so each pair is stored once.
    """
    if run_a.split_id != run_b.split_id:
        raise ScoresError(f"runs #{run_a.pk} and #{run_b.pk} are not on the same split")
    if run_a.pk == run_b.pk:
        raise ScoresError(f"run #{run_a.pk} compared with itself")
    difference = _number(result, "difference", "comparison")
    p_value = _number(result, "p_value", "comparison")
    ci = result.get("difference_ci95")
    if difference is None or not (isinstance(ci, list | tuple) and len(ci) == 2):
        raise ScoresError(
            f"comparison: needs difference and difference_ci95 [low, high], got {dict(result)}"
        )
    low = _number({"low": ci[0]}, "low", "comparison.difference_ci95")
    high = _number({"high": ci[1]}, "high", "comparison.difference_ci95")
    if low is None or high is None:
        raise ScoresError("comparison.difference_ci95: both ends must be numbers")
    detail = {**result, "stored_reversed": run_a.pk > run_b.pk}
    if run_a.pk > run_b.pk:
        run_a, run_b = run_b, run_a
        difference, low, high = -difference, -high, -low
    comparison, _ = EntryComparison.objects.update_or_create(
        run_a=run_a,
        run_b=run_b,
        defaults={
            "split_id": run_a.split_id,
            "metric": str(result.get("metric", "truthfulness")),
            "difference": difference,
            "ci_low": low,
            "ci_high": high,
            "separable": low > 0.0 or high < 0.0,
            "p_value": p_value,
            "detail": detail,
            "computed_at": timezone.now(),
        },
    )
    return comparison
