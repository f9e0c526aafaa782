"""A team's own pages: its submissions and runs, live progress, each item's answer.

A run another team owns answers 404, as if it did not exist.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from leaderboard import permissions, ranking
from leaderboard.models import EvaluationRun, ItemAnswer, SliceScore, SubmissionTask, Task
from leaderboard.models.results import ALL
from leaderboard.submitting import set_flags

ANSWERS_PER_PAGE = 200


def progress_record(run: EvaluationRun) -> dict:
    """What the run page polls; also the API's progress fields."""
    return {
        "id": run.pk,
        "state": run.state,
        "items_done": run.items_done,
        "items_total": run.items_total,
        "progress": run.progress,
        "failure_reason": run.failure_reason,
        "attempt": run.attempt,
        "finished": run.state in EvaluationRun.TERMINAL_STATES,
    }


@login_required
def my_submissions(request: HttpRequest) -> HttpResponse:
    """The user's teams' submissions: each run's state, time, score (the task's primary metric,
    with its interval) and board, and "choose for final" where a task ranks chosen entries."""
    overall = SliceScore.objects.filter(dimension=ALL[0], value=ALL[1])
    runs = EvaluationRun.objects.select_related("task", "split__task__challenge").order_by(
        "task", "split", "setting"
    )
    submissions = (
        permissions.visible_submissions(request.user)
        .select_related("team", "challenge")
        .prefetch_related(
            Prefetch("runs", runs.prefetch_related(Prefetch("slice_scores", overall))),
            Prefetch("chosen_tasks", SubmissionTask.objects.select_related("task")),
        )
        .order_by("-created_at")[:200]
    )
    score_shown = permissions.score_visibility(request.user)
    for submission in submissions:
        submission.choosable = any(
            run.task.entry_rule == Task.EntryRule.CHOSEN for run in submission.runs.all()
        )
        for run in submission.runs.all():
            # as the run page: a private test's score only once its results are public
            shown = score_shown(run)
            run.overall = next(iter(run.slice_scores.all()), None) if shown else None
            run.score_hidden = not shown
    return render(request, "leaderboard/my_submissions.html", {"submissions": submissions})


@login_required
@require_POST
def choose_for_final(request: HttpRequest, submission_id: int) -> HttpResponse:
    """The team's entry for the final ranking (one per team and challenge), or none."""
    submission = get_object_or_404(permissions.visible_submissions(request.user), pk=submission_id)
    chosen = request.POST.get("chosen") == "1"
    try:
        set_flags(submission, request.user, chosen_for_final=chosen)
    except PermissionDenied as exc:
        messages.error(request, str(exc))
    else:
        what = "is your team's final entry" if chosen else "is no longer your final entry"
        messages.success(request, f"#{submission.pk} {submission.method_name} {what}.")
    return redirect("leaderboard:my-submissions")


def _run(request: HttpRequest, run_id: int) -> EvaluationRun:
    return get_object_or_404(
        permissions.visible_runs(request.user).select_related(
            "submission__team", "submission__challenge", "task", "split"
        ),
        pk=run_id,
    )


@login_required
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _run(request, run_id)
    show_answers = permissions.can_see_answers(request.user, run)
    answers: list[ItemAnswer] = []
    verdicts: list[str] = []
    wanted = request.GET.get("verdict", "")
    if show_answers:
        chosen = ItemAnswer.objects.filter(run=run)
        verdicts = sorted(
            set(chosen.exclude(verdict=None).values_list("verdict__verdict", flat=True))
        )
        if wanted:
            chosen = chosen.filter(verdict__verdict=wanted)
        answers = list(
            chosen.select_related("verdict").order_by("group", "position")[:ANSWERS_PER_PAGE]
        )
        question, truth = run.task.declared().shown_fields
        for answer in answers:  # from the verdict's row: the item as the judge saw it
            row = answer.verdict.detail if hasattr(answer, "verdict") else {}
            answer.question = (row or {}).get(question)
            answer.truth = (row or {}).get(truth)
    headline = None
    if permissions.can_see_score(request.user, run):
        headline = SliceScore.objects.filter(run=run, dimension=ALL[0], value=ALL[1]).first()
    return render(
        request,
        "leaderboard/run_detail.html",
        {
            "run": run,
            "answers": answers,
            "verdicts": verdicts,
            "wanted_verdict": wanted,
            "show_answers": show_answers,
            "show_log": show_answers,  # the same rule as the answers
            "unit": run.task.declared().unit,
            "answers_limit": ANSWERS_PER_PAGE,
            "headline": headline,
            "columns": ranking.columns(run.task, run.setting, run.split),  # what its split has
            "operator_detail": permissions.can_see_operator_detail(request.user, run),
            "progress": progress_record(run),
        },
    )


@login_required
def run_progress(request: HttpRequest, run_id: int) -> JsonResponse:
    return JsonResponse(progress_record(_run(request, run_id)))


@login_required
def run_transcript(request: HttpRequest, run_id: int) -> FileResponse:
    """The run's judge transcript (``docs/evaluator.md``): whoever may see its answers."""
    run = _run(request, run_id)
    if not (permissions.can_see_answers(request.user, run) and run.transcript):
        raise Http404("no judge transcript to show")
    return FileResponse(
        run.transcript.open("rb"),
        as_attachment=True,
        filename=f"run-{run.pk}-transcript.jsonl",
        content_type="application/x-ndjson",
    )
