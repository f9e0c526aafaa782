"""Who takes part, in a real browser at 1400 and 390 px with axe on every page shown: an
organiser approves a registration and bans a team and a participant from the Participants page;
a participant registers a team, removes a member, revokes an invitation, sees a waiting run's
place in its queue and cancels it."""

from __future__ import annotations

from leaderboard.models import Ban, EvaluationRun, Invitation, Membership, Registration
from tests.browser.test_journeys import Journey, screen  # noqa: F401 - fixture used by name
from tests.leaderboard.broker import broker_at
from tests.services import redis_url

State = EvaluationRun.State
BROKER = redis_url("journeys")


def sign_in(page, username: str) -> None:
    page.goto("/accounts/login/")
    page.fill("#id_login", username)
    page.fill("#id_password", "pw-secret-123")
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()


def messages_text(page) -> str:
    return page.inner_text("main")


def test_an_organiser_approves_a_registration_and_bans(
    screen,  # noqa: F811 - the fixture imported above
    challenge,
    teams,
    splits,
    make_user,
    make_entry,
    artifacts,
):
    page, size = screen
    journey = Journey(page, "participants-organiser", size, artifacts)
    organiser = make_user("olga")
    challenge.organisers.add(organiser)
    challenge.registration_approval = True
    challenge.save()
    make_user("alice", team=teams["alpha"])
    make_user("bruno", team=teams["beta"])
    make_entry(teams["beta"], splits["public-test"], 0.3, method="beta-rag")
    waiting = Registration.objects.create(challenge=challenge, team=teams["alpha"])
    sign_in(page, "olga")
    page.goto(f"/c/{challenge.slug}/")
    page.get_by_role("navigation", name="Organisers' console").get_by_role(
        "link", name="Participants"
    ).click()
    page.wait_for_url("**/participants/")
    assert "alpha" in page.inner_text(f"#registration-{waiting.pk}")
    journey.see("participants")
    page.get_by_role("button", name="Approve alpha").click()
    page.wait_for_url("**/participants/")
    assert "alpha: approved." in messages_text(page)
    journey.see("approved")
    page.fill(f"#ban-{teams['beta'].pk}", "one agent under two teams")
    page.get_by_role("button", name="Ban beta").click()
    page.wait_for_url("**/participants/")
    assert "beta is banned." in messages_text(page)
    page.fill("#ban-username", "alice")
    page.fill("#ban-reason", "shared the private split")
    page.get_by_role("button", name="Ban this participant").click()
    page.wait_for_url("**/participants/")
    assert "alice: shared the private split" in page.inner_text("#user-bans")
    journey.see("banned")
    waiting.refresh_from_db()
    assert waiting.state == "approved"
    assert sorted(Ban.objects.values_list("reason", flat=True)) == [
        "one agent under two teams", "shared the private split",
    ]  # fmt: skip


def test_a_participant_registers_manages_the_team_and_cancels_a_waiting_run(
    screen,  # noqa: F811 - the fixture imported above
    challenge,
    teams,
    pipeline_run,
    make_user,
    artifacts,
):
    page, size = screen
    page.on("dialog", lambda dialog: dialog.accept())  # the confirmations
    journey = Journey(page, "participants-team", size, artifacts)
    challenge.registration_approval = True
    challenge.save()
    alpha = teams["alpha"]
    alice = make_user("alice")
    Membership.objects.create(team=alpha, user=alice, role=Membership.Role.OWNER)
    make_user("marco", team=alpha)
    Invitation.objects.create(team=alpha, email="zoe@example.org", invited_by=alice)
    sign_in(page, "alice")
    page.goto(f"/c/{challenge.slug}/")
    page.locator("main").get_by_role("link", name="Register a team").click()
    page.wait_for_url("**/register/")
    assert "asks teams to register first" in page.inner_text("#my-teams")
    journey.see("register")
    page.get_by_role("button", name="Register alpha").click()
    page.wait_for_url("**/register/")
    assert "waits for the organisers" in page.inner_text("#my-teams")
    journey.see("registered")

    page.goto(f"/teams/{alpha.pk}/")
    journey.see("team")
    page.get_by_role("button", name="Remove marco from the team").click()
    page.wait_for_url(f"**/teams/{alpha.pk}/")
    assert "marco is no longer in alpha." in messages_text(page)
    page.get_by_role("button", name="Revoke the invitation to zoe@example.org").click()
    page.wait_for_url(f"**/teams/{alpha.pk}/")
    assert "The invitation to zoe@example.org is revoked." in messages_text(page)
    journey.see("team-after")
    assert list(alpha.memberships.values_list("user__username", flat=True)) == ["alice"]
    assert not Invitation.objects.exists()

    ahead = pipeline_run(State.QUEUED)
    run = pipeline_run(State.QUEUED)
    with broker_at(BROKER):
        page.goto(f"/runs/{run.pk}/")
        assert "Place 2 in the building queue" in page.inner_text("#run-queue")
        journey.see("run-waiting")
        page.get_by_role("button", name="Cancel this run").click()
        page.wait_for_url(f"**/runs/{run.pk}/")
        assert f"Run #{run.pk} is cancelled." in messages_text(page)
        journey.see("run-cancelled")
    run.refresh_from_db()
    ahead.refresh_from_db()
    assert (run.state, run.failure_reason, ahead.state) == (
        State.CANCELLED, "Your team cancelled this run.", State.QUEUED,
    )  # fmt: skip
