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

from leaderboard import duplicates, permissions
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
    similar_answers: list[tuple[int, str, int]]  # its flagged pairs: (pair, team, submission)


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
    flagged, similar = similar_answers(challenge, listed)
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
        "flagged": flagged,
        "flag_rule": {
            "share": round(duplicates.FLAG_SHARE * 100),
            "min_items": duplicates.MIN_ITEMS,
            "near": round(duplicates.NEAR_RATIO),
        },
        "total": everything.count(),
        **_figures(challenge, everything),
    }
    return render(request, "leaderboard/challenge_submissions.html", context)


@dataclass(frozen=True)
class FlaggedPair:
    """Two teams' runs with near-identical answers (``duplicates``), as the page lists them."""

    pair: AnswerSimilarity

    @property
    def where(self) -> str:
        setting = f" [{self.pair.run_a.setting}]" if self.pair.run_a.setting else ""
        return f"{self.pair.split.task.task_id} {self.pair.split.kind}{setting}"

    @property
    def percent(self) -> str:
        return f"{self.pair.share:.0%}"


def similar_answers(
    challenge: Challenge, submissions: list[Submission]
) -> tuple[list[FlaggedPair], dict[int, list[tuple[int, str, int]]]]:
    """The flagged pairs of the submissions listed (``duplicates``), and per submission the
    other side of each of its pairs: (pair id, team, submission id)."""
    shown = [submission.pk for submission in submissions]
    pairs = (
        AnswerSimilarity.objects.filter(
            Q(run_a__submission__in=shown) | Q(run_b__submission__in=shown),
            split__task__challenge=challenge,
        )
        .select_related("split__task", "run_a__submission__team", "run_b__submission__team")
        .order_by("-share", "pk")
    )
    others: dict[int, list[tuple[int, str, int]]] = defaultdict(list)
    for pair in pairs:
        for mine, theirs in ((pair.run_a, pair.run_b), (pair.run_b, pair.run_a)):
            others[mine.submission_id].append(
                (pair.pk, theirs.submission.team.name, theirs.submission_id)
            )
    return [FlaggedPair(pair) for pair in pairs], others


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
