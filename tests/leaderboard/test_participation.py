"""Organisers decide who takes part: registrations approved or refused (where the challenge
asks), bans of a team or a participant with the reason shown to them, the teams and their
members; organisers only, decided before the form is read."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client
from django.urls import reverse

from leaderboard import participation
from leaderboard.models import Ban, Challenge, Membership, Registration, Submission
from leaderboard.submitting import Choice, admit

from .submit_support import open_splits

__all__ = ["open_splits"]  # fixtures used by name
PAGE = reverse("leaderboard:participants", args=["crag-mm-2026"])
REGISTER = reverse("leaderboard:register", args=["crag-mm-2026"])


def action(name: str) -> str:
    return reverse("leaderboard:participants-action", args=["crag-mm-2026", name])


@pytest.fixture
def people(make_user, teams, challenge, open_splits):
    organiser = make_user("org")
    challenge.organisers.add(organiser)
    ann = make_user("ann")
    Membership.objects.create(team=teams["alpha"], user=ann, role=Membership.Role.OWNER)
    return {"org": organiser, "ann": ann, "bob": make_user("bob", team=teams["alpha"])}


def as_user(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def may_submit(user, team, challenge) -> str:
    """The refusal when ``user`` may not submit for ``team``; "" when they may."""
    try:
        admit(team, Challenge.objects.get(pk=challenge.pk), user, Choice())
    except PermissionDenied as exc:
        return str(exc)
    return ""


def test_only_organisers_see_the_page_or_act(people, challenge, teams):
    anonymous = Client().get(PAGE)
    assert anonymous.status_code == 302 and "login" in anonymous["Location"]
    ann = as_user(people["ann"])
    assert ann.get(PAGE).status_code == 403
    # refused before the form is read: even a malformed one answers 403, and nothing changes
    for name, data in (
        ("approval", {"on": "1"}),
        ("ban", {"team": teams["alpha"].pk, "reason": "x"}),
        ("ban", {"team": "not-a-number"}),
        ("no-such-action", {}),
    ):
        assert ann.post(action(name), data).status_code == 403
    challenge.refresh_from_db()
    assert not challenge.registration_approval and not Ban.objects.exists()
    assert as_user(people["org"]).get(PAGE).status_code == 200
    assert as_user(people["org"]).post(action("no-such-action")).status_code == 404


def test_registration_is_approved_or_refused_before_a_team_submits(people, challenge, teams):
    org, alpha = as_user(people["org"]), teams["alpha"]
    assert may_submit(people["ann"], alpha, challenge) == ""  # no registration asked for yet
    org.post(action("approval"), {"on": "1"})
    assert may_submit(people["ann"], alpha, challenge) == (
        "CRAG-MM 2026 asks teams to register first: register alpha at /c/crag-mm-2026/register/"
    )
    page = as_user(people["bob"]).get(REGISTER).content.decode()
    assert 'aria-label="Register alpha"' in page
    as_user(people["bob"]).post(REGISTER, {"team": alpha.pk})
    registration = Registration.objects.get()
    assert (registration.team, registration.state, registration.requested_by) == (
        alpha, "pending", people["bob"],
    )  # fmt: skip
    assert may_submit(people["ann"], alpha, challenge) == (
        "the registration of alpha waits for the organisers of CRAG-MM 2026"
    )
    assert 'aria-label="Approve alpha"' in org.get(PAGE).content.decode()

    answer = org.post(action("refuse"), {"registration": registration.pk}, follow=True)
    assert "say why it is refused: the team reads the reason" in answer.content.decode()
    org.post(action("refuse"), {"registration": registration.pk, "reason": "no paper yet"})
    refused = "the organisers of CRAG-MM 2026 refused alpha: no paper yet"
    assert may_submit(people["ann"], alpha, challenge) == refused
    assert refused in as_user(people["ann"]).get(REGISTER).content.decode()

    as_user(people["ann"]).post(REGISTER, {"team": alpha.pk})  # asked again
    assert Registration.objects.get().state == "pending"
    org.post(action("approve"), {"registration": registration.pk})
    registration.refresh_from_db()
    assert (registration.state, registration.decided_by) == ("approved", people["org"])
    assert may_submit(people["ann"], alpha, challenge) == ""
    # another team's member cannot register alpha
    outsider = as_user(people["org"])
    assert outsider.post(REGISTER, {"team": teams["beta"].pk}, follow=True).status_code == 200
    assert Registration.objects.count() == 1


def test_a_banned_team_or_member_cannot_submit_and_reads_why(people, challenge, teams, make_user):
    org, alpha = as_user(people["org"]), teams["alpha"]
    org.post(action("ban"), {"team": alpha.pk, "reason": "two accounts, one agent"})
    why = "team alpha is banned from CRAG-MM 2026: two accounts, one agent"
    assert may_submit(people["ann"], alpha, challenge) == why
    assert why in as_user(people["ann"]).get(REGISTER).content.decode()
    answer = org.post(action("ban"), {"team": alpha.pk, "reason": "again"}, follow=True)
    assert "alpha is already banned from CRAG-MM 2026" in answer.content.decode()
    org.post(action("lift"), {"ban": Ban.objects.get().pk})
    assert may_submit(people["ann"], alpha, challenge) == ""

    org.post(action("ban"), {"username": "BOB", "reason": "shared the private split"})
    assert may_submit(people["ann"], alpha, challenge) == (
        "bob (of alpha) is banned from CRAG-MM 2026: shared the private split"
    )
    carl = make_user("carl", team=teams["beta"])
    assert may_submit(carl, teams["beta"], challenge) == ""  # bob is not in beta
    assert (
        "say why it is banned"
        in org.post(action("ban"), {"username": "carl"}, follow=True).content.decode()
    )
    assert (
        "no participant is called &#x27;nobody&#x27;"
        in org.post(
            action("ban"), {"username": "nobody", "reason": "x"}, follow=True
        ).content.decode()
    )
    Membership.objects.create(team=alpha, user=people["org"])
    assert may_submit(people["org"], alpha, challenge) == ""  # organisers are never refused


def test_the_page_lists_the_teams_with_members_registrations_and_bans(
    people, challenge, teams, make_entry, splits
):
    make_entry(teams["alpha"], splits["public-test"], 0.4)
    make_entry(teams["alpha"], splits["validation"], 0.4)
    Registration.objects.create(challenge=challenge, team=teams["gamma"])
    participation.ban(challenge, people["org"], "spam", team=teams["gamma"])
    rows = {row.team.name: row for row in participation.teams_of(challenge)}
    assert set(rows) == {"alpha", "gamma"}  # beta neither registered nor submitted
    participation.ban(challenge, people["org"], "known cheats", team=teams["beta"])
    rows = {row.team.name: row for row in participation.teams_of(challenge)}
    assert rows["beta"].ban.reason == "known cheats"  # banned before it took part: still listed
    alpha = rows["alpha"]
    assert [m.user.username for m in alpha.members] == ["ann", "bob"]
    assert (alpha.submissions, alpha.registration, alpha.ban) == (2, None, None)
    gamma = rows["gamma"]
    assert (gamma.submissions, gamma.registration.state, gamma.ban.reason) == (0, "pending", "spam")
    page = as_user(people["org"]).get(PAGE).content.decode()
    assert "ann (captain), bob" in page and "<strong>banned</strong>: spam" in page


def test_the_submit_page_and_the_api_tell_a_banned_team_why(people, challenge, teams):
    participation.ban(challenge, people["org"], "two accounts, one agent", team=teams["alpha"])
    why = "team alpha is banned from CRAG-MM 2026: two accounts, one agent"
    ann = as_user(people["ann"])
    submit_url = reverse("leaderboard:submit", args=["crag-mm-2026"])
    assert f"{why[0].upper()}{why[1:]}." in ann.get(submit_url).content.decode()
    form = {
        "team": teams["alpha"].pk, "artifact_kind": "registry-ref", "registry_ref": "a/b:1",
        "method_name": "m", "tasks": ["multi-turn-qa"],
    }  # fmt: skip
    response = ann.post(submit_url, form)
    assert response.status_code == 403 and why in response.content.decode()
    api = ann.post(
        "/api/submissions/",
        {"challenge": "crag-mm-2026", "team": "alpha", "artifact_kind": "registry-ref",
         "registry_ref": "a/b:1", "method_name": "m"},
        content_type="application/json",
    )  # fmt: skip
    assert api.status_code == 403 and api.json()["detail"] == why
    assert not Submission.objects.exists()
