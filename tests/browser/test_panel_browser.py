"""An organiser's journey through the submissions panel in a real browser: from the challenge's
page to the panel, a filter, a submission disqualified with a reason (it leaves the board), the
action log, "Every submission" with its flagged pair; then the team reads it on its run page.
Every page is checked by axe and may not scroll sideways, at 1400 and 390 px."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from leaderboard.models import AnswerSimilarity, Phase, Submission, SubmissionAction
from tests.browser.test_journeys import Journey, screen  # noqa: F401 - fixture used by name


def _sign_in(page, name: str) -> None:
    page.goto("/accounts/login/")
    page.fill("#id_login", name)
    page.fill("#id_password", "pw-secret-123")
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()


def test_an_organiser_disqualifies_a_submission_from_the_panel(
    screen,  # noqa: F811 - the fixture imported above
    challenge,
    splits,
    teams,
    make_entry,
    make_user,
    artifacts,
):
    page, size = screen
    journey = Journey(page, "panel", size, artifacts)
    organiser = make_user("olga")
    challenge.organisers.add(organiser)
    make_user("alice", team=teams["alpha"])
    public = splits["public-test"]
    alpha = make_entry(teams["alpha"], public, 0.8, method="alpha-agent-with-a-long-name")
    beta = make_entry(teams["beta"], public, 0.5, method="beta-agent")
    AnswerSimilarity.objects.create(
        split=public, run_a=alpha, run_b=beta, items=21, alike=20, share=20 / 21
    )
    now = timezone.now()
    Phase.objects.create(
        challenge=challenge, name="Phase 1", starts_at=now - timedelta(days=1), ends_at=now
    )
    _sign_in(page, "olga")
    page.goto(f"/c/{challenge.slug}/")
    page.get_by_role("link", name="Submissions panel (organisers)").click()
    page.wait_for_url("**/panel/")
    assert page.locator("#rerun-phase").is_visible()
    journey.see("panel")
    page.fill("#panel-filters input[name=team]", "alp")
    page.locator("#panel-filters button").click()
    page.wait_for_url("**/panel/?*team=alp*")
    assert "beta-agent" not in page.locator("#panel-runs").inner_text()
    page.get_by_label(f"Choose run #{alpha.pk}").check()
    page.fill("#why", "the same agent as team beta's")
    page.get_by_role("button", name="Disqualify").click()
    page.wait_for_url("**/panel/?team=alp*")
    assert "1 submission disqualified." in journey.main_text()
    journey.see("disqualified")
    board = f"/c/{challenge.slug}/multi-turn-qa/public-test/"
    page.goto(board)
    assert "alpha-agent" not in journey.main_text() and "beta-agent" in journey.main_text()
    page.goto(f"/c/{challenge.slug}/panel/")
    page.get_by_role("link", name="action log").click()
    page.wait_for_url("**/panel/log/")
    assert "the same agent as team beta's" in page.locator("#action-log").inner_text()
    journey.see("action-log")
    page.goto(f"/c/{challenge.slug}/submissions/")
    flags = page.locator("#flag-list").inner_text()
    assert "20 of 21 answers alike (95%)" in flags
    journey.see("every-submission")
    (action,) = SubmissionAction.objects.all()
    assert (action.by, action.kind) == (organiser, "disqualify")
    assert Submission.objects.get(pk=alpha.submission_id).standing == "disqualified"
    # the team reads what was done, and why
    page.context.clear_cookies()
    _sign_in(page, "alice")
    page.goto(f"/runs/{alpha.pk}/")
    seen = "disqualify of the submission by an organiser: the same agent as team beta's"
    assert seen in journey.main_text()
    journey.see("team-run")
