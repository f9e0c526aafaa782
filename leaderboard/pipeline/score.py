"""The scoring stage: slice scores and paired comparisons, computed once and stored.

The graded items are read back from the stored verdicts (each verdict's ``detail`` is its
benchmark's per-item row, ``Benchmark.from_row``), in the split's order, so every number on a page
traces back to those rows. Each finished run is compared with the other current entries of its
split, on the benchmark's primary metric, and its answers with other teams' runs there
(``leaderboard.duplicates``); pages only read the stored results.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from django.db import transaction

from evaluator.records import EvaluatorError
from evaluator.seam.benchmark import Benchmark, ItemT, PredictionT, SplitT
from leaderboard.board_store import entries
from leaderboard.duplicates import flag_similar_runs
from leaderboard.models import EvaluationRun, ItemVerdict
from leaderboard.pipeline.bundles import split_dir
from leaderboard.pipeline.judge import benchmark_for_run
from leaderboard.scores import store_comparison, store_scores
from workers.faults import PodiumFault

logger = logging.getLogger("podium.pipeline")
State = EvaluationRun.State


def graded_items(
    run: EvaluationRun, benchmark: Benchmark[SplitT, PredictionT, ItemT], keys: list[str]
) -> list[ItemT]:
    """The run's graded items, in split order (``keys``), from its verdict rows."""
    verdicts = {
        verdict.answer.item_key: verdict
        for verdict in ItemVerdict.objects.filter(answer__run=run).select_related("answer")
    }
    graded: list[ItemT] = []
    for key in keys:
        verdict = verdicts.get(key)
        if verdict is None:
            raise PodiumFault(f"run #{run.pk}: item {key} has no verdict")
        if not verdict.detail:
            raise PodiumFault(
                f"run #{run.pk}: the verdict of item {key} has no detail (judged before verdicts "
                "kept their protocol row): judge the run again"
            )
        try:
            graded.append(benchmark.from_row(verdict.detail, f"run #{run.pk} verdict {key}"))
        except EvaluatorError as exc:
            raise PodiumFault(str(exc)) from exc
    return graded


def slice_verdicts(
    benchmark: Benchmark[SplitT, PredictionT, ItemT], graded: Sequence[ItemT]
) -> dict[str, dict[str, Counter[str]]]:
    """How many items of each slice value the judge gave each verdict: what a slice's
    calibrated score weighs (``leaderboard.slice_calibration``)."""
    found: dict[str, dict[str, Counter[str]]] = {}
    for item in graded:
        grade = benchmark.item_grade(item)
        for dimension, value in benchmark.item_slices(benchmark.to_row(item)).items():
            found.setdefault(dimension, {}).setdefault(value, Counter())[grade] += 1
    return found


def score_stage(run: EvaluationRun) -> None:
    """Stage ``scoring``: store slice scores and comparisons, then the run is done."""
    benchmark = benchmark_for_run(run)
    keys = benchmark.split_keys(benchmark.load_split(split_dir(run.split)))
    graded = graded_items(run, benchmark, keys)
    scores = benchmark.score(graded)
    verdicts = Counter(benchmark.item_grade(item) for item in graded)
    # a repeat ranks on no board: it is compared with none (``leaderboard.repeats``)
    board = entries(run.split, run.setting) if run.trial == 0 else []
    other_ids = [entry.run_id for entry in board if entry.run_id != run.pk]
    others = EvaluationRun.objects.filter(pk__in=other_ids).order_by("pk")
    comparisons = []
    for other in others:
        try:
            result = benchmark.compare(graded, graded_items(other, benchmark, keys))
        except (EvaluatorError, PodiumFault) as exc:
            logger.warning("run #%s vs run #%s: no comparison: %s", run.pk, other.pk, exc)
            continue
        comparisons.append((other, result))
    with transaction.atomic():
        store_scores(
            run,
            scores,
            benchmark.settings(),
            benchmark.units(graded),
            verdicts,
            benchmark.unit_slices(graded),
            slice_verdicts(benchmark, graded),
        )
        for other, result in comparisons:
            store_comparison(run, other, result)
        run.move_to(State.DONE)
    if run.trial:  # its submission's own run was checked; a repeat answers as it did
        return
    try:  # advisory, for organisers: never the run's failure
        flag_similar_runs(run, benchmark)
    except Exception:
        logger.exception("run #%s: near-identical answers not checked", run.pk)
