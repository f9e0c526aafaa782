"""Participants' own pages: their account (API token), their teams, a team's page, invitations.

Everything here needs a signed-in user; a team's members, entries and invitations are shown to
its members only (others see its name and captain), and only its captain invites or passes the
captaincy on (``leaderboard.teams``).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from leaderboard import audits, teams
from leaderboard.models import Invitation, Membership, Team
from leaderboard.permissions import signed_in
from leaderboard.teams import TeamError


@login_required
def account(request: HttpRequest) -> HttpResponse:
    """The user's account: e-mail addresses (managed by allauth), teams, API token."""
    user = signed_in(request.user)
    new_token = None
    if request.method == "POST":
        Token.objects.filter(user=user).delete()
        if request.POST.get("token") == "create":
            new_token = Token.objects.create(user=user).key
            messages.success(request, "A new API token: copy it now, it is shown once.")
        else:
            messages.success(request, "Your API token is revoked.")
    context = {
        "memberships": Membership.objects.filter(user=user).select_related("team"),
        "has_token": Token.objects.filter(user=user).exists(),
        "new_token": new_token,
        "audits": audits.to_label(user),
    }
    return render(request, "leaderboard/account.html", context)


@login_required
def team_list(request: HttpRequest) -> HttpResponse:
    user = signed_in(request.user)
    if request.method == "POST":
        try:
            team = teams.create_team(user, request.POST.get("name", ""))
        except TeamError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"{team.name} is created; you are its captain.")
            return redirect("leaderboard:team", team_id=team.pk)
    memberships = Membership.objects.filter(user=user).select_related("team")
    return render(request, "leaderboard/teams.html", {"memberships": memberships})


@login_required
def team_page(request: HttpRequest, team_id: int) -> HttpResponse:
    team = get_object_or_404(Team, pk=team_id)
    member = team.memberships.filter(user=signed_in(request.user)).first()
    context = {
        "team": team,
        "member": member,
        "captain": member is not None and member.role == Membership.Role.OWNER,
        "memberships": team.memberships.select_related("user").order_by("joined_at"),
        "submissions": (
            team.submissions.select_related("challenge").order_by("-created_at")[:100]
            if member
            else []
        ),
        "invitations": team.invitations.filter(accepted_at__isnull=True) if member else [],
    }
    return render(request, "leaderboard/team.html", context)


@login_required
@require_POST
def team_action(request: HttpRequest, team_id: int, action: str) -> HttpResponse:
    team = get_object_or_404(Team, pk=team_id)
    user = signed_in(request.user)
    try:
        if action == "invite":
            link = lambda token: request.build_absolute_uri(  # noqa: E731
                reverse("leaderboard:invitation", args=[token])
            )
            invitation = teams.invite(team, user, request.POST.get("email", ""), link)
            messages.success(request, f"An invitation was mailed to {invitation.email}.")
        elif action == "leave":
            teams.leave(team, user)
            messages.success(request, f"You left {team.name}.")
            return redirect("leaderboard:teams")
        elif action == "captain":
            user_id = request.POST.get("user", "")
            if not user_id.isdigit():
                raise TeamError("choose the member to make captain")
            to = get_object_or_404(get_user_model(), pk=int(user_id))
            teams.pass_captaincy(team, user, to)
            messages.success(request, f"{to.get_username()} is now the captain.")
        else:
            raise Http404(f"no team action {action!r}")
    except TeamError as exc:
        messages.error(request, str(exc))
    return redirect("leaderboard:team", team_id=team.pk)


@login_required
def invitation(request: HttpRequest, token: str) -> HttpResponse:
    found = get_object_or_404(Invitation.objects.select_related("team"), token=token)
    if request.method == "POST":
        try:
            teams.accept(found, signed_in(request.user))
        except TeamError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"You joined {found.team.name}.")
            return redirect("leaderboard:team", team_id=found.team_id)
    return render(request, "leaderboard/invitation.html", {"invitation": found})
