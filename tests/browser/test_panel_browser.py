"""An organiser's journey through the submissions panel in a real browser: from the challenge's
page to the panel, a filter, a submission disqualified with a reason (it leaves the board), the
action log, "Every submission" with its flagged pair; then the team reads it on its run page.
Then a re-judge with a judge chosen beside the button and a cancel, the action log paged, and
the team reading each action's reason on its run page and its submissions.
Every page is checked by axe and may not scroll sideways, at 1400 and 390 px."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from leaderboard.models import (
    AnswerSimilarity,
    EvaluationRun,
    Phase,
    RunAction,
    Submission,
    SubmissionAction,
)
from leaderboard.views import panel
from podium.celery import app
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
    page.get_by_role("navigation", name="Organisers' console").get_by_role(
        "link", name="Submissions panel"
    ).click()
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
    page.get_by_role("link", name="Action log", exact=True).click()
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
    seen = "the submission disqualified by an organiser: the same agent as team beta's"
    assert seen in journey.main_text()
    journey.see("team-run")


def test_an_organiser_rejudges_with_a_chosen_judge_and_the_team_reads_why(
    screen,  # noqa: F811 - the fixture imported above
    challenge,
    splits,
    teams,
    make_entry,
    make_user,
    artifacts,
    monkeypatch,
):
    page, size = screen
    journey = Journey(page, "panel-judge", size, artifacts)
    monkeypatch.setattr(app, "send_task", lambda *args, **kwargs: None)  # no broker
    monkeypatch.setattr(panel, "LOG_PER_PAGE", 1)
    organiser = make_user("olga")
    challenge.organisers.add(organiser)
    make_user("alice", team=teams["alpha"])
    done = make_entry(teams["alpha"], splits["public-test"], 0.8, method="alpha-agent")
    running = make_entry(
        teams["alpha"], splits["validation"], 0.3, method="alpha-next", state="running"
    )
    _sign_in(page, "olga")
    page.goto(f"/c/{challenge.slug}/panel/")
    page.get_by_label(f"Choose run #{done.pk}").check()
    page.fill("#why", "the judge's prompt was fixed")
    page.select_option("#judge", label="rules")
    journey.see("judge-chosen")
    page.get_by_role("button", name="Re-judge").click()
    page.wait_for_url("**/panel/?*")
    assert "1 run re-judged." in journey.main_text()
    page.get_by_label(f"Choose run #{running.pk}").check()
    page.fill("#why", "it ran out of its time slot")
    page.get_by_role("button", name="Cancel").click()
    page.wait_for_url("**/panel/?*")
    assert "1 run cancelled." in journey.main_text()
    assert EvaluationRun.objects.get(pk=done.pk).judge_choice["kind"] == "rules"
    assert RunAction.objects.get(kind="rejudge").detail == "judge: rules"
    page.goto(f"/c/{challenge.slug}/panel/log/")
    assert "it ran out of its time slot" in page.locator("#action-log").inner_text()
    assert "2 actions · page 1 of 2" in journey.main_text()
    journey.see("log-paged")
    page.get_by_role("link", name="next ›").click()
    assert "(judge: rules)" in page.locator("#action-log").inner_text()
    # the team reads what was done, when and why, never who
    page.context.clear_cookies()
    _sign_in(page, "alice")
    page.goto(f"/runs/{running.pk}/")
    text = journey.main_text()
    assert "An organiser cancelled this run: it ran out of its time slot" in text
    assert f"run #{running.pk} cancelled by an organiser: it ran out of its time slot" in text
    assert "olga" not in text
    journey.see("team-run-actions")
    page.goto("/submissions/")
    text = journey.main_text()
    assert f"run #{done.pk} re-judged by an organiser: the judge's prompt was fixed" in text
    assert "olga" not in text
    journey.see("team-submissions-actions")
