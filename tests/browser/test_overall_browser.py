"""A visitor reads a challenge's overall ranking in a real browser: from the challenge's page
to the overall board, a team's entry on a task board through its cell, and back through the
board navigation. Every page is checked by axe and may not scroll sideways, at 1400 and
390 px."""

from __future__ import annotations

from leaderboard.models import Split, Task
from tests.browser.test_journeys import Journey, screen  # noqa: F401 - fixture used by name


def test_a_visitor_reads_the_overall_ranking(
    screen,  # noqa: F811 - the fixture imported above
    challenge,
    splits,
    teams,
    make_entry,
    artifacts,
):
    page, size = screen
    journey = Journey(page, "overall", size, artifacts)
    second = Task.objects.create(
        challenge=challenge, task_id="single-source", name="Single-source QA", order=1
    )
    single = Split.objects.create(task=second, kind=Split.Kind.PUBLIC_TEST)
    public = splits["public-test"]
    make_entry(teams["alpha"], public, 0.40, method="alpha-agent")
    make_entry(teams["beta"], public, 0.25, method="beta-agent")
    beta = make_entry(teams["beta"], single, 0.50, method="beta-agent")
    make_entry(teams["gamma"], single, 0.10, method="gamma-agent")
    challenge.overall = {"title": "Overall ranking", "method": "average-rank"}
    challenge.save()

    page.goto(f"/c/{challenge.slug}/?tab=leaderboards")
    page.locator("#overall-link a").click()
    page.wait_for_url("**/overall/")
    rows = page.locator("#overall tbody tr")
    cells = [rows.nth(i).locator("td").all_inner_texts()[:3] for i in range(rows.count())]
    # beta (2 + 1) / 2; alpha (1 + 3) / 2 (missing on single-source); gamma (3 + 2) / 2
    assert [[text.strip() for text in row] for row in cells] == [
        ["1", "beta", "1.50"],
        ["2", "alpha", "2.00"],
        ["3", "gamma", "2.50"],
    ]
    assert "ranked after every team on that board" in journey.main_text()
    journey.see("overall")
    rows.nth(0).locator("a", has_text="#1").click()
    page.wait_for_url(f"**/single-source/public-test/entries/{beta.pk}/")
    page.goto(f"/c/{challenge.slug}/single-source/public-test/")
    page.locator("#overall-link").click()
    page.wait_for_url("**/overall/")
    journey.see("overall-again")
