"""Pages that were wider than a phone or failed axe on the walk of issue 35, at 390 px (and
1400 px): the starter kit page once the kit is made (its sha256 wraps), and the tables that
scroll sideways on a phone (the submit page's quotas, an entry's headline, an audit's confusion
matrix), each a focusable, named region. Every page is checked by axe and screenshotted."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from leaderboard import audits
from leaderboard.models import EvaluationRun, Task
from tests.browser.axe import assert_accessible
from tests.browser.test_audit_browser import signed_in
from tests.leaderboard.kit_support import body_of, kit_challenge, kit_settings
from tests.leaderboard.test_judge_audit import JUDGE, world

__all__ = ["kit_challenge", "kit_settings", "world"]  # fixtures used by name

SIZES = ((390, 844), (1400, 900))
SCROLLED = '.table-scroll[role="region"][tabindex="0"][aria-label]'


def check(page, artifacts, name: str, url: str, *, region: str | None = None) -> None:
    """``url`` at each size: no wider than the screen, axe passes, ``region`` (a table's id) in
    a focusable, named scrolling box."""
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(url)
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= width, f"{name} is {wide} px wide at {width} px"
        assert_accessible(page, f"{name} at {width} px")
        if region:
            assert page.locator(f"{SCROLLED} > table#{region}").count() == 1, region
        page.screenshot(path=str(artifacts / f"walk-{name}-{width}.png"), full_page=True)


def test_the_kit_page_fits_a_phone_once_the_kit_is_made(
    page, live_server, kit_challenge, make_user, teams, artifacts
):
    ann = make_user("ann", team=teams["alpha"])
    client = Client()
    client.force_login(ann)
    kit = client.get(reverse("leaderboard:kit-download", args=[kit_challenge.slug]))
    digest = kit["X-Content-SHA256"]
    assert len(body_of(kit)) > 0 and len(digest) == 64
    signed_in(page, live_server, ann)
    check(page, artifacts, "kit", reverse("leaderboard:kit", args=[kit_challenge.slug]))
    assert digest in page.locator("#kit-archive").inner_text()


def test_the_submit_pages_quotas_scroll_in_a_focusable_region(
    page, live_server, splits, make_user, teams, artifacts
):
    for split in splits.values():  # data to evaluate: the form and its quotas are shown
        split.bundle.name, split.items = f"splits/{split.kind}.tar", 4
        split.save(update_fields=["bundle", "items"])
    Task.objects.update(quota_per_day=5, quota_total=20, quota_concurrent=2)
    ann = make_user("ann", team=teams["alpha"])
    signed_in(page, live_server, ann)
    check(page, artifacts, "submit", "/c/crag-mm-2026/submit/", region="quotas")
    quotas = page.locator("#quotas tbody tr td")
    assert quotas.nth(2).inner_text() == "0 / 5" and quotas.nth(3).inner_text() == "0 / 20"


def test_an_entrys_headline_scrolls_in_a_focusable_region(
    page, live_server, public_entries, make_user, artifacts
):
    run = EvaluationRun.objects.get(submission__method_name="beta-rag")
    url = reverse(
        "leaderboard:entry", args=["crag-mm-2026", "multi-turn-qa", "public-test", run.pk]
    )
    signed_in(page, live_server, make_user("visitor"))
    check(page, artifacts, "entry", url, region="headline")
    assert "beta-rag" in page.locator("#entry").inner_text()


def test_an_audits_confusion_matrix_scrolls_in_a_focusable_region(
    page, live_server, world, artifacts
):
    audit = audits.open_audit(world["split"], world["org"], JUDGE, 4, "domain", 2, seed=2)
    verdicts = ["correct", "missing", "hallucinated", ""]
    for item, verdict in zip(audit.items.all(), verdicts, strict=True):
        audits.record_label(item, world["org"], verdict, "a note")
    signed_in(page, live_server, world["org"])
    check(page, artifacts, "audit", f"/audits/{audit.pk}/", region="confusion")
    assert page.locator("#confusion tbody tr").count() == 3
