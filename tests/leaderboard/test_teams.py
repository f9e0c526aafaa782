"""Self-service accounts and teams: sign up with a verified address, create a team, invite by
e-mail, accept once with the invited address, leave, pass the captaincy, one team per
challenge, and API tokens made and revoked in the UI."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth.models import User
from django.core import mail
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from leaderboard.models import Invitation, Membership, Submission, Team
from leaderboard.submitting import Artifact, MethodInfo, submit
from leaderboard.teams import TeamError, accept

PASSWORD = "a-long-pass-phrase-9"


def sign_up(client: Client, username: str, email: str) -> None:
    """Sign up through allauth's form and follow the link it mails."""
    mail.outbox.clear()
    response = client.post(
        reverse("account_signup"),
        {"username": username, "email": email, "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    (message,) = mail.outbox
    link = re.search(r"http://testserver(/accounts/confirm-email/\S+)", message.body)[1]
    assert client.post(link).status_code == 302
    assert EmailAddress.objects.get(email=email).verified


def test_sign_up_needs_a_verified_address_then_signs_in(client, db):
    response = client.post(
        reverse("account_signup"),
        {"username": "zoe", "email": "zoe@example.org", "password1": PASSWORD,
         "password2": PASSWORD},
    )  # fmt: skip
    assert response.status_code == 302
    assert client.get(reverse("leaderboard:my-submissions")).status_code == 302  # not yet
    link = re.search(r"http://testserver(/accounts/confirm-email/\S+)", mail.outbox[0].body)[1]
    client.post(link)
    signed_in = client.post(reverse("account_login"), {"login": "zoe", "password": PASSWORD})
    assert signed_in.status_code == 302
    assert client.get(reverse("leaderboard:my-submissions")).status_code == 200
    page = Client().get(reverse("account_signup")).content.decode()  # in Podium's layout
    assert '<a class="brand"' in page and 'name="password2"' in page


def test_a_team_is_made_joined_by_invitation_and_left(db):
    cap, joe = Client(), Client()
    sign_up(cap, "cap", "cap@example.org")
    sign_up(joe, "joe", "joe@example.org")
    response = cap.post(reverse("leaderboard:teams"), {"name": "  Deep   Seers "}, follow=True)
    team = Team.objects.get(name="Deep Seers")
    assert Membership.objects.get(team=team).role == "owner"
    assert "you are its captain" in response.content.decode()
    assert (
        "exists already"
        in cap.post(
            reverse("leaderboard:teams"), {"name": "deep seers"}, follow=True
        ).content.decode()
    )

    mail.outbox.clear()
    invite = reverse("leaderboard:team-action", args=[team.pk, "invite"])
    cap.post(invite, {"email": "Joe@Example.org"})
    (message,) = mail.outbox
    assert message.to == ["joe@example.org"] and "Deep Seers" in message.subject
    link = re.search(r"http://testserver(/invitations/\S+/)", message.body)[1]
    # a member who is not the captain cannot invite; a stranger does not see the invitations
    assert "only the team&#x27;s captain invites" in joe.post(invite, {"email": "x@example.org"},
                                                          follow=True).content.decode()  # fmt: skip
    assert (
        "joe@example.org"
        not in joe.get(reverse("leaderboard:team", args=[team.pk])).content.decode()
    )

    joined = joe.post(link, follow=True)
    assert "You joined Deep Seers" in joined.content.decode()
    assert team.members.filter(username="joe").exists()
    again = joe.post(link, follow=True).content.decode()
    assert "already used" in again

    leave = reverse("leaderboard:team-action", args=[team.pk, "leave"])
    assert "pass the captaincy" in cap.post(leave, follow=True).content.decode()
    joe_id = User.objects.get(username="joe").pk
    cap.post(reverse("leaderboard:team-action", args=[team.pk, "captain"]), {"user": joe_id})
    assert Membership.objects.get(team=team, user__username="joe").role == "owner"
    cap.post(leave)
    assert list(team.members.values_list("username", flat=True)) == ["joe"]


def test_an_invitation_is_for_its_address_and_expires(db):
    cap, eve = Client(), Client()
    sign_up(cap, "cap", "cap@example.org")
    sign_up(eve, "eve", "eve@example.org")
    cap.post(reverse("leaderboard:teams"), {"name": "Seers"})
    team = Team.objects.get(name="Seers")
    cap.post(reverse("leaderboard:team-action", args=[team.pk, "invite"]), {"email": "joe@x.org"})
    invitation = Invitation.objects.get()
    forwarded = eve.post(reverse("leaderboard:invitation", args=[invitation.token]), follow=True)
    assert "this invitation is for joe@x.org" in forwarded.content.decode()
    assert not team.members.filter(username="eve").exists()
    Invitation.objects.filter(pk=invitation.pk).update(
        email="eve@example.org", expires_at=timezone.now() - timedelta(minutes=1)
    )
    invitation.refresh_from_db()
    with pytest.raises(TeamError, match="expired"):
        accept(invitation, User.objects.get(username="eve"))
    assert (
        Client().get(reverse("leaderboard:invitation", args=[invitation.token])).status_code == 302
    )


def test_one_team_per_challenge(db, challenge, splits, make_user, teams):
    ann = make_user("ann", team=teams["alpha"])
    Membership.objects.create(team=teams["beta"], user=ann)
    Submission.objects.create(
        team=teams["alpha"], challenge=challenge, artifact_kind="registry-ref",
        registry_ref="a/b:1", method_name="m",
    )  # fmt: skip
    with pytest.raises(ValidationError, match="ann is also in alpha, which takes part in"):
        artifact = Artifact(kind="registry-ref", registry_ref="a/c:1")
        submit(teams["beta"], challenge, ann, artifact, MethodInfo(method_name="n"))
    # and an invitation that would put her in two teams of that challenge is refused
    bob = make_user("bob", team=teams["gamma"])
    Submission.objects.create(
        team=teams["gamma"], challenge=challenge, artifact_kind="registry-ref",
        registry_ref="a/d:1", method_name="g",
    )  # fmt: skip
    invitation = Invitation.objects.create(team=teams["alpha"], email="bob@example.org")
    with pytest.raises(TeamError, match="bob is also in gamma"):
        accept(invitation, bob)


@pytest.mark.parametrize("name", ["leaderboard:account", "leaderboard:teams"])
def test_account_pages_need_a_sign_in(client, db, name):
    response = client.get(reverse(name))
    assert response.status_code == 302 and response["Location"].startswith(reverse("account_login"))


def test_bad_team_requests_get_clear_answers(client, make_user, teams):
    ann = make_user("ann", team=teams["alpha"])
    Membership.objects.filter(user=ann).update(role="owner")
    client.force_login(ann)
    url = reverse("leaderboard:team-action", args=[teams["alpha"].pk, "captain"])
    assert "choose the member" in client.post(url, {"user": "x"}, follow=True).content.decode()
    stranger = make_user("bob")
    shown = client.post(url, {"user": stranger.pk}, follow=True).content.decode()
    assert "bob is not in alpha" in shown
    bogus = reverse("leaderboard:team-action", args=[teams["alpha"].pk, "explode"])
    assert client.post(bogus).status_code == 404
    assert client.get(url).status_code == 405
    assert (
        "a team name has 2 to 100"
        in client.post(reverse("leaderboard:teams"), {"name": "x"}, follow=True).content.decode()
    )


def test_a_team_has_a_bounded_number_of_open_invitations(client, make_user, teams, monkeypatch):
    from leaderboard import teams as team_logic

    monkeypatch.setattr(team_logic, "MAX_OPEN_INVITATIONS", 2)
    ann = make_user("ann", team=teams["alpha"])
    Membership.objects.filter(user=ann).update(role="owner")
    client.force_login(ann)
    url = reverse("leaderboard:team-action", args=[teams["alpha"].pk, "invite"])
    for n in range(2):
        client.post(url, {"email": f"p{n}@example.org"})
    shown = client.post(url, {"email": "p9@example.org"}, follow=True).content.decode()
    assert "alpha has 2 open invitations" in shown
    assert Invitation.objects.filter(team=teams["alpha"]).count() == 2
