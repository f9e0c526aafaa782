"""Organisers' pages of a challenge: everyone's submissions, with their state, runs and the
images two teams share (a duplicate entry, or one team's agent re-submitted by another), the
runs whose answers are near-identical to another team's (``leaderboard.duplicates``), and
the challenge's figures: submissions per day, teams, failure reasons, run hours per team."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import (
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    Prefetch,
    Q,
    QuerySet,
    Sum,
)
from django.db.models.functions import TruncDate
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from leaderboard import permissions
from leaderboard.models import (
    AnswerSimilarity,
    Challenge,
    EvaluationRun,
    Submission,
    SubmissionTask,
)

PER_PAGE = 100


@dataclass(frozen=True)
class SubmissionRow:
    """A submission as the organisers' list shows it."""

    submission: Submission
    run_states: list[tuple[str, int]]  # each state of its runs, with how many are in it
    same_image_as: list[str]  # the other teams that submitted its image
    similar_answers: list[str]  # its runs' near-identical answers to another team's


def challenge_submissions(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = get_object_or_404(Challenge, slug=slug)
    if not permissions.is_organiser(request.user, challenge):
        raise PermissionDenied(f"only the organisers of {challenge.name} see every submission")
    everything = Submission.objects.filter(challenge=challenge)
    shown = everything.select_related("team", "submitted_by").prefetch_related(
        Prefetch("runs", EvaluationRun.objects.only("pk", "state", "submission_id")),
        Prefetch("chosen_tasks", SubmissionTask.objects.select_related("task")),
    )
    state = request.GET.get("state", "")
    if state in Submission.State.values:
        shown = shown.filter(state=state)
    team = request.GET.get("team", "").strip()
    if team:
        shown = shown.filter(team__name__icontains=team)
    page = Paginator(shown.order_by("-created_at"), PER_PAGE).get_page(request.GET.get("page"))
    # Images submitted by more than one team: each submission names the other teams.
    teams_by_digest: dict[str, set[str]] = defaultdict(set)
    for digest, name in everything.exclude(image_digest="").values_list(
        "image_digest", "team__name"
    ):
        teams_by_digest[digest].add(name)
    listed = list(page.object_list)
    similar = similar_answers(challenge, listed)
    rows = [
        SubmissionRow(
            s,
            run_states=sorted(Counter(r.state for r in s.runs.all()).items()),
            same_image_as=sorted(teams_by_digest.get(s.image_digest, set()) - {s.team.name}),
            similar_answers=similar.get(s.pk, []),
        )
        for s in listed
    ]
    context = {
        "challenge": challenge,
        "page": page,
        "rows": rows,
        "states": Submission.State.choices,
        "state": state,
        "team": team,
        "shared_images": sum(1 for names in teams_by_digest.values() if len(names) > 1),
        "similar_pairs": AnswerSimilarity.objects.filter(split__task__challenge=challenge).count(),
        "total": everything.count(),
        **_figures(challenge, everything),
    }
    return render(request, "leaderboard/challenge_submissions.html", context)


def similar_answers(challenge: Challenge, submissions: list[Submission]) -> dict[int, list[str]]:
    """Per submission, its runs' near-identical answers to another team's (``duplicates``),
    one line each: the other team and submission, the split, the share of items alike."""
    shown = [submission.pk for submission in submissions]
    pairs = AnswerSimilarity.objects.filter(
        Q(run_a__submission__in=shown) | Q(run_b__submission__in=shown),
        split__task__challenge=challenge,
    ).select_related("split__task", "run_a__submission__team", "run_b__submission__team")
    lines: dict[int, list[str]] = defaultdict(list)
    for pair in pairs:
        for mine, theirs in ((pair.run_a, pair.run_b), (pair.run_b, pair.run_a)):
            setting = f" [{mine.setting}]" if mine.setting else ""
            lines[mine.submission_id].append(
                f"{theirs.submission.team.name} (#{theirs.submission_id}) on "
                f"{pair.split.task.task_id} {pair.split.kind}{setting}: "
                f"{pair.share:.0%} of {pair.items} answers alike"
            )
    return lines


def _figures(challenge: Challenge, submissions: QuerySet[Submission]) -> dict[str, object]:
    """Host analytics: what organisers watch while a challenge runs."""
    per_day = (
        submissions.annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(n=Count("pk"))
        .order_by("-day")[:30]
    )
    failures = (
        submissions.exclude(failure_reason="")
        .values("failure_reason")
        .annotate(n=Count("pk"))
        .order_by("-n")[:10]
    )
    took = ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())
    hours = (
        EvaluationRun.objects.filter(submission__challenge=challenge, finished_at__isnull=False)
        .exclude(started_at=None)
        .values("submission__team__name")
        .annotate(time=Sum(took), runs=Count("pk"))
        .order_by("-time")[:50]
    )
    return {
        "per_day": list(per_day),
        "teams_count": submissions.values("team").distinct().count(),
        "failures": [(row["failure_reason"][:200], row["n"]) for row in failures],
        "run_hours": [
            (row["submission__team__name"], row["runs"], row["time"].total_seconds() / 3600)
            for row in hours
        ],
    }
