"""Who may take part in a challenge: registrations its organisers approve, and bans.

- Where the challenge asks for it (``Challenge.registration_approval``), a team submits only
  once an organiser approved its registration: a member asks (``register``), an organiser
  approves or refuses it with a reason the team reads (``decide``). A refused team may ask
  again. Off, every team may submit and registrations are not needed.
- An organiser bans a team, or one participant (in whichever team), with a reason
  (``ban``); a banned team, or a team with a banned member, cannot submit and is told why
  (``refusal``). Lifting the ban (``lift``) lets it submit again. Its runs already made stay.
- Organisers of the challenge (``permissions.is_organiser``) are never refused: they submit
  baselines and re-runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from leaderboard import permissions
from leaderboard.models import Ban, Challenge, Membership, Registration, Submission, Team

State = Registration.State


class ParticipationError(Exception):
    """What was asked cannot be done; the message says why."""


def _organiser(challenge: Challenge, by: User) -> None:
    if not permissions.is_organiser(by, challenge):
        raise ParticipationError(f"only organisers of {challenge.name} decide who takes part")


def _reason(reason: str, what: str) -> str:
    reason = reason.strip()
    if not reason:
        raise ParticipationError(f"say why {what}: the team reads the reason")
    return reason


def register(team: Team, challenge: Challenge, by: User) -> Registration:
    """A member of ``team`` asks to take part; a refused registration is asked again."""
    if not Membership.objects.filter(team=team, user=by).exists():
        raise ParticipationError(f"you are not a member of team {team.name}")
    if not challenge.registration_approval:
        raise ParticipationError(f"{challenge.name} needs no registration: every team submits")
    with transaction.atomic():
        found, created = Registration.objects.select_for_update().get_or_create(
            challenge=challenge, team=team, defaults={"requested_by": by}
        )
        if created:
            return found
        if found.state != State.REFUSED:
            raise ParticipationError(f"{team.name} is already {found.get_state_display()}")
        Registration.objects.filter(pk=found.pk).update(
            state=State.PENDING, requested_by=by, reason="", decided_by=None, decided_at=None
        )
    found.refresh_from_db()
    return found


def decide(registration: Registration, by: User, approve: bool, reason: str = "") -> None:
    """An organiser approves ``registration`` or refuses it (a reason required)."""
    _organiser(registration.challenge, by)
    why = reason.strip() if approve else _reason(reason, "it is refused")
    registration.state = State.APPROVED if approve else State.REFUSED
    registration.reason = why
    registration.decided_by = by
    registration.decided_at = timezone.now()
    registration.save(update_fields=["state", "reason", "decided_by", "decided_at"])


def ban(
    challenge: Challenge,
    by: User,
    reason: str,
    *,
    team: Team | None = None,
    user: User | None = None,
) -> Ban:
    """An organiser bans a team or a participant from ``challenge``."""
    _organiser(challenge, by)
    why = _reason(reason, "it is banned")
    if (team is None) == (user is None):
        raise ParticipationError("ban either a team or a participant")
    who = team.name if team is not None else user.get_username() if user is not None else ""
    try:
        with transaction.atomic():
            return Ban.objects.create(challenge=challenge, team=team, user=user, reason=why, by=by)
    except IntegrityError:
        raise ParticipationError(f"{who} is already banned from {challenge.name}") from None


def lift(found: Ban, by: User) -> None:
    _organiser(found.challenge, by)
    found.delete()


def refusal(team: Team, challenge: Challenge) -> str | None:
    """Why ``team`` may not submit to ``challenge`` now (a ban, its registration); None: it may."""
    members = Membership.objects.filter(team=team).values("user")
    bans = Ban.objects.filter(Q(team=team) | Q(user__in=members), challenge=challenge)
    found = bans.select_related("team", "user").first()
    if found is not None:
        who = f"team {team.name} is" if found.team_id else f"{found.user} (of {team.name}) is"
        return f"{who} banned from {challenge.name}: {found.reason}"
    if not challenge.registration_approval:
        return None
    registration = Registration.objects.filter(challenge=challenge, team=team).first()
    where = f"/c/{challenge.slug}/register/"
    if registration is None:
        return f"{challenge.name} asks teams to register first: register {team.name} at {where}"
    if registration.state == State.PENDING:
        return f"the registration of {team.name} waits for the organisers of {challenge.name}"
    if registration.state == State.REFUSED:
        return f"the organisers of {challenge.name} refused {team.name}: {registration.reason}"
    return None


@dataclass(frozen=True)
class TakingPart:
    """A team of the challenge as its organisers see it: its members, registration, ban."""

    team: Team
    members: list[Membership]
    registration: Registration | None
    ban: Ban | None
    submissions: int


def teams_of(challenge: Challenge) -> list[TakingPart]:
    """Every team that registered for, submitted to or is banned from ``challenge`` (baselines'
    team apart): a team banned before it took part is listed too, so the ban can be lifted."""
    entered = Submission.objects.filter(challenge=challenge).values("team")
    registered = Registration.objects.filter(challenge=challenge).values("team")
    banned = Ban.objects.filter(challenge=challenge, team__isnull=False).values("team")
    teams = (
        Team.objects.filter(
            Q(pk__in=entered) | Q(pk__in=registered) | Q(pk__in=banned), baselines_of=None
        )
        .prefetch_related("memberships__user")
        .order_by("name")
    )
    registrations = {r.team_id: r for r in Registration.objects.filter(challenge=challenge)}
    bans = {b.team_id: b for b in Ban.objects.filter(challenge=challenge, team__isnull=False)}
    counts: dict[int, int] = {}
    for team_id in Submission.objects.filter(challenge=challenge).values_list("team", flat=True):
        counts[team_id] = counts.get(team_id, 0) + 1
    return [
        TakingPart(
            team,
            sorted(team.memberships.all(), key=lambda m: m.user.get_username()),
            registrations.get(team.pk),
            bans.get(team.pk),
            counts.get(team.pk, 0),
        )
        for team in teams
    ]
