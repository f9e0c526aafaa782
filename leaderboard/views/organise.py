"""Organisers' pages of a challenge: everyone's submissions, with their state, runs and the
images two teams share (a duplicate entry, or one team's agent re-submitted by another)."""

from __future__ import annotations

from collections import Counter, defaultdict

from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from leaderboard import permissions
from leaderboard.models import Challenge, EvaluationRun, Submission

PER_PAGE = 100


def challenge_submissions(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = get_object_or_404(Challenge, slug=slug)
    if not permissions.is_organiser(request.user, challenge):
        raise PermissionDenied(f"only the organisers of {challenge.name} see every submission")
    everything = Submission.objects.filter(challenge=challenge)
    shown = everything.select_related("team", "submitted_by").prefetch_related(
        Prefetch("runs", EvaluationRun.objects.only("pk", "state", "submission_id"))
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
    for submission in page.object_list:
        others = teams_by_digest.get(submission.image_digest, set()) - {submission.team.name}
        submission.same_image_as = sorted(others)
        submission.run_states = sorted(Counter(r.state for r in submission.runs.all()).items())
    context = {
        "challenge": challenge,
        "page": page,
        "states": Submission.State.choices,
        "state": state,
        "team": team,
        "shared_images": sum(1 for names in teams_by_digest.values() if len(names) > 1),
        "total": everything.count(),
    }
    return render(request, "leaderboard/challenge_submissions.html", context)
