"""Who may see what. Every page and API endpoint asks these functions, nothing else.

- Organisers (staff, or listed on the challenge) see everything of their challenge.
- Anyone, signed in or not, sees a split's leaderboard once its results are revealed
  (``Split.is_revealed``): public splits at once, a private test from its reveal time.
- A team member sees the team's own submissions and runs, with progress and failure reasons,
  and per-item answers only for runs on validation and public-test splits.
- Nobody is ever served a split file: no URL maps to a split bundle.
- A judge audit's items (questions, gold answers, answers) are labelled by the challenge's
  organisers and the people they invite, never by a member of a team taking part; the judge's
  verdicts and the audit's results are the organisers' only.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth import models as auth
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet

from leaderboard.models import Challenge, EvaluationRun, JudgeAudit, Split, Submission, Team

User = auth.User | AnonymousUser  # anyone: signed in or not


def signed_in(user: User) -> auth.User:
    """``user`` as the account it is, where only signed-in users get in (``login_required``,
    ``IsAuthenticated``): anyone else is refused (403)."""
    if not isinstance(user, auth.User):
        raise PermissionDenied("sign in first")
    return user


def is_organiser(user: User, challenge: Challenge) -> bool:
    if not user.is_authenticated:
        return False
    if user.is_staff:
        return True
    return challenge.organisers.filter(pk=user.pk).exists()


def organised_challenge_ids(user: User) -> set[int] | None:
    """Challenges the user organises; ``None`` means all of them (staff)."""
    if not user.is_authenticated:
        return set()
    if user.is_staff:
        return None
    return set(user.organised_challenges.values_list("pk", flat=True))


def visible_challenges(user: User) -> QuerySet[Challenge]:
    organised = organised_challenge_ids(user)
    if organised is None:
        return Challenge.objects.all()
    return Challenge.objects.filter(Q(is_published=True) | Q(pk__in=organised))


def can_see_results(user: User, split: Split) -> bool:
    """Leaderboard, slices, comparisons and exports of a split."""
    challenge = split.task.challenge
    if is_organiser(user, challenge):
        return True
    return challenge.is_published and split.is_revealed()


def user_teams(user: User) -> QuerySet[Team]:
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user)


def visible_submissions(user: User) -> QuerySet[Submission]:
    """Submissions a user may inspect: the own teams', plus all of organised challenges."""
    if not user.is_authenticated:
        return Submission.objects.none()
    organised = organised_challenge_ids(user)
    if organised is None:
        return Submission.objects.all()
    return Submission.objects.filter(
        Q(team__memberships__user=user) | Q(challenge__in=organised)
    ).distinct()


def visible_runs(user: User) -> QuerySet[EvaluationRun]:
    if not user.is_authenticated:
        return EvaluationRun.objects.none()
    organised = organised_challenge_ids(user)
    if organised is None:
        return EvaluationRun.objects.all()
    return EvaluationRun.objects.filter(
        Q(submission__team__memberships__user=user) | Q(submission__challenge__in=organised)
    ).distinct()


def can_see_answers(user: User, run: EvaluationRun) -> bool:
    """Per-item answers and verdicts: organisers always; the team only off the private test."""
    if is_organiser(user, run.submission.challenge):
        return True
    if run.split.is_private:
        return False
    return user_teams(user).filter(pk=run.submission.team_id).exists()


def can_see_score(user: User, run: EvaluationRun) -> bool:
    """A run's own scores, for whoever may see the run (``visible_runs``): off the private test
    at once; on it only once the split's results are public (organisers always)."""
    return not run.split.is_private or can_see_results(user, run.split)


def score_visibility(user: User) -> Callable[[EvaluationRun], bool]:
    """``can_see_score`` for the many runs of a page or an API answer: each split asked once."""
    seen: dict[int, bool] = {}

    def shown(run: EvaluationRun) -> bool:
        if run.split_id not in seen:
            seen[run.split_id] = can_see_score(user, run)
        return seen[run.split_id]

    return shown


def can_see_operator_detail(user: User, run: EvaluationRun) -> bool:
    return is_organiser(user, run.submission.challenge)


def takes_part(user: User, challenge: Challenge) -> bool:
    """Whether ``user`` is in a team that submitted to ``challenge``."""
    if not user.is_authenticated:
        return False
    return user_teams(user).filter(submissions__challenge=challenge).exists()


def can_label(user: User, audit: JudgeAudit) -> bool:
    """A judge audit's labelling page: the challenge's organisers, and labellers they invited
    who take no part in it (the items show the split's questions and gold answers)."""
    challenge = audit.split.task.challenge
    if is_organiser(user, challenge):
        return True
    if isinstance(user, AnonymousUser) or not audit.labellers.filter(pk=user.pk).exists():
        return False
    return not takes_part(user, challenge)
