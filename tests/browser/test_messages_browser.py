"""Organisers' messages in a real browser at 1400 and 390 px with axe on every page shown: an
organiser opens Messages from the challenge page, sees how many people each audience is,
previews a message to the teams of a task, sends it, and finds it sent in the log; then turns
organisers' messages off on the account page."""

from __future__ import annotations

from django.core import mail

from leaderboard.models import EvaluationRun, Mailing, MailPreference, Submission
from leaderboard.tasks import deliver_mailing
from tests.browser.test_journeys import Journey, screen  # noqa: F401 - fixture used by name
from tests.browser.test_participants_browser import sign_in
from tests.leaderboard.broker import broker_at, sent
from tests.services import redis_url

BROKER = redis_url("journeys")


def test_an_organiser_previews_and_sends_a_message(
    screen,  # noqa: F811 - the fixture imported above
    challenge,
    teams,
    splits,
    make_user,
    artifacts,
):
    page, size = screen
    journey = Journey(page, "messages", size, artifacts)
    organiser = make_user("olga")
    challenge.organisers.add(organiser)
    make_user("alice", team=teams["alpha"])
    make_user("bruno", team=teams["beta"])
    for team in (teams["alpha"], teams["beta"]):
        submission = Submission.objects.create(
            team=team,
            challenge=challenge,
            artifact_kind=Submission.ArtifactKind.REGISTRY_REF,
            method_name=f"{team.name}-m",
        )
        if team == teams["alpha"]:
            split = splits["public-test"]
            EvaluationRun.objects.create(submission=submission, task=split.task, split=split)
    sign_in(page, "olga")
    page.goto(f"/c/{challenge.slug}/")
    page.get_by_role("navigation", name="Organisers' console").get_by_role(
        "link", name="Messages"
    ).click()
    page.wait_for_url("**/messages/")
    assert "Everyone taking part: 2 people" in page.inner_text("#message-form")
    assert "The teams of Multi-turn QA: 1 person" in page.inner_text("#message-form")
    journey.see("messages")
    page.get_by_label("The teams of Multi-turn QA").check()
    page.fill("#message-subject", "The private test opens on Monday")
    page.fill("#message-body", "Dear teams,\n\nthe private test opens on Monday at 09:00 UTC.")
    page.get_by_role("button", name="Preview").click()
    page.wait_for_url("**/messages/")
    assert "To The teams of Multi-turn QA: 1 person" in page.inner_text("#preview")
    journey.see("preview")
    with broker_at(BROKER) as client:
        page.get_by_role("button", name="Send to 1 person").click()
        page.wait_for_url("**/messages/")
        message = Mailing.objects.get()
        assert f"Message #{message.pk} is queued for 1 person" in page.inner_text("main")
        assert sent(client, "default") == [("mail.deliver", {"mailing_id": message.pk})]
    deliver_mailing.apply(kwargs={"mailing_id": message.pk})
    assert [m.to for m in mail.outbox] == [["alice@example.org"]]
    page.reload()
    assert "sent" in page.inner_text(f"#mailing-{message.pk}")
    journey.see("sent")

    page.goto("/account/")
    page.get_by_label("E-mail me organisers' messages").uncheck()
    page.get_by_role("button", name="Save my e-mail choices").click()
    page.wait_for_url("**/account/")
    assert "Your e-mail choices are saved." in page.inner_text("main")
    journey.see("account")
    choice = MailPreference.objects.get(user=organiser)
    assert (choice.run_ended, choice.organisers_messages) == (True, False)
