"""The labelling page in a real browser, driven by the keyboard only: a digit labels the item
with that verdict of the benchmark's menu and brings the next, "n" opens the note (keys typed
there are the note's, Esc leaves it), "s" skips, "u" goes back to change a label; the page
passes axe."""

from __future__ import annotations

from django.test import Client

from leaderboard import audits
from leaderboard.models import AuditLabel
from tests.browser.axe import assert_accessible
from tests.leaderboard.test_judge_audit import JUDGE, world  # noqa: F401 - fixture by name


def signed_in(page, live_server, user) -> None:
    """The browser carries ``user``'s session: no mouse, no form."""
    client = Client()
    client.force_login(user)
    cookie = client.cookies["sessionid"]
    page.context.add_cookies([{"name": "sessionid", "value": cookie.value, "url": live_server.url}])


def test_a_labeller_labels_skips_and_notes_with_the_keyboard_only(
    page,
    live_server,
    world,  # noqa: F811 - the fixture imported above
    artifacts,
):
    audit = audits.open_audit(world["split"], world["org"], JUDGE, 3, seed=2)
    items = list(audit.items.order_by("position"))
    signed_in(page, live_server, world["org"])
    page.goto(f"/audits/{audit.pk}/label/")
    assert page.locator("#label-item").get_attribute("data-position") == "0"
    assert items[0].question in page.locator("#label-question").inner_text()
    keys = page.locator("#label-form").inner_text()
    assert "1 correct" in keys and "2 missing" in keys and "3 hallucinated" in keys
    assert_accessible(page, "the labelling page")
    page.screenshot(path=str(artifacts / "audit-label.png"), full_page=True)

    with page.expect_navigation():
        page.keyboard.press("1")
    assert page.locator("#label-item").get_attribute("data-position") == "1"

    page.keyboard.press("n")
    page.keyboard.type("2 dates given, 1 wrong")  # digits in the note send nothing
    assert page.locator("#label-item").get_attribute("data-position") == "1"
    page.keyboard.press("Escape")
    with page.expect_navigation():
        page.keyboard.press("3")
    assert page.locator("#label-item").get_attribute("data-position") == "2"

    with page.expect_navigation():
        page.keyboard.press("s")
    assert "Nothing left for you to label" in page.locator("#label-done").inner_text()
    assert "you: 2 labelled, 1 skipped" in page.locator("#label-progress").inner_text()

    with page.expect_navigation():  # back to the skipped item, and label it after all
        page.keyboard.press("u")
    assert page.locator("#label-item").get_attribute("data-position") == "2"
    assert "Your label: skipped" in page.locator("#label-own").inner_text()
    with page.expect_navigation():
        page.keyboard.press("2")
    assert "you: 3 labelled, 0 skipped" in page.locator("#label-progress").inner_text()

    labels = {
        label.item_id: (label.verdict, label.note)
        for label in AuditLabel.objects.filter(labeller=world["org"])
    }
    assert labels == {
        items[0].pk: ("correct", ""),
        items[1].pk: ("hallucinated", "2 dates given, 1 wrong"),
        items[2].pk: ("missing", ""),
    }


def test_the_organisers_audit_pages_pass_axe(page, live_server, world, artifacts):  # noqa: F811
    audit = audits.open_audit(world["split"], world["org"], JUDGE, 4, "domain", 2, seed=2)
    verdicts = ["correct", "missing", "hallucinated", ""]
    for item, verdict in zip(audit.items.all(), verdicts, strict=True):
        audits.record_label(item, world["org"], verdict, "a note")
    signed_in(page, live_server, world["org"])
    for name, url in (("list", "/c/crag-mm-2026/audits/"), ("results", f"/audits/{audit.pk}/")):
        page.goto(url)
        assert_accessible(page, f"the audits' {name} page")
        page.screenshot(path=str(artifacts / f"audit-{name}.png"), full_page=True)
    assert "Cohen's kappa" in page.locator("#judge-figures").inner_text()
