"""Writing aggregated results: the evaluator's scores dict and paired comparisons.

Pages only read what these functions store; nothing is recomputed on a page view.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
from django.db import transaction
from django.utils import timezone

from evaluator.benchmarks import get_benchmark
from evaluator.seam import Comparison, Metric, Score, ScoreBlock
from leaderboard import board_store
from leaderboard import unit_slices as unit_slices_store
from leaderboard.models import EntryComparison, EvaluationRun, Headline, RunUnits, SliceScore, Task
from leaderboard.models.results import ALL
from leaderboard.models.units import encode


class ScoresError(ValueError):
    """A scores dict that does not have the evaluator's shape; the message says where."""


def _number(block: Mapping[str, Any], name: str, where: str) -> float | None:
    value = block.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ScoresError(f"{where}.{name}: expected a finite number or null, got {value!r}")
    return float(value)


def _row(run: EvaluationRun, block: ScoreBlock, metrics: list[Metric], primary: str) -> SliceScore:
    where = f"scores[{block.dimension}={block.value}]"
    try:
        json.dumps(block.metrics, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ScoresError(f"{where}: metrics are not finite JSON values: {exc}") from None
    for metric in metrics:
        _number(block.metrics, metric.name, where)
    ci = block.metrics.get(f"{primary}_ci95")
    if ci is not None and not (
        isinstance(ci, list | tuple)
        and len(ci) == 2
        and all(_number({"end": end}, "end", where) is not None for end in ci)
    ):
        raise ScoresError(f"{where}.{primary}_ci95: expected [low, high] or null, got {ci!r}")
    if block.count < 0:
        raise ScoresError(f"{where}: count {block.count} is negative")
    row = SliceScore(
        run=run,
        dimension=block.dimension,
        value=block.value,
        count=block.count,
        metrics=dict(block.metrics),
    )
    row.set_primary(primary)
    return row


@transaction.atomic
def store_scores(
    run: EvaluationRun,
    scores: Score | Mapping[str, Any],
    scored_with: Mapping[str, Any] | None = None,
    units: np.ndarray | None = None,
    verdicts: Mapping[str, int] | None = None,
    unit_slices: Mapping[str, Sequence[str | None]] | None = None,
    slice_verdicts: Mapping[str, Mapping[str, Mapping[str, int]]] | None = None,
) -> int:
    """Replace the run's SliceScore rows with its benchmark's blocks of ``scores`` (the
    benchmark's ``score``, or a scores document as scores.json holds it); returns the row count.
    ``scored_with``: the benchmark's options (``Benchmark.settings()``), kept on the run. Everything
    is checked before anything is written, so bad input leaves the earlier rows in place.
    ``units``: the run's values of the benchmark's paired metric per unit (``Scoring.units``),
    kept for its boards' rank intervals and groups (none: the run has none there), with
    ``verdicts``: how many items the judge gave each verdict (``leaderboard.calibration``), and
    ``slice_verdicts`` the same per slice value; ``unit_slices``: which slice value each unit
    belongs to (``Scoring.unit_slices``, kept once per split's units: ``leaderboard.
    unit_slices``)."""
    if isinstance(scores, Score):
        scores = scores.document
    if not isinstance(scores, Mapping):
        raise ScoresError(f"scores: expected an object, got {type(scores).__name__}")
    benchmark = get_benchmark(run.task.benchmark)
    try:
        blocks = benchmark.score_blocks(scores)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ScoresError(f"scores: not a {run.task.benchmark} scores dict: {exc!r}") from None
    if not blocks or (blocks[0].dimension, blocks[0].value) != ALL:
        raise ScoresError("scores: the first block must be all/all")
    if any(block.dimension == ALL[0] for block in blocks[1:]):
        raise ScoresError(f"scores.slices: the dimension name {ALL[0]!r} is reserved")
    numbers = [m for m in benchmark.metrics if m.scale != "count"]
    rows = [_row(run, block, numbers, run.task.primary_metric) for block in blocks]
    unjudged = scores.get("unjudged", 0)
    if isinstance(unjudged, bool) or not isinstance(unjudged, int) or unjudged < 0:
        raise ScoresError(f"scores.unjudged: expected a count, got {unjudged!r}")
    if units is not None and (units.ndim != 1 or not np.all(np.isfinite(units))):
        raise ScoresError("units: expected a list of finite numbers, one per unit")
    for dimension, per_unit in (unit_slices or {}).items():
        if units is None or len(per_unit) != units.size:
            raise ScoresError(f"unit slices of {dimension}: not one value per unit")
    drop_scores(run)
    if units is not None:
        RunUnits.objects.create(
            run=run,
            metric=benchmark.primary,
            values=encode(units),
            verdicts=dict(verdicts or {}),
            slice_verdicts={
                d: {v: dict(n) for v, n in by.items()} for d, by in (slice_verdicts or {}).items()
            },
            slices=unit_slices_store.keep(unit_slices or {}),
        )
    SliceScore.objects.bulk_create(rows, batch_size=1000)
    whole = rows[0]
    Headline.objects.create(
        run=run,
        split_id=run.split_id,
        setting=run.setting,
        count=whole.count,
        primary=whole.primary,
        primary_ci_low=whole.primary_ci_low,
        primary_ci_high=whole.primary_ci_high,
        metrics=whole.metrics,
        dimensions=sorted({row.dimension for row in rows[1:]}),
    )
    run.scored_with = dict(scored_with or {})
    run.scores_complete = bool(scores.get("complete", unjudged == 0))
    run.unjudged_items = unjudged
    run.save(update_fields=["scored_with", "scores_complete", "unjudged_items"])
    board_store.results_changed(run.split_id)
    return len(rows)


def drop_scores(run: EvaluationRun) -> None:
    """Delete the run's stored scores: its SliceScore rows, its headline and its units."""
    SliceScore.objects.filter(run=run).delete()
    Headline.objects.filter(run=run).delete()
    RunUnits.objects.filter(run=run).delete()


@transaction.atomic
def store_comparison(
    run_a: EvaluationRun, run_b: EvaluationRun, result: Comparison | Mapping[str, Any]
) -> EntryComparison:
    """Store ``evaluator.compare.compare_runs(a, b)``'s result for the pair (replacing any).

    ``result`` needs ``difference`` (a - b), ``difference_ci95`` ([low, high]) and ``p_value``;
    the pair is kept in id order with the sign flipped as needed, so each pair is stored once.
    """
    if isinstance(result, Comparison):
        result = result.document
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


# Constrained, not bound to their abstract base: each has its own manager to bulk_update with.
ScoreRows = TypeVar("ScoreRows", SliceScore, Headline)


def _rank_again(model: type[ScoreRows], task: Task) -> None:
    rows = list(model.objects.filter(run__task=task))
    for row in rows:
        row.set_primary(task.primary_metric)
    model.objects.bulk_update(
        rows, ["primary", "primary_ci_low", "primary_ci_high"], batch_size=1000
    )


def rank_again(task: Task) -> None:
    """The stored score rows of ``task``'s runs ranked by its primary metric now (its boards
    are ranked again by the task's save, ``leaderboard.board_cache``)."""
    _rank_again(SliceScore, task)
    _rank_again(Headline, task)
