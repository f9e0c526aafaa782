"""A judge change, previewed before it changes ranks, then published in one logged action.

- ``start``: an organiser names a candidate judge (any judge on offer:
  ``leaderboard.judge_choice.judge_options``; the task's own judge again tries Podium's current
  prompt version) for a split; its dry run is ``judge.preview_judge`` on the judge queue
  (``leaderboard.pipeline.preview``), never the web request. It re-judges only what the judgment
  cache lacks and leaves everything published as it is.
- Two judges on the same turns: a preview may compare the candidate with another judge (a
  ``baseline``, also graded through the cache) instead of the published verdicts; such a
  preview compares, it is never published.
- ``leaderboard.judge_compare`` reads a preview: both boards, rank changes, Kendall's tau, the
  flipped verdicts, the disagreement per slice.
- ``publish``: the candidate becomes the task's judge and every done run of the task is
  re-judged with it (``run_actions.rejudge``: the preview's split answered from the cache), in
  one transaction, logged on the preview (who, when, from what to what, why) and on each run.
  The old judge's results stay retrievable: the preview keeps each run's scores as published
  before and every verdict that flipped, and the judgment cache keeps the old judge's verdicts,
  so publishing it back is judged from the cache alone.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from leaderboard import judge_compare, run_actions
from leaderboard.judge_choice import OPENAI, RULES, JudgeSpec
from leaderboard.models import EvaluationRun, JudgePreview, Split, Task
from leaderboard.permissions import User
from podium.celery import app, queue_for

PREVIEW_TASK = "judge.preview_judge"
ALL_ITEMS = ("all", "all")  # the slice every item is in


class PreviewRefused(Exception):
    """The preview's state does not allow the action; the message says why."""


def previewed_runs(split: Split) -> QuerySet[EvaluationRun]:
    """The runs a preview of ``split`` grades again: its done runs with scores."""
    return EvaluationRun.objects.filter(
        split=split, state=EvaluationRun.State.DONE, headline__isnull=False
    ).order_by("pk")


def current_label(split: Split) -> str:
    """The judges behind the split's published verdicts, with their prompt versions."""
    judges = (
        previewed_runs(split)
        .exclude(judge_id="")
        .values_list("judge_id", "prompt_version")
        .distinct()
        .order_by("judge_id", "prompt_version")
    )
    named = [f"{judge} (prompt {version or '?'})" for judge, version in judges]
    return ", ".join(named) or "no judged run yet"


def send(preview: JudgePreview) -> None:
    """Queue (again) the dry run of ``preview`` once the transaction commits."""
    transaction.on_commit(
        lambda: app.send_task(
            PREVIEW_TASK, kwargs={"preview_id": preview.pk}, queue=queue_for(PREVIEW_TASK)
        )
    )


@transaction.atomic
def start(
    split: Split, candidate: JudgeSpec, by: User, baseline: JudgeSpec | None = None
) -> JudgePreview:
    """A new preview of ``candidate`` on ``split``, compared with the published verdicts or
    with the ``baseline`` judge on the same turns; its dry run queued."""
    if not previewed_runs(split).exists():
        raise PreviewRefused(f"split {split} has no done run to judge again")
    if baseline == candidate:
        raise PreviewRefused(f"{candidate.label} compared with itself: choose two judges")
    preview = JudgePreview.objects.create(
        split=split,
        candidate=candidate.to_dict(),
        candidate_label=candidate.label,
        baseline=baseline.to_dict() if baseline else {},
        current_label=baseline.label if baseline else current_label(split),
        created_by=by if by.is_authenticated else None,
    )
    send(preview)
    return preview


def resume(preview: JudgePreview) -> None:
    """Send an unfinished (or failed) dry run again: it goes on with the runs it lacks."""
    if preview.state == JudgePreview.State.DONE and not unpreviewed_runs(preview):
        raise PreviewRefused("the dry run is done and no run finished since")
    JudgePreview.objects.filter(pk=preview.pk).update(state=JudgePreview.State.QUEUED, error="")
    send(preview)


def unpreviewed_runs(preview: JudgePreview) -> int:
    """Done runs of the split the preview has not graded (finished after it ran)."""
    graded = preview.runs.values("run_id")
    return previewed_runs(preview.split).exclude(pk__in=graded).count()


def publish(preview: JudgePreview, by: User, why: str) -> list[str]:
    """Make the candidate the task's judge and re-judge the task's done runs with it; returns
    the runs refused (one line each). All of it, and its log, in one transaction."""
    why = why.strip()
    if not why:
        raise PreviewRefused("say why: the reason is kept with the publication")
    with transaction.atomic():
        preview = JudgePreview.objects.select_for_update().get(pk=preview.pk)
        if preview.published_at is not None:
            raise PreviewRefused(
                f"preview #{preview.pk} was already published on {preview.published_at:%Y-%m-%d}"
            )
        if preview.baseline:
            raise PreviewRefused(
                f"preview #{preview.pk} compares two judges ({preview.current_label}, not the "
                "published verdicts): preview the judge against the published verdicts to "
                "publish it"
            )
        if preview.state != JudgePreview.State.DONE:
            raise PreviewRefused(f"its dry run is {preview.state}: publish it once it is done")
        if left := unpreviewed_runs(preview):
            raise PreviewRefused(
                f"{left} run(s) finished after the dry run: resume it first, so the preview "
                "shows what publishing changes"
            )
        task = Task.objects.select_for_update().get(pk=preview.split.task_id)
        before = JudgeSpec.of_task(task).label
        preview.published_boards = judge_compare.snapshot(judge_compare.board_changes(preview))
        candidate = JudgeSpec.from_dict(preview.candidate)
        _set_judge(task, candidate)
        preview.published_by = by if by.is_authenticated else None
        preview.published_at = timezone.now()
        preview.published_from = before
        preview.published_why = why
        preview.save(
            update_fields=[
                "published_by",
                "published_at",
                "published_from",
                "published_why",
                "published_boards",
            ]
        )
        runs = EvaluationRun.objects.filter(task=task, state=EvaluationRun.State.DONE)
        change = f"judge published (preview #{preview.pk}): {before} -> {candidate.label}"
        return run_actions.rejudge(runs, by, f"{change}: {why}")


def _set_judge(task: Task, judge: JudgeSpec) -> None:
    """The task's judge fields set to ``judge`` and saved (``Task.save`` re-ranks)."""
    if judge.kind == RULES:
        task.judge_kind = Task.JudgeKind.RULES
    elif judge.kind == OPENAI:
        task.judge_kind = Task.JudgeKind.OPENAI
        task.judge_endpoint = judge.endpoint
        task.judge_model = judge.model
        task.judge_revision = judge.revision
    else:
        raise PreviewRefused(f"unknown judge kind {judge.kind!r}")
    task.clean()  # the endpoint is configured, a model is named
    task.save()


def record(preview: JudgePreview) -> dict[str, Any]:
    """The preview as plain data (its JSON export): both judges, the publication, each run's
    scores under both, every flipped verdict. After a publication this is how the old judge's
    results stay retrievable."""
    published = None
    if preview.published_at is not None:
        published = {
            "at": preview.published_at.isoformat(),
            "by": str(preview.published_by or ""),
            "from": preview.published_from,
            "to": preview.candidate_label,
            "why": preview.published_why,
        }
    runs = preview.runs.select_related("run__submission__team").order_by("run_id")
    flips = preview.flips.select_related("answer").order_by("answer_id")
    return {
        "preview": preview.pk,
        "split": str(preview.split),
        "old_judge": preview.current_label,
        "compared_with": "another judge" if preview.baseline else "the published verdicts",
        "new_judge": {
            "spec": preview.candidate,
            "judge_id": preview.candidate_judge_id,
            "prompt_version": preview.candidate_prompt_version,
        },
        "published": published,
        "boards": judge_compare.snapshot(judge_compare.board_changes(preview)),
        "runs": [
            {
                "run_id": row.run_id,
                "team": row.run.submission.team.name,
                "setting": row.setting,
                "old_judge_id": row.old_judge_id,
                "old": row.old_metrics,
                "new": row.new_metrics,
                "items": row.items,
                "flipped": row.flipped,
            }
            for row in runs
        ],
        "flips": [
            {
                "run_id": flip.answer.run_id,
                "item": flip.answer.item_key,
                "old": flip.old_verdict,
                "new": flip.new_verdict,
            }
            for flip in flips.iterator()
        ],
    }
