"""Staff make a new challenge from the web, in a real browser: from the challenge list to
"A new challenge", a bundle with a mistake refused naming its file, line and field, the
corrected one checked (its changes, its pages' text, nothing made yet), then imported; the
export of its answers from the challenge's page, as CSV. Every page is checked by axe, at 1400
and 390 px."""

from __future__ import annotations

import csv

import pytest

from evaluator.zips import write_zip
from leaderboard.answer_export import COLUMNS
from leaderboard.models import Challenge
from tests.browser.test_journeys import Journey, screen  # noqa: F401 - fixture used by name
from tests.leaderboard.bundle_support import edit, write_bundle

pytestmark = pytest.mark.django_db(transaction=True)


def test_staff_make_a_challenge_from_a_bundle_and_export_its_answers(
    screen,  # noqa: F811 - the fixture imported above
    make_user,
    artifacts,
    tmp_path,
):
    page, size = screen
    journey = Journey(page, "new-challenge", size, artifacts)
    make_user("sam", staff=True)
    bundle = write_bundle(tmp_path / "bundle", slug="from-web", status="draft")
    (bundle / "pages" / "rules.md").write_text("# Rules\n\n" + "Be kind to every judge. " * 12)

    def upload(name: str, action: str) -> None:
        with (tmp_path / name).open("wb") as out:
            write_zip(bundle, out)
        page.set_input_files("#id_bundle", str(tmp_path / name))
        page.get_by_role("button", name=action, exact=True).click()
        page.wait_for_load_state()

    page.goto("/accounts/login/")
    page.fill("#id_login", "sam")
    page.fill("#id_password", "pw-secret-123")
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()
    page.goto("/")
    page.get_by_role("link", name="A new challenge from a bundle").click()
    page.wait_for_url("**/challenges/new/")
    journey.see("new-page")

    edit(bundle, "per_day: 3", "per_day: ten")
    upload("mistake.zip", "Import")
    problems = page.locator("#bundle-problems").inner_text()
    assert "challenge.yaml:21 tasks[0].quotas.per_day: 'ten' is not of type" in problems
    assert not Challenge.objects.exists()
    journey.see("problems")

    edit(bundle, "per_day: ten", "per_day: 3")
    upload("checked.zip", "Check and show the changes")
    assert "+ challenge.pages.rules: +3 -0 lines" in page.inner_text("#bundle-changes")
    assert "+Be kind to every judge." in page.inner_text("#page-diff-rules")
    assert not Challenge.objects.exists()
    journey.see("checked")

    upload("imported.zip", "Import")
    assert "Imported as version 1." in page.inner_text("#bundle-outcome")
    journey.see("imported")
    page.locator("#bundle-created").get_by_role("link", name="Open Bundle test").click()
    page.wait_for_url("**/c/from-web/")
    page.get_by_role("navigation", name="Organisers' console").get_by_role(
        "link", name="Export answers"
    ).click()
    page.wait_for_url("**/c/from-web/answers/")
    journey.see("export")
    with page.expect_download() as download:
        page.locator("#export-all").get_by_role("link", name="CSV").click()
    with open(download.value.path(), newline="") as exported:
        assert list(csv.reader(exported)) == [list(COLUMNS)]  # no run yet: the header alone
