"""An M2RAG task in the browser: its leaderboard with the eight metrics and overall, and a run
page showing an answer as it reads, its placed image loaded, nothing the team wrote run."""

from __future__ import annotations

import dataclasses

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from evaluator.benchmarks.m2rag import M2RAG
from evaluator.benchmarks.m2rag.record import GradedAnswer, to_row
from leaderboard.models import ItemAnswer, ItemVerdict, Split, Task
from tests.leaderboard.test_m2rag_answers import HOSTILE, graded
from tests.leaderboard.test_run_page import jpeg

from .axe import assert_accessible

BOARD = "/c/crag-mm-2026/m2rag/public-test/"
HEADERS = ["Fluency", "Relevance", "Context precision", "Faithfulness", "Image recall",
           "Image coherence", "Image helpfulness", "Image reference", "Overall"]  # fmt: skip


def answer(quality: float) -> GradedAnswer:
    """A judged answer placing images 0 and 2 whose text metrics are all ``quality``."""
    item = graded(HOSTILE, (0, 2))
    text = dict.fromkeys(("fluency", "relevance", "context_precision", "faithfulness"), quality)
    return dataclasses.replace(item, **text, image_recall=0.5).with_grade()


@pytest.fixture
def m2rag_board(challenge, teams, make_entry, make_user):
    task = Task.objects.create(
        challenge=challenge, task_id="m2rag", name="M2RAG", benchmark="m2rag",
        primary_metric="overall", image_search_enabled=False, web_search_enabled=False,
    )  # fmt: skip
    split = Split.objects.create(task=task, kind=Split.Kind.PUBLIC_TEST, items=1)
    split.bundle.name = "splits/m2rag-public-test.tar"
    split.save(update_fields=["bundle"])
    runs = {}
    for team, method, quality in (("alpha", "places-images", 0.9), ("beta", "text-only", 0.4)):
        item = answer(quality)
        runs[team] = make_entry(
            teams[team], split, None, method=method, scores=M2RAG().aggregate([item])
        )
        stored = default_storage.save(f"thumbnails/m2rag/{team}.jpg", ContentFile(jpeg()))
        row = ItemAnswer.objects.create(
            run=runs[team], group="science", item_key="q1", position=0, images={"0": stored},
            response="{}",
        )  # fmt: skip
        ItemVerdict.objects.create(
            answer=row, verdict=item.grade, judge_id="j", detail=to_row(item)
        )
    return {"run": runs["alpha"], "ann": make_user("ann", team=teams["alpha"])}


def test_the_m2rag_board_and_a_run_page_as_a_team_reads_them(page, m2rag_board, artifacts):
    page.goto(BOARD)
    headers = [h.strip() for h in page.locator("#leaderboard thead th").all_inner_texts()]
    shown_metrics = [h for h in headers if h in HEADERS]
    assert shown_metrics[0] == "Overall" and sorted(shown_metrics) == sorted(HEADERS)
    rows = page.locator("#leaderboard tbody tr")
    assert rows.count() == 2
    assert rows.nth(0).locator("td").nth(2).inner_text().startswith("places-images")
    page.screenshot(path=str(artifacts / "browser-m2rag-board.png"), full_page=True)

    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(f"/runs/{m2rag_board['run'].pk}/")
    page.fill("#id_login", "ann")
    page.fill("#id_password", "pw-secret-123")
    page.click("button:has-text('Sign in')")
    page.wait_for_url(f"**/runs/{m2rag_board['run'].pk}/")
    shown = page.locator(".answer-markdown")
    assert shown.locator("h1").inner_text() == "Colours"
    image = shown.locator("img")
    assert image.count() == 1 and image.get_attribute("alt") == "a red circle"
    page.wait_for_function("document.querySelector('.answer-markdown img').complete")
    assert image.evaluate("img => img.naturalWidth") == 16  # Podium's stored copy, loaded
    text = shown.inner_text()
    assert "<script>alert('x')</script>" in text and "[image: tracker]" in text
    assert "coherence 6/10, helpfulness 9/10, reference 4/10" in text
    assert shown.locator("script").count() == 0 and dialogs == []  # nothing of it ran
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert_accessible(page, "an M2RAG run page", include=[".answer-markdown"])
    shown.screenshot(path=str(artifacts / "browser-m2rag-answer.png"))
