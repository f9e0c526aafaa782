"""Participants' own pages: their account (e-mail choices, API tokens), their teams, a team's
page, invitations.

Everything here needs a signed-in user; a team's members, entries and invitations are shown to
its members only (others see its name and captain), and only its captain invites, revokes an
invitation, removes a member or passes the captaincy on (``leaderboard.teams``).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_POST

from leaderboard import api_tokens, audits, mailing, teams
from leaderboard.models import Invitation, Membership, Team
from leaderboard.models.api_token import NAME_MAX_LENGTH
from leaderboard.permissions import signed_in
from leaderboard.teams import TeamError

# The session key holding a token just made until the page after the POST shows it (once).
NEW_TOKEN_KEY = "podium-new-token"


@login_required
def account(request: HttpRequest) -> HttpResponse:
    """The user's account: e-mail addresses (managed by allauth), what Podium may e-mail them
    (``leaderboard.mailing``), teams, API tokens. Every
    token action redirects (a reload repeats nothing); a new key waits in the session for the
    page after the redirect, which shows it once."""
    user = signed_in(request.user)
    if request.method == "POST" and request.POST.get("mail") == "save":
        mailing.choose(user, **{field: field in request.POST for field in mailing.SWITCH_FIELDS})
        messages.success(request, "Your e-mail choices are saved.")
        return redirect("leaderboard:account")
    if request.method == "POST":
        action = request.POST.get("token", "")
        if action == "create":
            try:
                token, key = api_tokens.create(user, request.POST.get("name", ""))
            except api_tokens.TokenError as exc:
                messages.error(request, f"No token made: {exc}.")
            else:
                request.session[NEW_TOKEN_KEY] = key
                messages.success(request, f"A new API token, {token.name}: copy it now.")
        elif action == "revoke-all":
            count = api_tokens.revoke(user)
            messages.success(request, f"{count} API token{pluralize(count)} revoked.")
        elif action == "revoke":
            if api_tokens.revoke(user, request.POST.get("digest", "")):
                messages.success(request, "The API token is revoked.")
            else:
                messages.error(request, "No such token of yours: was it revoked already?")
        else:
            messages.error(request, f"Unknown token action {action[:40]!r}.")
        return redirect("leaderboard:account")
    new_token = request.session.pop(NEW_TOKEN_KEY, None)
    context = {
        "memberships": Membership.objects.filter(user=user).select_related("team"),
        "tokens": api_tokens.live(user),
        "new_token": new_token,
        "name_max_length": NAME_MAX_LENGTH,
        "ttl_days": settings.PODIUM_API_TOKEN_TTL_DAYS,
        "audits": audits.to_label(user),
        "mail": mailing.switches(user),
    }
    response = render(request, "leaderboard/account.html", context)
    if new_token:
        add_never_cache_headers(response)  # not kept by the browser's cache either
    return response


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
        elif action == "remove":
            removed = teams.remove_member(team, user, request.POST.get("user", ""))
            messages.success(request, f"{removed.get_username()} is no longer in {team.name}.")
        elif action == "revoke":
            revoked = teams.revoke_invitation(team, user, request.POST.get("invitation", ""))
            messages.success(request, f"The invitation to {revoked.email} is revoked.")
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
