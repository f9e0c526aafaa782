"""A team's own pages: its submissions and runs, live progress, each item's answer.

A run another team owns answers 404, as if it did not exist. A waiting run shows its place in
its queue and an estimated start (``leaderboard.run_queue``); the team's members cancel an
unfinished one (``leaderboard.run_actions.cancel_own``).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from leaderboard import permissions, public_board, ranking, repeats, run_queue
from leaderboard.models import EvaluationRun, SliceScore, Submission, SubmissionTask, Task
from leaderboard.models.results import ALL
from leaderboard.run_actions import RunActionRefused, cancel_own
from leaderboard.run_answers import AnswerFilter, filter_links, list_answers
from leaderboard.standing import SEEN_BY_TEAM, SeenAction, seen_by_team
from leaderboard.submitting import set_flags


def progress_record(run: EvaluationRun, place: run_queue.QueuePlace | None) -> dict[str, object]:
    """What the run page polls (``place``: the run's, as the user may read it:
    ``run_queue.place_for``)."""
    return {
        "id": run.pk,
        "state": run.state,
        "items_done": run.items_done,
        "items_total": run.items_total,
        "progress": run.progress,
        "failure_reason": run.failure_reason,
        "attempt": run.attempt,
        "finished": run.state in EvaluationRun.TERMINAL_STATES,
        "queue": place.as_dict() if place else None,
    }


@dataclass(frozen=True)
class RunRow:
    """A run as the team's submissions page shows it: its whole-split score when shown."""

    run: EvaluationRun
    overall: SliceScore | None
    score_hidden: bool  # a private test's score, not public yet
    published: public_board.Published | None = None  # what its public board published
    repeat: str = ""  # "repeat 2 of 3 of run #7" (``leaderboard.repeats``); "" for its own run


@dataclass(frozen=True)
class SubmissionRow:
    submission: Submission
    choosable: bool  # a task ranks chosen entries: the team may choose it for the final
    runs: list[RunRow]
    actions: list[SeenAction]  # what organisers did to it and its runs, and why


@login_required
def my_submissions(request: HttpRequest) -> HttpResponse:
    """The user's teams' submissions: each run's state, time, score (the task's primary metric,
    with its interval) and board, and "choose for final" where a task ranks chosen entries."""
    whole_split = SliceScore.objects.filter(dimension=ALL[0], value=ALL[1])
    runs = EvaluationRun.objects.select_related("task", "split__task__challenge").order_by(
        "task", "split", "setting", "trial"
    )
    runs = runs.annotate(repeat_of=repeats.original_run())
    submissions = (
        permissions.visible_submissions(request.user)
        .select_related("team", "challenge")
        .prefetch_related(
            Prefetch("runs", runs.prefetch_related(Prefetch("slice_scores", whole_split))),
            Prefetch("chosen_tasks", SubmissionTask.objects.select_related("task")),
            *SEEN_BY_TEAM,
        )
        .order_by("-created_at")[:200]
    )
    score_shown = permissions.score_visibility(request.user)
    rows = []
    for submission in submissions:
        runs_shown = []
        for run in submission.runs.all():
            # as the run page: a private test's score only once its results are public
            shown = score_shown(run)
            overall = next(iter(run.slice_scores.all()), None) if shown else None
            published = None if shown else public_board.published(run)
            runs_shown.append(
                RunRow(run, overall, not shown and not published, published, repeats.label(run))
            )
        choosable = any(row.run.task.entry_rule == Task.EntryRule.CHOSEN for row in runs_shown)
        rows.append(SubmissionRow(submission, choosable, runs_shown, seen_by_team(submission)))
    return render(request, "leaderboard/my_submissions.html", {"rows": rows})


@login_required
@require_POST
def choose_for_final(request: HttpRequest, submission_id: int) -> HttpResponse:
    """The team's entry for the final ranking (one per team and challenge), or none."""
    submission = get_object_or_404(permissions.visible_submissions(request.user), pk=submission_id)
    chosen = request.POST.get("chosen") == "1"
    try:
        set_flags(submission, permissions.signed_in(request.user), chosen_for_final=chosen)
    except PermissionDenied as exc:
        messages.error(request, str(exc))
    else:
        what = "is your team's final entry" if chosen else "is no longer your final entry"
        messages.success(request, f"#{submission.pk} {submission.method_name} {what}.")
    return redirect("leaderboard:my-submissions")


def visible_run(request: HttpRequest, run_id: int) -> EvaluationRun:
    """The run, if the user's team owns it or the user organises its challenge; else 404."""
    return get_object_or_404(
        permissions.visible_runs(request.user).select_related(
            "submission__team", "submission__challenge", "task", "split"
        ),
        pk=run_id,
    )


@login_required
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = visible_run(request, run_id)
    finished = run.state in EvaluationRun.TERMINAL_STATES
    show_answers = permissions.can_see_answers(request.user, run)
    wanted = AnswerFilter.from_query(request.GET)
    listed = list_answers(run, run.task.declared(), wanted) if show_answers else None
    place = run_queue.place_for(request.user, run)
    headline, published = None, None
    if permissions.can_see_score(request.user, run):
        headline = SliceScore.objects.filter(run=run, dimension=ALL[0], value=ALL[1]).first()
    else:
        published = public_board.published(run)
    return render(
        request,
        "leaderboard/run_detail.html",
        {
            "run": run,
            "repeat": repeats.label(run),
            "repeat_of": repeats.original_of(run),
            "listed": listed,
            "links": filter_links(listed, wanted) if listed else None,
            "wanted": wanted,
            "show_answers": show_answers,
            "show_log": show_answers,  # the same rule as the answers
            "unit": run.task.declared().unit,
            "headline": headline,
            "published": published,
            "columns": ranking.columns(run.task, run.setting, run.split),  # what its split has
            "operator_detail": permissions.can_see_operator_detail(request.user, run),
            "progress": progress_record(run, place),
            "organiser_actions": seen_by_team(run.submission),
            "place": place,
            "can_cancel": not finished and permissions.can_cancel_run(request.user, run),
        },
    )


@login_required
@require_POST
def cancel_run(request: HttpRequest, run_id: int) -> HttpResponse:
    """A member of the run's team cancels it; anyone else who may see it is refused."""
    run = visible_run(request, run_id)
    if not permissions.can_cancel_run(request.user, run):
        raise PermissionDenied("only a member of the run's team cancels it here")
    try:
        given_back = cancel_own(run, permissions.signed_in(request.user))
    except RunActionRefused as exc:
        messages.error(request, f"Run #{run.pk} was not cancelled: {exc}.")
    else:
        back = " It counts against no quota." if given_back else ""
        messages.success(request, f"Run #{run.pk} is cancelled.{back}")
    return redirect("leaderboard:run", run.pk)


@login_required
def run_progress(request: HttpRequest, run_id: int) -> JsonResponse:
    run = visible_run(request, run_id)
    return JsonResponse(progress_record(run, run_queue.place_for(request.user, run)))


@login_required
def run_transcript(request: HttpRequest, run_id: int) -> FileResponse:
    """The run's judge transcript (``docs/evaluator.md``): whoever may see its answers."""
    run = visible_run(request, run_id)
    if not (permissions.can_see_answers(request.user, run) and run.transcript):
        raise Http404("no judge transcript to show")
    return FileResponse(
        run.transcript.open("rb"),
        as_attachment=True,
        filename=f"run-{run.pk}-transcript.jsonl",
        content_type="application/x-ndjson",
    )
