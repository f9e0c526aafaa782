"""A judge change's dry run (``judge.preview_judge``, on the judge queue): every done run of the
split graded again by the candidate judge, through the judgment cache (only what it lacks is
judged; what it judges reaches the cache as it goes), and kept beside the run's published
verdicts and scores, or beside a baseline judge's on the same turns (``PreviewRun``,
``PreviewFlip``). Nothing published changes.

Resumable: each run is written whole once graded (``PreviewRun``), so a dry run interrupted, or
delivered twice, goes on with the runs not written yet; one whose judge could not decide some
items (its endpoint down) stores nothing for that run and is retried later.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from evaluator.judges.rubric import UNJUDGED
from leaderboard.judge_choice import JudgeSpec
from leaderboard.judge_preview import ALL_ITEMS, previewed_runs
from leaderboard.models import (
    EvaluationRun,
    ItemAnswer,
    ItemVerdict,
    JudgePreview,
    PreviewFlip,
    PreviewRun,
)
from leaderboard.pipeline.bundles import split_dir
from leaderboard.pipeline.judge import (
    benchmark_for_run,
    grade_answers,
    stored_predictions,
    task_benchmark,
)
from workers.faults import PodiumFault

State = JudgePreview.State


def dry_run(preview_id: int) -> int:
    """Grade the runs of preview ``preview_id`` not graded yet; returns how many runs are left
    with items the candidate could not decide (0: the preview is done)."""
    preview = JudgePreview.objects.select_related("split__task").get(pk=preview_id)
    split, task = preview.split, preview.split.task
    spec = JudgeSpec.from_dict(preview.candidate)
    baseline = JudgeSpec.from_dict(preview.baseline) if preview.baseline else None
    runs = list(previewed_runs(split).select_related("headline"))
    graded_ids = set(preview.runs.values_list("run_id", flat=True))
    JudgePreview.objects.filter(pk=preview.pk).update(
        state=State.JUDGING, runs_total=len(runs), runs_done=len(graded_ids), error=""
    )
    data = task_benchmark(task).load_split(split_dir(split))
    left = 0
    for run in runs:
        if run.pk in graded_ids:
            continue
        if not _grade_run(preview, spec, baseline, run, data):
            left += 1
    if not left:
        JudgePreview.objects.filter(pk=preview.pk).update(
            state=State.DONE, finished_at=timezone.now()
        )
    return left


def _grade_run(
    preview: JudgePreview,
    spec: JudgeSpec,
    baseline: JudgeSpec | None,
    run: EvaluationRun,
    data: Any,
) -> bool:
    """Grade ``run`` with the candidate and store it beside its published verdicts (or the
    ``baseline`` judge's on the same turns); False when some of its items stay undecided
    (nothing is stored then)."""
    benchmark = benchmark_for_run(run)
    answers = {a.item_key: a for a in run.answers.select_related("verdict")}
    predictions = stored_predictions(benchmark, data, answers)
    graded, judge, calls = grade_answers(spec, run.task, benchmark, data, predictions)
    JudgePreview.objects.filter(pk=preview.pk).update(
        judge_calls=F("judge_calls") + calls,
        candidate_judge_id=judge.judge_id,
        candidate_prompt_version=judge.prompt_version,
    )
    if baseline is None:
        old_grades = {key: _old_verdict(answer, run) for key, answer in answers.items()}
        old_judge_id, old_metrics = run.judge_id, run.headline.metrics
    else:
        base, base_judge, base_calls = grade_answers(
            baseline, run.task, benchmark, data, predictions
        )
        JudgePreview.objects.filter(pk=preview.pk).update(judge_calls=F("judge_calls") + base_calls)
        if any(benchmark.item_grade(item) == UNJUDGED for item in base):
            return False
        old_grades = {benchmark.item_key(item): benchmark.item_grade(item) for item in base}
        old_judge_id = base_judge.judge_id
        old_metrics = benchmark.score(base).headline.metrics
    if any(benchmark.item_grade(item) == UNJUDGED for item in graded):
        return False
    pairs: dict[str, dict[str, Counter[str]]] = {}
    flips = []
    for item in graded:
        key = benchmark.item_key(item)
        answer, old, new = answers.get(key), old_grades.get(key, ""), benchmark.item_grade(item)
        row = benchmark.to_row(item)
        slices = {ALL_ITEMS[0]: ALL_ITEMS[1], **benchmark.item_slices(row)}
        for dimension, value in slices.items():
            pairs.setdefault(dimension, {}).setdefault(value, Counter())[f"{old}|{new}"] += 1
        if old != new and answer is not None:
            flips.append(
                PreviewFlip(
                    preview=preview, answer=answer, old_verdict=old, new_verdict=new,
                    new_detail=row,
                )
            )  # fmt: skip
    new_metrics = benchmark.score(graded).headline.metrics
    with transaction.atomic():
        _, created = PreviewRun.objects.get_or_create(
            preview=preview,
            run=run,
            defaults={
                "setting": run.setting,
                "old_judge_id": old_judge_id,
                "old_metrics": dict(old_metrics),
                "new_metrics": dict(new_metrics),
                "items": len(graded),
                "flipped": len(flips),
                "pairs": {d: {v: dict(c) for v, c in by.items()} for d, by in pairs.items()},
            },
        )
        if created:  # a second delivery of the same dry run writes nothing twice
            PreviewFlip.objects.bulk_create(flips, batch_size=1000)
        JudgePreview.objects.filter(pk=preview.pk).update(runs_done=preview.runs.count())
    return True


def _old_verdict(answer: ItemAnswer, run: EvaluationRun) -> str:
    """The published verdict of an answer; a done run has one for every item."""
    verdict: ItemVerdict | None = getattr(answer, "verdict", None)
    if verdict is None:
        raise PodiumFault(f"run #{run.pk}: an item has no published verdict: judge the run again")
    return verdict.verdict
