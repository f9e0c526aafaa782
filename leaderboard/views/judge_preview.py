"""Organisers' judge previews of a split (``leaderboard.judge_preview``): start one with a
candidate judge, follow its dry run, read the old and new boards side by side with the rank
changes, Kendall's tau, the flipped verdicts and the agreement per slice, publish it (one
logged action) or resume it, and export it as JSON (the old judge's results, kept)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from leaderboard import judge_compare, judge_preview, permissions
from leaderboard.judge_choice import JudgeSpec, UnknownJudge, chosen_judge, judge_options
from leaderboard.models import JudgePreview, Split

REFRESH_S = 5  # a page of an unfinished dry run reloads itself this often


def _organised_split(request: HttpRequest, slug: str, task_id: str, kind: str) -> Split:
    split = get_object_or_404(
        Split.objects.current().select_related("task__challenge"),
        task__challenge__slug=slug,
        task__task_id=task_id,
        kind=kind,
    )
    challenge = split.task.challenge
    if not permissions.is_organiser(request.user, challenge):
        raise PermissionDenied(f"only the organisers of {challenge.name} preview judge changes")
    return split


def _preview(
    request: HttpRequest, slug: str, task_id: str, kind: str, preview_id: int
) -> JudgePreview:
    split = _organised_split(request, slug, task_id, kind)
    return get_object_or_404(
        JudgePreview.objects.select_related("split__task"), pk=preview_id, split=split
    )


def previews(request: HttpRequest, slug: str, task_id: str, kind: str) -> HttpResponse:
    """The split's previews, newest first, and the form starting one (``POST``: ``judge``, a
    judge on offer's key)."""
    split = _organised_split(request, slug, task_id, kind)
    task = split.task
    error, status = "", 200
    if request.method == "POST":
        try:
            candidate = chosen_judge(request.POST.get("judge", ""), [task])
            if candidate is None:
                raise UnknownJudge("choose the judge to preview")
            # "": the published verdicts
            baseline = chosen_judge(request.POST.get("against", ""), [task])
            preview = judge_preview.start(split, candidate, request.user, baseline)
        except (UnknownJudge, judge_preview.PreviewRefused) as exc:
            error, status = str(exc), 400
        else:
            return redirect(_url(preview))
    context = {
        "split": split,
        "task": task,
        "task_judge": JudgeSpec.of_task(task),
        "options": judge_options([task]),
        "previews": split.judge_previews.select_related("created_by", "published_by"),
        "error": error,
    }
    return render(request, "leaderboard/judge_previews.html", context, status=status)


def _url(preview: JudgePreview) -> str:
    split = preview.split
    return reverse(
        "leaderboard:judge-preview",
        args=[split.task.challenge.slug, split.task.task_id, split.kind, preview.pk],
    )


def preview_page(
    request: HttpRequest, slug: str, task_id: str, kind: str, preview_id: int
) -> HttpResponse:
    preview = _preview(request, slug, task_id, kind, preview_id)
    done = preview.state == JudgePreview.State.DONE
    unfinished = not done  # queued (its message may be lost), judging, or failed
    runs = list(preview.runs.values_list("pairs", flat=True))
    flips = judge_compare.flipped(preview)
    context = {
        "split": preview.split,
        "task": preview.split.task,
        "preview": preview,
        "refresh_s": 0 if done or preview.state == JudgePreview.State.FAILED else REFRESH_S,
        # a failed or stalled dry run, or runs finished since it ran (not once published)
        "resumable": not preview.published_at
        and (unfinished or (done and judge_preview.unpreviewed_runs(preview) > 0)),
        "changes": judge_compare.board_changes(preview) if runs else [],
        "agreement": judge_compare.agreement_table(runs),
        "flips": flips,
        "labelled": any(flip.human_label for flip in flips),  # type: ignore[attr-defined]
        "flips_total": preview.flips.count(),
        "flips_shown": judge_compare.FLIPS_SHOWN,
    }
    return render(request, "leaderboard/judge_preview.html", context)


@require_POST
def preview_publish(
    request: HttpRequest, slug: str, task_id: str, kind: str, preview_id: int
) -> HttpResponse:
    preview = _preview(request, slug, task_id, kind, preview_id)
    try:
        refused = judge_preview.publish(preview, request.user, request.POST.get("why", ""))
    except judge_preview.PreviewRefused as exc:
        messages.error(request, f"Not published: {exc}")
    else:
        messages.success(
            request,
            f"Published: {preview.candidate_label} judges {preview.split.task.name} now; "
            "its done runs are re-judged.",
        )
        for line in refused:
            messages.warning(request, f"Not re-judged: {line}")
    return redirect(_url(preview))


@require_POST
def preview_resume(
    request: HttpRequest, slug: str, task_id: str, kind: str, preview_id: int
) -> HttpResponse:
    preview = _preview(request, slug, task_id, kind, preview_id)
    try:
        judge_preview.resume(preview)
    except judge_preview.PreviewRefused as exc:
        messages.error(request, f"Not resumed: {exc}")
    return redirect(_url(preview))


def preview_export(
    request: HttpRequest, slug: str, task_id: str, kind: str, preview_id: int
) -> JsonResponse:
    preview = _preview(request, slug, task_id, kind, preview_id)
    response = JsonResponse(judge_preview.record(preview), json_dumps_params={"indent": 1})
    response["Content-Disposition"] = f'attachment; filename="judge-preview-{preview.pk}.json"'
    return response
