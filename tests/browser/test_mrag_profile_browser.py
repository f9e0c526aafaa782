"""An MRAG-Suite entry's profile in Chromium: the chart drawn with a bar per modality and a
title on each, its table and the GPD - GO gap, accessible, and within a phone's width."""

from __future__ import annotations

from leaderboard.models import EvaluationRun
from tests.browser.axe import assert_accessible
from tests.leaderboard.test_mrag_boards import board, entry_url, headline, mrag_scores

__all__ = ["board", "mrag_scores"]  # fixtures used by name


def test_an_mrag_entry_shows_its_profile_chart(
    chromium, live_server, board, mrag_scores, artifacts
):
    run = EvaluationRun.objects.get(submission__method_name="alpha-agent", setting="GPD")
    scores = headline(mrag_scores, "alpha", "GPD")
    context = chromium.new_context(
        base_url=live_server.url, viewport={"width": 1280, "height": 900}
    )
    page = context.new_page()
    try:
        page.goto(entry_url(run))
        section = page.locator("#profile")
        chart = section.locator("svg.chart")
        assert chart.get_attribute("aria-label") == "MM-RAGChecker diagnosis"
        box = chart.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 300
        legend = [t.strip() for t in section.locator(".legend span").all_inner_texts()]
        assert legend == ["all items", "image items", "text items"]
        titles = chart.locator("rect title").all_text_contents()
        assert len(titles) == 33
        assert f"text items: {scores['faithfulness_text']:.1f}" in titles
        # each series has its own colour, as the legend's swatches
        fills = {
            series: chart.locator(f"rect.s{series}").first.evaluate("e => getComputedStyle(e).fill")
            for series in range(3)
        }
        assert len(set(fills.values())) == 3, fills
        assert section.locator("dt").inner_text() == "GPD - GO accuracy gap"
        page.screenshot(path=str(artifacts / "browser-mrag-profile.png"), full_page=True)
        assert_accessible(page, "an MRAG-Suite entry's page", include=["#profile"])
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(entry_url(run))
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"the entry page is {width} px wide at 390 px"
    finally:
        context.close()
