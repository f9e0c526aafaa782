"""A team's captain removes a member and revokes an open invitation; nobody else does."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from leaderboard.models import Invitation, Membership


@pytest.fixture
def crew(make_user, teams):
    alpha = teams["alpha"]
    cap = make_user("cap")
    Membership.objects.create(team=alpha, user=cap, role=Membership.Role.OWNER)
    return {
        "team": alpha,
        "cap": cap,
        "joe": make_user("joe", team=alpha),
        "ann": make_user("ann", team=alpha),
        "eve": make_user("eve", team=teams["beta"]),
    }


def as_user(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def act(client: Client, team, action: str, data: dict) -> str:
    url = reverse("leaderboard:team-action", args=[team.pk, action])
    return client.post(url, data, follow=True).content.decode()


def members(team) -> set[str]:
    return set(team.memberships.values_list("user__username", flat=True))


def test_the_captain_removes_a_member(crew):
    team = crew["team"]
    page = as_user(crew["cap"]).get(reverse("leaderboard:team", args=[team.pk])).content.decode()
    assert 'aria-label="Remove joe from the team"' in page
    assert 'aria-label="Remove cap from the team"' not in page  # not oneself
    answer = act(as_user(crew["cap"]), team, "remove", {"user": crew["joe"].pk})
    assert "joe is no longer in alpha." in answer
    assert members(team) == {"cap", "ann"}


def test_only_the_captain_removes_and_never_themselves(crew):
    team = crew["team"]
    page = as_user(crew["joe"]).get(reverse("leaderboard:team", args=[team.pk])).content.decode()
    assert "Remove" not in page
    answer = act(as_user(crew["joe"]), team, "remove", {"user": crew["ann"].pk})
    assert "only the team&#x27;s captain removes a member" in answer
    # who asks is decided before the form is read: a malformed one gets the same answer
    answer = act(as_user(crew["joe"]), team, "remove", {"user": "ann"})
    assert "only the team&#x27;s captain removes a member" in answer
    answer = act(as_user(crew["eve"]), team, "remove", {"user": crew["ann"].pk})
    assert "only the team&#x27;s captain removes a member" in answer
    answer = act(as_user(crew["cap"]), team, "remove", {"user": crew["cap"].pk})
    assert "the captain leaves instead: pass the captaincy on first" in answer
    answer = act(as_user(crew["cap"]), team, "remove", {"user": crew["eve"].pk})
    assert "no such member of alpha" in answer
    assert "choose the member" in act(as_user(crew["cap"]), team, "remove", {"user": "joe"})
    assert members(team) == {"cap", "joe", "ann"}


def test_the_captain_revokes_an_open_invitation_and_its_link_stops_working(crew, make_user):
    team = crew["team"]
    act(as_user(crew["cap"]), team, "invite", {"email": "zoe@example.org"})
    invitation = Invitation.objects.get(team=team)
    page = as_user(crew["cap"]).get(reverse("leaderboard:team", args=[team.pk])).content.decode()
    assert 'aria-label="Revoke the invitation to zoe@example.org"' in page
    member_page = as_user(crew["joe"]).get(reverse("leaderboard:team", args=[team.pk]))
    assert b"Revoke" not in member_page.content  # members see it, only the captain revokes

    for someone in ("joe", "eve"):
        answer = act(as_user(crew[someone]), team, "revoke", {"invitation": invitation.pk})
        assert "only the team&#x27;s captain revokes an invitation" in answer
    answer = act(as_user(crew["cap"]), team, "revoke", {"invitation": invitation.pk})
    assert "The invitation to zoe@example.org is revoked." in answer
    assert not Invitation.objects.exists()
    zoe = as_user(make_user("zoe"))
    assert zoe.get(reverse("leaderboard:invitation", args=[invitation.token])).status_code == 404
    answer = act(as_user(crew["cap"]), team, "revoke", {"invitation": invitation.pk})
    assert "no such open invitation: was it accepted or revoked already?" in answer


def test_an_accepted_invitation_is_not_revoked(crew, make_user):
    team = crew["team"]
    act(as_user(crew["cap"]), team, "invite", {"email": "zoe@example.org"})
    invitation = Invitation.objects.get(team=team)
    invitation.accept(make_user("zoe"))
    answer = act(as_user(crew["cap"]), team, "revoke", {"invitation": invitation.pk})
    assert "no such open invitation" in answer
    assert members(team) == {"cap", "joe", "ann", "zoe"}
