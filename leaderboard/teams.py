"""Teams run by their members: create one, invite by e-mail, accept, leave, pass the captaincy.

- The creator is the team's captain (``Membership.Role.OWNER``); only the captain invites,
  revokes an open invitation, removes a member and passes the captaincy on. A captain leaves
  once someone else is captain, or as the last member.
- An invitation is a link mailed to an address; it is accepted once, before it expires, by a
  signed-in user who has verified that address (so a forwarded link is no use to anyone else).
- One team per challenge: a participant may not be in two teams that both take part in the same
  challenge. Accepting an invitation that would break this is refused, and so is a submission.
- A team belongs to no challenge: it takes part in those it submitted to. Nobody who labels the
  judge audits of one of them joins it (``permissions.labelling_clash``): the invitation is
  refused when the address is a labeller's, and accepting it always is.
"""

from __future__ import annotations

from collections.abc import Callable

from allauth.account.models import EmailAddress
from django.contrib.auth.models import User
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from leaderboard import permissions
from leaderboard.models import Challenge, Invitation, Membership, Submission, Team

Role = Membership.Role
MAX_OPEN_INVITATIONS = 20  # per team: a captain cannot mail strangers without end


class TeamError(Exception):
    """What the user asked cannot be done; the message says why, in their terms."""


def captain(team: Team, user: User) -> bool:
    return Membership.objects.filter(team=team, user=user, role=Role.OWNER).exists()


def create_team(user: User, name: str) -> Team:
    name = " ".join(name.split())
    if not 2 <= len(name) <= 100:
        raise TeamError("a team name has 2 to 100 characters")
    if Team.objects.filter(name__iexact=name).exists():
        raise TeamError(f"a team called {name!r} exists already: choose another name")
    try:
        with transaction.atomic():
            team = Team.objects.create(name=name)
            Membership.objects.create(team=team, user=user, role=Role.OWNER)
    except IntegrityError:
        raise TeamError(f"a team called {name!r} exists already: choose another name") from None
    return team


def invite(team: Team, by: User, email: str, link_for: Callable[[str], str]) -> Invitation:
    """Mail an invitation to ``email``; ``link_for(token)`` is the absolute URL to accept it."""
    if not captain(team, by):
        raise TeamError("only the team's captain invites")
    email = email.strip().lower()
    members = EmailAddress.objects.filter(user__memberships__team=team, email__iexact=email)
    if members.exists():
        raise TeamError(f"{email} is already in {team.name}")
    owners = EmailAddress.objects.filter(email__iexact=email, verified=True)
    entered = _challenges([team.pk])
    clash = permissions.labelling_clash(owners.values_list("user", flat=True), entered)
    if clash:
        raise TeamError(f"{email} cannot join {team.name}: {clash}")
    open_now = team.invitations.filter(accepted_at=None, expires_at__gt=timezone.now())
    if open_now.count() >= MAX_OPEN_INVITATIONS:
        raise TeamError(
            f"{team.name} has {MAX_OPEN_INVITATIONS} open invitations: wait until some are "
            "accepted or expire"
        )
    invitation = Invitation.objects.create(team=team, email=email, invited_by=by)
    send_mail(
        f"Join {team.name} on Podium",
        f"{by.get_username()} invites you to the team {team.name}.\n\n"
        f"Sign in (or sign up with this address, {email}) and open:\n{link_for(invitation.token)}"
        f"\n\nThe link works once, until {invitation.expires_at:%Y-%m-%d %H:%M} UTC.\n",
        None,
        [email],
    )
    return invitation


def accept(invitation: Invitation, user: User) -> Membership:
    if not invitation.is_usable():
        used = invitation.accepted_at is not None
        raise TeamError("this invitation was already used" if used else "this invitation expired")
    if not EmailAddress.objects.filter(
        user=user, email__iexact=invitation.email, verified=True
    ).exists():
        raise TeamError(
            f"this invitation is for {invitation.email}: sign in with the account that has "
            "verified that address (or add and verify it in your account)"
        )
    with transaction.atomic():
        # a submission of the team to a challenge, and making ``user`` a labeller, wait or
        # are waited for: each check below sees what the other did
        Team.objects.select_for_update().filter(pk=invitation.team_id).first()
        permissions.hold([user.pk])
        entered = _challenges([invitation.team_id])
        clash = _challenge_clash(invitation.team, [user.pk]) or permissions.labelling_clash(
            [user.pk], entered, you=user
        )
        if clash:
            raise TeamError(clash)
        try:
            return invitation.accept(user)
        except ValueError as exc:
            raise TeamError(str(exc)) from None


def leave(team: Team, user: User) -> None:
    membership = Membership.objects.filter(team=team, user=user).first()
    if membership is None:
        raise TeamError(f"you are not in {team.name}")
    others = Membership.objects.filter(team=team).exclude(user=user)
    if membership.role == Role.OWNER and others.exists():
        raise TeamError("pass the captaincy to another member before you leave")
    membership.delete()


def _picked(value: int | str, what: str) -> int:
    """An id from a form, read once the asker is known to be the captain."""
    if isinstance(value, str) and not value.isdigit():
        raise TeamError(f"choose {what}")
    return int(value)


def remove_member(team: Team, by: User, member: int | str) -> User:
    """The captain takes another member (``member``: a user id) out of the team; their past
    submissions stay the team's. Returns the member removed."""
    if not captain(team, by):
        raise TeamError("only the team's captain removes a member")
    user_id = _picked(member, "the member")
    if user_id == by.pk:
        raise TeamError("the captain leaves instead: pass the captaincy on first")
    membership = Membership.objects.filter(team=team, user_id=user_id).select_related("user")
    found = membership.first()
    if found is None:
        raise TeamError(f"no such member of {team.name}")
    found.delete()
    return found.user


def revoke_invitation(team: Team, by: User, invitation: int | str) -> Invitation:
    """The captain withdraws an invitation not accepted yet: its link no longer works."""
    if not captain(team, by):
        raise TeamError("only the team's captain revokes an invitation")
    invitation_id = _picked(invitation, "the invitation")
    found = team.invitations.filter(pk=invitation_id, accepted_at=None).first()
    if found is None:
        raise TeamError("no such open invitation: was it accepted or revoked already?")
    found.delete()
    return found


def pass_captaincy(team: Team, by: User, to: User) -> None:
    if not captain(team, by):
        raise TeamError("only the team's captain passes the captaincy on")
    with transaction.atomic():
        updated = Membership.objects.filter(team=team, user=to).update(role=Role.OWNER)
        if updated != 1:
            raise TeamError(f"{to.get_username()} is not in {team.name}")
        Membership.objects.filter(team=team, user=by).update(role=Role.MEMBER)


def _challenges(team_ids: QuerySet[Team] | list[int]) -> QuerySet[Challenge]:
    return Challenge.objects.filter(submissions__team__in=team_ids).distinct()


def _challenge_clash(team: Team, user_ids: list[int], challenge: Challenge | None = None) -> str:
    """Why ``user_ids`` in ``team`` would be in two teams of one challenge; "" when not:
    of ``challenge`` (which ``team`` is about to enter), else of those ``team`` is in."""
    if challenge is not None:
        entered = {challenge.pk}
    else:
        entered = set(_challenges([team.pk]).values_list("pk", flat=True))
    others = Membership.objects.filter(user__in=user_ids).exclude(team=team)
    for other in others.select_related("team", "user"):
        both = Submission.objects.filter(team=other.team, challenge__in=entered)
        shared = both.select_related("challenge").first()
        if shared is not None:
            return (
                f"{other.user.get_username()} is also in {other.team.name}, which takes part in "
                f"{shared.challenge.name}: a participant is in one team per challenge"
            )
    return ""


def check_one_team_per_challenge(team: Team, challenge: Challenge) -> None:
    """Refuse ``team`` entering ``challenge`` if a member is in another team entered there."""
    members = list(team.memberships.values_list("user_id", flat=True))
    if clash := _challenge_clash(team, members, challenge):
        raise TeamError(clash)
