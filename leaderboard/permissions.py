"""Who may see what. Every page and API endpoint asks these functions, nothing else.

- Organisers (staff, or listed on the challenge) see everything of their challenge.
- Anyone, signed in or not, sees a split's leaderboard once its results are revealed
  (``Split.is_revealed``): public splits at once, a private test from its reveal time.
- A team member sees the team's own submissions and runs, with progress and failure reasons,
  and per-item answers only for runs on validation and public-test splits.
- On a public test under the Ladder, and for submissions made during a freeze of its board
  (``leaderboard.public_board``), nobody but organisers reads a run's own scores, answers or
  verdicts: teams read what the board published (``public_board.published``).
- Nobody is ever served a split file: no URL maps to a split bundle.
- A judge audit's items (questions, gold answers, answers) are labelled by the challenge's
  organisers and the people they invite; the judge's verdicts and the audit's results are the
  organisers' only.
- Labelling a challenge's audits and taking part in it exclude each other for the challenge's
  lifetime: nobody who takes part is made a labeller (``why_not_label``), and nobody ever made
  a labeller takes part, nor does a team they are in (``labelling_clash``, which every way into
  a challenge asks: submitting, a team's invitation and its acceptance, accepting the rules).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.contrib.auth import models as auth
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet

from leaderboard import public_board
from leaderboard.models import (
    Challenge,
    ChallengeLabeller,
    EvaluationRun,
    JudgeAudit,
    Membership,
    Split,
    Submission,
    Team,
    TermsAcceptance,
)

User = auth.User | AnonymousUser  # anyone: signed in or not


_Rows = QuerySet[Membership] | QuerySet[Submission] | QuerySet[TermsAcceptance]


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


def can_see_raw_board(user: User, split: Split) -> bool:
    """A public test's board ranked without its public board's rules (a freeze, the Ladder:
    ``leaderboard.public_board``), raw scores and all: organisers only."""
    return is_organiser(user, split.task.challenge)


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


def can_cancel_run(user: User, run: EvaluationRun) -> bool:
    """A team's members cancel its unfinished runs (organisers: ``leaderboard.run_actions``),
    but for the repeats organisers asked for (``leaderboard.repeats``): only they cancel those."""
    return run.trial == 0 and user_teams(user).filter(pk=run.submission.team_id).exists()


def can_see_answers(user: User, run: EvaluationRun) -> bool:
    """Per-item answers and verdicts: organisers always; the team only off the private test,
    and on a public test only where its public board shows the run's own scores
    (``public_board.withholds``: the Ladder, or a submission made during a freeze)."""
    if is_organiser(user, run.submission.challenge):
        return True
    if run.split.is_private or public_board.withholds(run):
        return False
    return user_teams(user).filter(pk=run.submission.team_id).exists()


def can_see_score(user: User, run: EvaluationRun) -> bool:
    """A run's own scores, for whoever may see the run (``visible_runs``): off the private test
    at once, unless its public board withholds them (``public_board.withholds``: the team
    reads ``public_board.published`` instead); on the private test only once the split's
    results are public. Organisers always."""
    if run.split.is_private:
        return can_see_results(user, run.split)
    return not public_board.withholds(run) or is_organiser(user, run.submission.challenge)


def score_visibility(user: User) -> Callable[[EvaluationRun], bool]:
    """``can_see_score`` for the many runs of a page or an API answer: each split asked once
    (each run where its public board's rules apply: they depend on when it was submitted)."""
    seen: dict[int, bool] = {}
    rules: dict[int, public_board.Rules] = {}
    organises: dict[int, bool] = {}

    def shown(run: EvaluationRun) -> bool:
        if run.split_id not in rules:
            rules[run.split_id] = public_board.rules(run.split)
        public = rules[run.split_id]
        if public != public_board.Rules():  # it depends on the run's submission: asked each
            if run.split_id not in organises:
                organises[run.split_id] = is_organiser(user, run.split.task.challenge)
            return organises[run.split_id] or not public_board.withholds(run, public=public)
        if run.split_id not in seen:
            seen[run.split_id] = can_see_score(user, run)
        return seen[run.split_id]

    return shown


def can_see_operator_detail(user: User, run: EvaluationRun) -> bool:
    return is_organiser(user, run.submission.challenge)


@dataclass(frozen=True)
class Participant:
    """Someone who takes part in a challenge, and why that is so, in words after their name."""

    user_id: int
    username: str
    why: str


def participants(challenge: Challenge, among: Iterable[int] | None = None) -> list[Participant]:
    """Who takes part in ``challenge`` (of the user ids ``among``; everyone when None), its
    organisers apart, by name: members of a team that submitted to it, whoever submitted to it
    (for a team they may have left since), whoever accepted its rules. None of them labels its
    judge audits (``why_not_label``). An open invitation to a team is not taking part: anyone
    can be mailed one, and accepting it is refused to a labeller (``labelling_clash``)."""
    name = challenge.name
    organisers = challenge.organisers.values("pk")
    members = Membership.objects.filter(team__submissions__challenge=challenge)
    submitters = Submission.objects.filter(challenge=challenge, submitted_by__isnull=False)
    accepted = TermsAcceptance.objects.filter(challenge=challenge)
    if among is not None:
        among = list(among)
        members = members.filter(user__in=among)
        submitters = submitters.filter(submitted_by__in=among)
        accepted = accepted.filter(user__in=among)
    found: dict[int, Participant] = {}
    ways: tuple[tuple[_Rows, str, Callable[[str], str]], ...] = (
        (members, "user", lambda team: f"is in team {team}, which takes part in {name}"),
        (submitters, "submitted_by", lambda team: f"submitted to {name} for team {team}"),
        (accepted, "user", lambda _: f"accepted the rules of {name}"),
    )
    for rows, person, why in ways:
        rows = rows.exclude(**{f"{person}__in": organisers})
        rows = rows.exclude(**{f"{person}__is_staff": True})
        team = f"{person}__username" if rows.model is TermsAcceptance else "team__name"
        named = rows.values_list(f"{person}_id", f"{person}__username", team).order_by(team)
        for user_id, username, of in named.distinct():
            found.setdefault(user_id, Participant(user_id, username, why(of)))
    return sorted(found.values(), key=lambda p: p.username)


def why_not_label(user: auth.User, challenge: Challenge) -> str:
    """Why ``user`` may not label ``challenge``'s judge audits (they take part in it); "" when
    they may. Inviting a labeller and every labelling page ask it."""
    if is_organiser(user, challenge):
        return ""
    found = participants(challenge, [user.pk])
    if not found:
        return ""
    return (
        f"{found[0].username} {found[0].why}: a labeller reads its private split's questions "
        "and gold answers, so nobody taking part labels"
    )


def labelling_clash(
    user_ids: Iterable[int], challenges: Iterable[Challenge], you: auth.User | None = None
) -> str:
    """Why the people ``user_ids`` (a team's members, or one person) may not take part in
    ``challenges`` (one challenge, or those a team entered): the first of them ever made a
    labeller of one of its judge audits, named ("you" for ``you``); "" when none was. A
    labeller is who ``ChallengeLabeller`` records, or any audit of the challenge lists (should
    something have listed one without the record). Every way into a challenge asks it."""
    user_ids, challenges = list(user_ids), list(challenges)
    record = (
        ChallengeLabeller.objects.filter(user__in=user_ids, challenge__in=challenges)
        .select_related("user", "challenge")
        .order_by("invited_at")
        .first()
    )
    if record is not None:
        labeller, challenge = record.user, record.challenge
    else:
        listed = (
            JudgeAudit.labellers.through.objects.filter(
                user__in=user_ids, judgeaudit__split__task__challenge__in=challenges
            )
            .select_related("user", "judgeaudit__split__task__challenge")
            .first()
        )
        if listed is None:
            return ""
        labeller, challenge = listed.user, listed.judgeaudit.split.task.challenge
    mine = you is not None and labeller.pk == you.pk
    who = "you label" if mine else f"{labeller.get_username()} labels"
    return (
        f"{who} the judge audits of {challenge.name}, reading its private split's questions "
        "and gold answers: a labeller takes no part in it, nor does a team a labeller is in"
    )


def hold(user_ids: Iterable[int]) -> None:
    """Lock these people's rows until the transaction ends. Making a labeller and every way
    into a challenge hold the people concerned before their check, so the two never pass each
    other's check at once."""
    rows = auth.User.objects.select_for_update().filter(pk__in=list(user_ids)).order_by("pk")
    list(rows.values_list("pk", flat=True))


def can_label(user: User, audit: JudgeAudit) -> bool:
    """A judge audit's labelling page: the challenge's organisers, and labellers they invited
    who take no part in it (the items show the split's questions and gold answers)."""
    challenge = audit.split.task.challenge
    if is_organiser(user, challenge):
        return True
    if isinstance(user, AnonymousUser) or not audit.labellers.filter(pk=user.pk).exists():
        return False
    return not why_not_label(user, challenge)
