"""A team member signs in, submits an agent through the form, and reads the results pages."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from leaderboard.models import EvaluationRun, Split, Submission
from leaderboard.scores import store_scores
from tests.browser.axe import assert_accessible
from tests.leaderboard.broker import broker_at, sent
from tests.leaderboard.factories import block, scores_dict
from tests.services import redis_url

BROKER = redis_url("e2e")  # tests/services.py: its own database, emptied around each test
BOARD = "/c/crag-mm-2026/multi-turn-qa/public-test/"


@pytest.fixture
def board(public_entries, teams, make_user):
    """Two teams on the public-test leaderboard, an organisers' baseline, and ann of alpha."""
    return make_user("ann", team=teams["alpha"])


def finish_pipeline(run: EvaluationRun, truthfulness: float) -> None:
    """What the build, GPU, judge and scoring stages leave behind for the pages."""
    for state in ("building", "running", "judging", "scoring"):
        run.move_to(state)
    slices = {"domain": {"food": block(0.8, turns=12), "vehicle": block(0.4, turns=8)}}
    store_scores(run, scores_dict(truthfulness, slices))
    run.move_to("done")


def test_sign_in_submit_and_read_the_leaderboard_and_slice_chart(page, board, artifacts):
    with broker_at(BROKER) as broker:
        page.goto("/c/crag-mm-2026/submit/")
        assert "/accounts/login/" in page.url
        page.fill("#id_login", "ann")
        page.fill("#id_password", "pw-secret-123")
        page.click("button:has-text('Sign in')")
        page.wait_for_url("**/c/crag-mm-2026/submit/")
        page.check("input[name=artifact_kind][value=registry-ref]")
        page.fill("#id_registry_ref", "ghcr.io/alpha/agent:1")
        page.fill("#id_method_name", "browser-agent")
        page.fill("#id_paper_url", "https://example.org/paper")
        page.click("#submit-form button[type=submit]")
        page.wait_for_url("**/submissions/")
        assert "browser-agent" in page.inner_text("main")
        submission = Submission.objects.get(method_name="browser-agent")
        assert (submission.team.name, submission.registry_ref) == ("alpha", "ghcr.io/alpha/agent:1")
        (run,) = submission.runs.all()
        assert sent(broker, "build") == [("build.prepare_run", {"run_id": run.pk})]

    finish_pipeline(run, 0.5)
    page.goto(BOARD)
    rows = page.locator("#leaderboard tbody tr")
    assert rows.count() == 4
    first = rows.nth(0).locator("td")
    assert [first.nth(i).inner_text().strip() for i in (0, 1)] == ["1", "alpha"]
    assert first.nth(2).inner_text().startswith("browser-agent")
    assert first.nth(3).inner_text() == "50.0"  # truthfulness in percent
    assert first.nth(2).locator("a", has_text="paper").get_attribute("href") == (
        "https://example.org/paper"
    )
    ranks = [rows.nth(i).locator("td").first.inner_text().strip() for i in range(4)]
    assert ranks == ["1", "2", "3", "baseline"]
    page.screenshot(path=str(artifacts / "browser-leaderboard.png"), full_page=True)

    page.click(".tabs a:has-text('Slices')")
    page.select_option("select[name=dimension]", "domain")
    page.select_option("select[name=metric]", "accuracy")
    page.click("form.tabs button:has-text('Show')")
    page.wait_for_url(re.compile(r".*dimension=domain&metric=accuracy"))
    chart = page.locator("svg.chart")
    assert chart.get_attribute("aria-label") == "Accuracy by domain"
    assert page.locator(".legend span").all_inner_texts()[0].strip() == "browser-agent"
    titles = chart.locator("rect title").all_text_contents()
    assert len(titles) == 8  # 2 slice values x 4 entries
    food_accuracy = (1 + 0.8) / 2 * 0.8  # the factory's accuracy for truthfulness 0.8
    assert f"browser-agent: {100 * food_accuracy:.1f} (n=12)" in titles
    cells = page.locator("#slices tbody tr").first.locator("td")
    assert float(cells.nth(2).get_attribute("data-value")) == pytest.approx(food_accuracy)
    assert cells.nth(2).inner_text().startswith(f"{100 * food_accuracy:.1f}")
    chart.screenshot(path=str(artifacts / "browser-slice-chart.png"))
    page.screenshot(path=str(artifacts / "browser-slices.png"), full_page=True)


def test_pages_fit_a_phone_screen(chromium, live_server, board, artifacts):
    """At 390 px nothing makes the page scroll sideways: tables scroll inside their box, the
    chart scales down, the navigation wraps."""
    context = chromium.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        for name, path in (
            ("challenges", "/"),
            ("leaderboard", BOARD),
            ("slices", f"{BOARD}slices/?dimension=domain&metric=truthfulness"),
            ("signup", "/accounts/signup/"),
        ):
            page.goto(path)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, f"{path} is {width} px wide at 390 px"
            page.screenshot(path=str(artifacts / f"phone-{name}.png"), full_page=True)
    finally:
        context.close()


def test_a_superseded_board_is_reached_from_the_current_one_and_reads_at_any_width(
    chromium, live_server, board, public_entries, artifacts
):
    """The split's data changed (version 2, no runs yet): the current board says so and links
    the earlier version's board, which keeps its entries, names itself superseded, keeps its
    links on its version, passes axe and fits 1400 px and 390 px screens."""
    old = public_entries
    old.superseded_at = timezone.now()
    old.save(update_fields=["superseded_at"])
    Split.objects.create(task=old.task, kind=old.kind, version=2, visibility=old.visibility)
    for width, height in ((1400, 900), (390, 844)):
        context = chromium.new_context(
            base_url=live_server.url, viewport={"width": width, "height": height}
        )
        page = context.new_page()
        try:
            page.goto(BOARD)
            assert "No evaluated entries yet" in page.inner_text("main")
            page.click(f"a[href='{BOARD}?version=1']")
            page.wait_for_url(re.compile(r".*\?version=1$"))
            main = page.inner_text("main")
            assert "superseded on" in main
            rows = page.locator("#leaderboard tbody tr")
            methods = [rows.nth(i).locator("td").nth(2).inner_text() for i in range(rows.count())]
            assert [m.split()[0] for m in methods] == ["beta-rag", "gamma-agent", "llava-baseline"]
            slices = page.locator(".tabs a:has-text('Slices')").get_attribute("href")
            assert "version=1" in slices, slices  # its tabs stay on version 1
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            assert_accessible(page, f"the superseded board at {width} px")
            page.screenshot(path=str(artifacts / f"superseded-board-{width}.png"), full_page=True)
        finally:
            context.close()
