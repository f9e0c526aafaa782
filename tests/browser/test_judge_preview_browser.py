"""An organiser previews a judge change in a real browser: from the challenge page to the split's
judge previews, a candidate chosen and its dry run started, then both boards side by side with
the rank changes, Kendall's tau and the flipped verdicts, and the judge published with a reason;
each page checked by axe and kept as a screenshot, at 1400 and 390 px."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest
from django.db import connections

from leaderboard.models import EvaluationRun, JudgePreview, RunAction
from leaderboard.pipeline.preview import dry_run
from tests.browser.test_journeys import Journey, screen  # noqa: F401 - fixture used by name
from tests.leaderboard.test_judge_preview import (  # noqa: F401 - fixtures used by name
    fake,
    judged_board,
    organiser,
    sent,
)

T = TypeVar("T")


def elsewhere(call: Callable[..., T], *args: object) -> T:
    """``call`` in a thread of its own: the judging loop runs its own event loop, which the
    test thread cannot (Playwright's runs there)."""

    def run() -> T:
        try:
            return call(*args)
        finally:
            connections.close_all()  # this thread's

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result()


@pytest.fixture
def board(task, teams, tmp_path, settings):
    settings.VAR_DIR = tmp_path / "var"
    return elsewhere(judged_board, task, teams, tmp_path)


# transaction: the live server and the judging loop's threads read what the test wrote
@pytest.mark.django_db(transaction=True)
def test_an_organiser_previews_a_judge_then_publishes_it(
    screen,  # noqa: F811 - the fixtures imported above
    board,
    fake,  # noqa: F811
    sent,  # noqa: F811
    organiser,  # noqa: F811
    artifacts,
):
    page, size = screen
    journey = Journey(page, "judge-preview", size, artifacts)
    page.goto("/accounts/login/")
    page.fill("#id_login", organiser.username)
    page.fill("#id_password", "pw-secret-123")
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()
    page.goto(f"/c/{board.task.challenge.slug}/?tab=leaderboards")
    page.get_by_role("link", name="judge previews").click()
    page.wait_for_url("**/judge-previews/")
    assert "The task is judged by rules" in journey.main_text()
    journey.see("previews")
    page.select_option("#judge", label="openai:fake-judge (endpoint fake)")
    page.get_by_role("button", name="Start the dry run").click()
    page.wait_for_url("**/judge-previews/*/")
    preview = JudgePreview.objects.get()
    assert sent == [("judge.preview_judge", {"preview_id": preview.pk})]
    assert "queued" in page.locator("#progress").inner_text()
    assert elsewhere(dry_run, preview.pk) == 0  # what the judge queue's worker does
    page.reload()
    assert "3 of 3 runs · 8 judge calls" in page.locator("#progress").inner_text()
    assert "-1.000" in page.locator("#tau-all").inner_text()
    changes = page.locator(".rank-changes tbody tr").all_inner_texts()
    assert [row.split("\t")[:4] for row in changes] == [
        ["beta", "3", "1", "▲ +2"], ["gamma", "2", "2", "="], ["alpha", "1", "3", "▼ -2"]
    ]  # fmt: skip
    assert page.locator("#flips-table tbody tr").count() == 8
    first = page.locator("#agreement-table tbody tr").first.inner_text()
    assert first.split("\t")[:5] == ["all", "all", "12", "4", "0.333"]
    journey.see("preview")
    page.fill("#why", "the LLM reads paraphrases")
    page.get_by_role("button", name="Publish this judge").click()
    page.wait_for_url(f"**/judge-previews/{preview.pk}/")
    assert "Published: openai:fake-judge (endpoint fake) judges" in journey.main_text()
    assert "from rules to openai:fake-judge" in page.locator("#published").inner_text()
    assert "-1.000" in page.locator("#tau-all").inner_text()  # the boards as published
    journey.see("published")
    assert RunAction.objects.filter(kind="rejudge", by=organiser).count() == 3
    assert EvaluationRun.objects.filter(state=EvaluationRun.State.JUDGING).count() == 3
