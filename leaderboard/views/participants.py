"""Who takes part in a challenge (``leaderboard.participation``): the organisers' page (teams and
their members, registrations to approve or refuse, bans with their reasons) and the
participants' registration page. Who is asking is decided before the form is read."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from leaderboard import participation, permissions
from leaderboard.models import Ban, Challenge, Registration, Team
from leaderboard.participation import ParticipationError


def _organised(request: HttpRequest, slug: str) -> Challenge:
    challenge = get_object_or_404(Challenge, slug=slug)
    if not permissions.is_organiser(request.user, challenge):
        raise PermissionDenied(f"only the organisers of {challenge.name} see who takes part")
    return challenge


@login_required
def participants_page(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = _organised(request, slug)
    taking_part = participation.teams_of(challenge)
    context = {
        "challenge": challenge,
        "taking_part": taking_part,
        "pending": [t for t in taking_part if t.registration and t.registration.state == "pending"],
        "user_bans": Ban.objects.filter(challenge=challenge, user__isnull=False).select_related(
            "user", "by"
        ),
    }
    return render(request, "leaderboard/participants.html", context)


def _picked(request: HttpRequest, field: str) -> int:
    value = request.POST.get(field, "")
    if not value.isdigit():
        raise ParticipationError(f"choose the {field}")
    return int(value)


@login_required
@require_POST
def participants_action(request: HttpRequest, slug: str, action: str) -> HttpResponse:
    challenge = _organised(request, slug)  # before anything posted is read
    by = permissions.signed_in(request.user)
    reason = request.POST.get("reason", "")
    try:
        if action == "approval":
            challenge.registration_approval = request.POST.get("on") == "1"
            challenge.save(update_fields=["registration_approval"])
            said = "asks for" if challenge.registration_approval else "no longer asks for"
            messages.success(request, f"{challenge.name} {said} approved registrations.")
        elif action in ("approve", "refuse"):
            registration = get_object_or_404(
                Registration.objects.select_related("team", "challenge"),
                pk=_picked(request, "registration"),
                challenge=challenge,
            )
            participation.decide(registration, by, action == "approve", reason)
            messages.success(request, f"{registration.team.name}: {registration.state}.")
        elif action == "ban":
            team, user = _ban_target(request)
            found = participation.ban(challenge, by, reason, team=team, user=user)
            messages.success(request, f"{found.team or found.user} is banned.")
        elif action == "lift":
            found = get_object_or_404(Ban, pk=_picked(request, "ban"), challenge=challenge)
            participation.lift(found, by)
            messages.success(request, f"The ban of {found.team or found.user} is lifted.")
        else:
            raise Http404(f"no participants action {action!r}")
    except ParticipationError as exc:
        messages.error(request, str(exc))
    return redirect("leaderboard:participants", slug=challenge.slug)


def _ban_target(request: HttpRequest) -> tuple[Team | None, User | None]:
    """The team (``team``: its id) or the participant (``username``) to ban."""
    if request.POST.get("team"):
        return get_object_or_404(Team, pk=_picked(request, "team")), None
    username = request.POST.get("username", "").strip()
    if not username:
        raise ParticipationError("name the participant or choose the team to ban")
    found = get_user_model().objects.filter(username__iexact=username).first()
    if found is None:
        raise ParticipationError(f"no participant is called {username!r}")
    return None, found


@login_required
def register_page(request: HttpRequest, slug: str) -> HttpResponse:
    """The user's teams and whether each may take part; a member registers one."""
    challenge = get_object_or_404(permissions.visible_challenges(request.user), slug=slug)
    user = permissions.signed_in(request.user)
    mine = permissions.user_teams(user).order_by("name")
    if request.method == "POST":
        picked = request.POST.get("team", "")
        team = mine.filter(pk=int(picked)).first() if picked.isdigit() else None
        try:
            if team is None:
                raise ParticipationError("choose one of your teams")
            participation.register(team, challenge, user)
        except ParticipationError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"{team.name} is registered; the organisers decide.")
        return redirect("leaderboard:register", slug=challenge.slug)
    rows = [(team, participation.refusal(team, challenge)) for team in mine]
    registrations = {
        r.team_id: r for r in Registration.objects.filter(challenge=challenge, team__in=mine)
    }
    context = {
        "challenge": challenge,
        "rows": [(team, why, registrations.get(team.pk)) for team, why in rows],
    }
    return render(request, "leaderboard/register.html", context)
