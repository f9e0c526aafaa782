"""Every page of the organisers' console, and every page a participant reaches from it, in a real
browser at 1400 and 390 px, on a challenge filled the way a busy one is: long team and method
names, a pending registration, a ban, a flagged pair, a failed run with a long reason, a queued
run, logged actions. Each page is checked by axe and may not scroll sideways; each shows what it
is for (a marker of its own text), so a page that errors or redirects fails too."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from leaderboard.models import (
    AnswerSimilarity,
    Ban,
    EvaluationRun,
    Phase,
    Registration,
    RunAction,
    Submission,
    SubmissionAction,
    Team,
)
from tests.browser.test_journeys import Journey, screen  # noqa: F401 - fixture used by name

pytestmark = pytest.mark.django_db(transaction=True)

LONG_TEAM = "the-team-with-a-rather-long-name-that-does-not-wrap-easily"
LONG_METHOD = "retrieval-augmented-agent-with-reranking-and-a-very-long-method-name-v12"
LONG_WHY = (
    "The agent's answers on the private split match another team's word for word on "
    "questions_with_an_unusually_long_identifier_0123456789abcdef"
)


def _sign_in(page, name: str) -> None:
    page.context.clear_cookies()
    page.goto("/accounts/login/")
    page.fill("#id_login", name)
    page.fill("#id_password", "pw-secret-123")
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()


@pytest.fixture
def busy(challenge, splits, teams, make_entry, make_user, pipeline_run):
    """A challenge as it looks in the middle of a phase; returns the runs the walk opens."""
    challenge.registration_approval = True
    challenge.overall = {"method": "average-rank"}
    challenge.save(update_fields=["registration_approval", "overall"])
    organiser = make_user("olga", staff=True)
    challenge.organisers.add(organiser)
    long_team = Team.objects.create(name=LONG_TEAM)
    make_user("alice", team=teams["alpha"])
    make_user("lena", team=long_team)
    Registration.objects.create(challenge=challenge, team=long_team, requested_by=None)
    Ban.objects.create(challenge=challenge, team=teams["gamma"], reason=LONG_WHY, by=organiser)
    public = splits["public-test"]
    alpha = make_entry(teams["alpha"], public, 0.8, method=LONG_METHOD)
    beta = make_entry(teams["beta"], public, 0.5, method="beta-agent")
    long_entry = make_entry(long_team, public, 0.6, method=LONG_METHOD + "-b")
    AnswerSimilarity.objects.create(
        split=public, run_a=alpha, run_b=beta, items=21, alike=20, share=20 / 21
    )
    failed = make_entry(long_team, public, None, method="crashes", state="failed")
    EvaluationRun.objects.filter(pk=failed.pk).update(failure_reason=LONG_WHY)
    queued = pipeline_run(EvaluationRun.State.QUEUED)
    RunAction.objects.create(
        run=long_entry, kind=RunAction.Kind.REJUDGE, by=organiser, why=LONG_WHY,
        from_state="done", detail="judge: rules",
    )  # fmt: skip
    SubmissionAction.objects.create(
        submission=Submission.objects.get(pk=beta.submission_id),
        kind=SubmissionAction.Kind.HIDE,
        by=organiser,
        why=LONG_WHY,
    )
    now = timezone.now()
    Phase.objects.create(
        challenge=challenge, name="Phase 1", starts_at=now - timedelta(days=1), ends_at=now
    )
    return {"alpha": alpha, "failed": failed, "queued": queued, "long_team": long_team}


def test_every_console_page_reads_well_at_both_sizes(
    screen,  # noqa: F811 - the fixture imported above
    challenge,
    busy,
    artifacts,
):
    page, size = screen
    journey = Journey(page, "console-walk", size, artifacts)
    slug = challenge.slug
    board = f"/c/{slug}/multi-turn-qa/public-test/"
    # (step, address, a text the page shows when it is the page asked for)
    organiser_pages = [
        ("challenge", f"/c/{slug}/", "Organisers:"),
        ("panel", f"/c/{slug}/panel/", LONG_METHOD[:40]),
        ("panel-flagged", f"/c/{slug}/panel/?flagged=1", "beta-agent"),
        ("panel-failed", f"/c/{slug}/panel/?state=failed", "crashes"),
        ("action-log", f"/c/{slug}/panel/log/", "judge: rules"),
        ("participants", f"/c/{slug}/participants/", "banned: " + LONG_WHY[:30]),
        ("messages", f"/c/{slug}/messages/", "Everyone taking part"),
        ("every-submission", f"/c/{slug}/submissions/", "20 of 21 answers alike"),
        ("answers", f"/c/{slug}/answers/", "CSV"),
        ("bundle", f"/c/{slug}/bundle/", "challenge.yaml"),
        ("audits", f"/c/{slug}/audits/", "audit"),
        ("board", board, LONG_METHOD[:40]),
        ("failed-run", f"/runs/{busy['failed'].pk}/", "failed"),
        ("queued-run", f"/runs/{busy['queued'].pk}/", "queued"),
        ("operator", "/operator/", "Workers"),
        ("new-challenge", "/challenges/new/", "bundle"),
        ("account", "/account/", "olga"),
    ]
    console = page.get_by_role("navigation", name="Organisers' console")
    _sign_in(page, "olga")
    for step, address, marker in organiser_pages:
        response = page.goto(address)
        assert response is not None and response.status == 200, f"{address}: {response}"
        assert marker.lower() in journey.main_text().lower(), f"{address} lacks {marker!r}"
        if address.startswith(f"/c/{slug}/") and step not in ("challenge", "board"):
            assert console.locator("[aria-current=page]").count() == 1  # the console's own page
        journey.see(step)

    long_team = busy["long_team"]
    participant_pages = [
        ("register", f"/c/{slug}/register/", "waits for the organisers"),
        ("my-submissions", "/submissions/", "crashes"),
        ("own-failed-run", f"/runs/{busy['failed'].pk}/", LONG_WHY[:40]),
        ("team", f"/teams/{long_team.pk}/", LONG_TEAM),
        ("participant-board", board, LONG_METHOD[:40]),
        ("overall", f"/c/{slug}/overall/", LONG_TEAM[:30]),
    ]
    _sign_in(page, "lena")
    page.goto(f"/c/{slug}/")
    assert console.count() == 0  # a participant has no console
    for step, address, marker in participant_pages:
        response = page.goto(address)
        assert response is not None and response.status == 200, f"{address}: {response}"
        assert marker.lower() in journey.main_text().lower(), f"{address} lacks {marker!r}"
        journey.see(step)
