"""The organisers' submissions panel of a challenge: every run, filtered by team, task, split,
state, standing and flags, with the logged actions (a reason required, the team shown them):
re-run, re-judge, cancel (``leaderboard.run_actions``), disqualify, hide from the boards,
restore (``leaderboard.standing``), give the quota back, evaluate on the splits added since
(``leaderboard.submission_actions``), and re-run every run of a split or a phase; and the
action log, paged (both kinds of action as one stream, newest first).

Who is asking is decided first: only the challenge's organisers get past ``_organised``, before
anything of the request is read."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import CharField, Exists, OuterRef, Q, QuerySet, Value
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from leaderboard import board_cache, permissions, run_actions, submission_actions
from leaderboard.judge_choice import UnknownJudge, chosen_judge, judge_options
from leaderboard.models import (
    AnswerSimilarity,
    Challenge,
    EvaluationRun,
    Phase,
    RunAction,
    Split,
    Submission,
    SubmissionAction,
)
from leaderboard.permissions import User
from leaderboard.standing import change_standing

logger = logging.getLogger(__name__)
PER_PAGE = 100
LOG_PER_PAGE = 100
_Act = Callable[[list[EvaluationRun], User, str], list[str]]


def _on_submissions(perform: Callable[[list[Submission], User, str], list[str]]) -> _Act:
    """An action on the submissions of the runs chosen, each once."""

    def act(runs: list[EvaluationRun], by: User, why: str) -> list[str]:
        chosen = {run.submission_id: run.submission for run in runs}
        return perform(list(chosen.values()), by, why)

    return act


def _standing(kind: str) -> _Act:
    return _on_submissions(functools.partial(change_standing, kind))


# action: (what the message says was done, what does it to the chosen runs)
ACTIONS: dict[str, tuple[str, _Act]] = {
    "rerun": ("re-run", run_actions.rerun),
    "rejudge": ("re-judged", run_actions.rejudge),
    "cancel": ("cancelled", run_actions.cancel),
    "disqualify": ("disqualified", _standing(SubmissionAction.Kind.DISQUALIFY)),
    "hide": ("hidden from the boards", _standing(SubmissionAction.Kind.HIDE)),
    "restore": ("restored to the boards", _standing(SubmissionAction.Kind.RESTORE)),
    "refund": ("given their quota back", _on_submissions(submission_actions.give_quota_back)),
    "evaluate": (
        "evaluated on the splits added since",
        _on_submissions(submission_actions.evaluate_new_splits),
    ),
}
ON_SUBMISSIONS = ("disqualify", "hide", "restore", "refund", "evaluate")


@dataclass(frozen=True)
class RunFilter:
    """What the panel lists, from the query string; each value as asked ("" for any)."""

    team: str = ""
    task: str = ""
    split: str = ""  # a split kind
    state: str = ""
    standing: str = ""
    flagged: bool = False

    @classmethod
    def from_query(cls, query: QueryDict) -> RunFilter:
        return cls(
            team=query.get("team", "").strip(),
            task=query.get("task", "").strip(),
            split=query.get("split", "").strip(),
            state=query.get("state", "").strip(),
            standing=query.get("standing", "").strip(),
            flagged=query.get("flagged") == "1",
        )

    def apply(self, runs: QuerySet[EvaluationRun]) -> QuerySet[EvaluationRun]:
        if self.team:
            runs = runs.filter(submission__team__name__icontains=self.team)
        if self.task:
            runs = runs.filter(task__task_id=self.task)
        if self.split:
            runs = runs.filter(split__kind=self.split)
        if self.state:
            runs = runs.filter(state=self.state)
        if self.standing:
            runs = runs.filter(submission__standing=self.standing)
        if self.flagged:
            pairs = AnswerSimilarity.objects.filter(
                Q(run_a=OuterRef("pk")) | Q(run_b=OuterRef("pk"))
            )
            runs = runs.filter(Exists(pairs))
        return runs


def _organised(request: HttpRequest, slug: str) -> Challenge:
    challenge = get_object_or_404(Challenge, slug=slug)
    if not permissions.is_organiser(request.user, challenge):
        raise PermissionDenied(f"only the organisers of {challenge.name} see its submissions panel")
    return challenge


@login_required
def panel(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = _organised(request, slug)
    wanted = RunFilter.from_query(request.GET)
    runs = wanted.apply(EvaluationRun.objects.filter(submission__challenge=challenge))
    flagged = AnswerSimilarity.objects.filter(Q(run_a=OuterRef("pk")) | Q(run_b=OuterRef("pk")))
    runs = runs.annotate(flagged=Exists(flagged)).select_related(
        "submission__team", "task", "split"
    )
    page = Paginator(runs.order_by("-submission__created_at", "pk"), PER_PAGE).get_page(
        request.GET.get("page")
    )
    entries = _board_entries([run for run in page.object_list if run.state == "done"])
    splits = Split.objects.filter(task__challenge=challenge).select_related("task")
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "challenge": challenge,
        "page": page,
        "wanted": wanted,
        "query": query.urlencode(),
        "tasks": challenge.tasks.values_list("task_id", flat=True).order_by("task_id"),
        "split_kinds": Split.Kind.choices,
        "states": EvaluationRun.State.choices,
        "standings": Submission.Standing.choices,
        "splits": splits.order_by("task__task_id", "kind", "-version"),
        "phases": challenge.phases.all(),
        "judges": judge_options(challenge.tasks.all()),
        "entries": entries,
    }
    return render(request, "leaderboard/panel.html", context)


def _board_entries(runs: list[EvaluationRun]) -> set[int]:
    """Which of ``runs`` are entries of their boards (each board read once, from its cache)."""
    boards = {(run.split_id, run.setting): run.split for run in runs}
    found: set[int] = set()
    for (_, setting), split in boards.items():
        found.update(entry.run_id for entry in board_cache.board(split, setting).entries)
    return found


@login_required
@require_POST
def panel_action(request: HttpRequest, slug: str) -> HttpResponse:
    """One action on the runs chosen (``run`` values), or on every run of a split (``split``)
    or of the submissions made during a phase (``phase``): re-run only; with the reason given.
    A re-judge grades with the ``judge`` chosen among those on offer (``judge_choice``, as the
    admin's action reads it), or each task's own when none is."""
    challenge = _organised(request, slug)
    action = request.POST.get("action", "")
    if action not in ACTIONS:
        raise PermissionDenied(f"unknown action {action!r}: expected one of {', '.join(ACTIONS)}")
    done, perform = ACTIONS[action]
    ours = EvaluationRun.objects.filter(submission__challenge=challenge)
    split_id, phase_id = request.POST.get("split", ""), request.POST.get("phase", "")
    if split_id or phase_id:
        if action != "rerun" or not (split_id or phase_id).isdigit():
            raise PermissionDenied("a whole split or phase is only re-run")
        if split_id:
            ours = ours.filter(split_id=int(split_id))
        else:
            phase = get_object_or_404(Phase, pk=int(phase_id), challenge=challenge)
            ours = ours.filter(
                submission__created_at__gte=phase.starts_at,
                submission__created_at__lt=phase.ends_at,
            )
        chosen = list(ours.select_related("submission"))
    else:
        ids = [int(v) for v in request.POST.getlist("run") if v.isdigit()]
        chosen = list(ours.filter(pk__in=ids).select_related("submission"))
    # back to the panel as it was filtered (the query re-encoded: never a URL of the form's)
    listed = QueryDict(request.POST.get("query", "")).urlencode()
    back = redirect(f"{reverse('leaderboard:panel', args=[challenge.slug])}?{listed}")
    if not chosen:
        messages.error(request, "Choose one run or more first.")
        return back
    try:
        if action == "rejudge":
            judge = chosen_judge(request.POST.get("judge", ""), challenge.tasks.all())
            perform = functools.partial(run_actions.rejudge, judge=judge)
        refused = perform(chosen, request.user, request.POST.get("why", ""))
    except (run_actions.RunActionRefused, UnknownJudge) as exc:
        messages.error(request, f"Nothing {done}: {exc}.")
        return back
    logger.info("%s %s by %s from the panel", [r.pk for r in chosen], done, request.user)
    targets = "submission" if action in ON_SUBMISSIONS else "run"
    count = len({r.submission_id for r in chosen}) if targets == "submission" else len(chosen)
    acted = count - len(refused)
    messages.success(request, f"{acted} {targets}{'s' if acted != 1 else ''} {done}.")
    for line in refused:
        messages.warning(request, f"Not {done}: {line}.")
    return back


@dataclass(frozen=True)
class LoggedAction:
    """A line of the action log: a run's or a submission's."""

    action: RunAction | SubmissionAction
    run: EvaluationRun | None
    submission: Submission


_Logged = TypeVar("_Logged", RunAction, SubmissionAction)
_Row = tuple[str, datetime, int]  # "run" or "submission", when, the action's id


def _stream(actions: QuerySet[_Logged], on: str) -> QuerySet[_Logged, _Row]:
    labelled = actions.order_by().annotate(on=Value(on, output_field=CharField()))
    rows: QuerySet[_Logged, _Row] = labelled.values_list("on", "at", "pk")
    return rows


def _logged(challenge: Challenge) -> QuerySet[RunAction, _Row]:
    """Every action on the challenge's runs and submissions, newest first, as one stream of
    rows: a page of it is one query, counted by the database."""
    runs = _stream(RunAction.objects.filter(run__submission__challenge=challenge), "run")
    submissions = SubmissionAction.objects.filter(submission__challenge=challenge)
    return runs.union(_stream(submissions, "submission"), all=True).order_by("-at", "-pk")


@login_required
def action_log(request: HttpRequest, slug: str) -> HttpResponse:
    """The action log, ``LOG_PER_PAGE`` lines a page (``?page=``), newest first."""
    challenge = _organised(request, slug)
    page = Paginator(_logged(challenge), LOG_PER_PAGE).get_page(request.GET.get("page"))
    listed = list(page.object_list)
    on_runs = RunAction.objects.select_related(
        "by", "run__submission__team", "run__task", "run__split"
    ).in_bulk([pk for on, _, pk in listed if on == "run"])
    on_submissions = SubmissionAction.objects.select_related("by", "submission__team").in_bulk(
        [pk for on, _, pk in listed if on == "submission"]
    )
    lines = []
    for on, _, pk in listed:
        if on == "run":
            action = on_runs[pk]
            lines.append(LoggedAction(action, action.run, action.run.submission))
        else:
            taken = on_submissions[pk]
            lines.append(LoggedAction(taken, None, taken.submission))
    context = {
        "challenge": challenge,
        "lines": lines,
        "page": page,
        "query": "",
        "counted": "actions",
    }
    return render(request, "leaderboard/action_log.html", context)
