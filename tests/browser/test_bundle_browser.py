"""An organiser's journey with the challenge as code, in a real browser: from the challenge's
page to its bundle page, a bundle with a mistake refused naming its file, line and field, the
corrected one checked (its changes shown, nothing changed yet), then imported as version 2; the
live challenge downloaded as a bundle. Every page is checked by axe, at 1400 and 390 px."""

from __future__ import annotations

import zipfile

import pytest

from evaluator.zips import write_zip
from leaderboard.challenge_bundle.importer import import_bundle
from leaderboard.models import Challenge, ChallengeVersion, Task
from tests.browser.test_journeys import Journey, screen  # noqa: F401 - fixture used by name
from tests.leaderboard.bundle_support import edit, write_bundle

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_organiser_uploads_checks_and_imports_a_bundle(
    screen,  # noqa: F811 - the fixture imported above
    make_user,
    artifacts,
    tmp_path,
):
    page, size = screen
    journey = Journey(page, "bundle", size, artifacts)
    olga = make_user("olga")
    bundle = write_bundle(tmp_path / "bundle")
    import_bundle(bundle)
    Challenge.objects.get().organisers.add(olga)

    def upload(name: str, action: str) -> None:
        with (tmp_path / name).open("wb") as out:
            write_zip(bundle, out)
        page.set_input_files("#id_bundle", str(tmp_path / name))
        page.get_by_role("button", name=action).click()
        page.wait_for_load_state()

    page.goto("/accounts/login/")
    page.fill("#id_login", "olga")
    page.fill("#id_password", "pw-secret-123")
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()
    page.goto("/c/bundle-test/")
    page.get_by_role("navigation", name="Organisers' console").get_by_role(
        "link", name="Challenge as code"
    ).click()
    page.wait_for_url("**/c/bundle-test/bundle/")
    journey.see("bundle-page")

    edit(bundle, "per_day: 3", "per_day: ten")
    upload("mistake.zip", "Import as a new version")
    problems = page.locator("#bundle-problems").inner_text()
    assert "challenge.yaml:21 tasks[0].quotas.per_day: 'ten' is not of type" in problems
    journey.see("problems")

    edit(bundle, "per_day: ten", "per_day: 10")
    upload("checked.zip", "Check and show the changes")
    assert "~ tasks.multi-turn-qa.quotas.per_day: 3 -> 10" in page.inner_text("#bundle-changes")
    assert "The publish checklist passes." in journey.main_text()
    assert Task.objects.get().quota_per_day == 3
    journey.see("checked")

    upload("imported.zip", "Import as a new version")
    assert "Imported as version 2." in page.inner_text("#bundle-outcome")
    assert Task.objects.get().quota_per_day == 10
    version = ChallengeVersion.objects.get(number=2)
    assert (version.imported_by, version.via) == (olga, "upload")
    assert "olga" in page.inner_text("#bundle-versions")
    journey.see("imported")

    with page.expect_download() as download:
        page.locator("#bundle-export").click()
    path = download.value.path()
    assert "splits/multi-turn-qa/private-test.tar" in zipfile.ZipFile(path).namelist()
