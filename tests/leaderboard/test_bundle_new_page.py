"""A new challenge from the web (``/challenges/new/``): only staff may open it, and a stranger is
refused before the upload is read; a bad zip is named; a checked bundle shows its changes, each
page's text differences and the publish checklist, and changes nothing; importing makes it."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from evaluator.zips import write_zip
from leaderboard.challenge_bundle.importer import import_bundle
from leaderboard.challenge_bundle.page_diff import text_diff
from leaderboard.models import Challenge, ChallengeVersion
from tests.leaderboard.bundle_support import write_bundle

NEW = "/challenges/new/"


def zipped(root, name: str = "bundle.zip") -> io.BytesIO:
    out = io.BytesIO()
    write_zip(root, out)
    out.seek(0)
    out.name = name
    return out


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_only_staff_open_the_page_and_strangers_are_refused_before_the_upload(make_user, tmp_path):
    assert Client().get(NEW).status_code == 302  # to the sign-in page
    organiser = make_user()
    write_bundle(tmp_path / "theirs", slug="theirs")
    import_bundle(tmp_path / "theirs")
    Challenge.objects.get().organisers.add(organiser)
    for user in (make_user(), organiser):  # organising another challenge is not enough
        client = signed_in(user)
        assert client.get(NEW).status_code == 403
        refused = client.post(NEW, {"action": "import", "bundle": io.BytesIO(b"not read")})
        assert refused.status_code == 403
    assert Challenge.objects.count() == 1
    staff = signed_in(make_user(staff=True))
    assert 'id="challenge-new"' in staff.get("/").content.decode()
    assert 'id="challenge-new"' not in signed_in(organiser).get("/").content.decode()
    assert staff.get(NEW).status_code == 200


@pytest.mark.django_db
def test_a_bad_zip_is_named_and_nothing_is_made(make_user):
    staff = signed_in(make_user(staff=True))
    bad = io.BytesIO(b"this is not a zip")
    bad.name = "oops.zip"
    page = staff.post(NEW, {"action": "import", "bundle": bad}).content.decode()
    assert 'id="bundle-problems"' in page and "oops.zip" in page
    assert "nothing was imported" in page
    assert not Challenge.objects.exists()
    missing = staff.post(NEW, {"action": "import"}).content.decode()
    assert "choose a bundle (a zip with challenge.yaml at its root)" in missing


@pytest.mark.django_db
def test_checking_shows_changes_page_text_and_checklist_then_import_makes_it(make_user, tmp_path):
    staff_user = make_user(staff=True)
    staff = signed_in(staff_user)
    bundle = write_bundle(tmp_path / "bundle", slug="from-web", status="draft")
    checked = staff.post(NEW, {"action": "validate", "bundle": zipped(bundle)})
    text = checked.content.decode()
    assert checked.status_code == 200 and not Challenge.objects.exists()
    assert "+ challenge.pages.rules: +3 -0 lines" in text
    assert "+ tasks.multi-turn-qa.quotas.per_day: 3" in text
    assert '<pre class="page-diff" id="page-diff-rules">' in text
    assert "<ins>+# Rules</ins>" in text and "<ins>+Be kind.</ins>" in text
    assert 'id="bundle-checklist"' in text or "The publish checklist passes." in text
    made = staff.post(NEW, {"action": "import", "bundle": zipped(bundle)}).content.decode()
    assert "Imported as version 1." in made
    challenge = Challenge.objects.get(slug="from-web")
    assert list(challenge.organisers.all()) == [staff_user]
    assert ChallengeVersion.objects.get().via == "upload"
    assert 'href="/c/from-web/"' in made and 'href="/c/from-web/bundle/"' in made


@pytest.mark.django_db
def test_a_changed_page_is_shown_as_lines_removed_and_added(make_user, tmp_path):
    staff = signed_in(make_user(staff=True))
    bundle = write_bundle(tmp_path / "bundle", slug="from-web")
    import_bundle(bundle)
    (bundle / "pages" / "rules.md").write_text("# Rules\n\nBe kinder.\nShare.\n")
    text = staff.post(NEW, {"action": "validate", "bundle": zipped(bundle)}).content.decode()
    assert "~ challenge.pages.rules: +2 -1 lines" in text
    assert "<del>-Be kind.</del>\n<ins>+Be kinder.</ins>\n<ins>+Share.</ins>" in text
    assert "--- live/rules\n+++ bundle/rules\n@@ -1,3 +1,4 @@\n # Rules\n \n" in text
    changes = text.split('id="bundle-changes"')[1].split("</pre>")[0]
    assert not re.search("[0-9a-f]{64}", changes)  # no page digest
    api = APIClient()
    api.force_authenticate(User.objects.get(is_staff=True))
    answer = api.post("/api/bundles/diff/", {"bundle": zipped(bundle)}, format="multipart")
    assert answer.json()["changes"] == ["~ challenge.pages.rules: +2 -1 lines"]
    assert answer.json()["pages"] == {
        "rules": ["--- live/rules", "+++ bundle/rules", "@@ -1,3 +1,4 @@", " # Rules", " ",
                  "-Be kind.", "+Be kinder.", "+Share."]
    }  # fmt: skip


def test_text_diff_of_a_page_and_of_one_too_long_to_compare():
    assert text_diff("a\nb\nc\n", "a\nB\nc\n", "rules") == [
        "--- live/rules",
        "+++ bundle/rules",
        "@@ -1,3 +1,3 @@",
        " a",
        "-b",
        "+B",
        " c",
    ]
    long = "x\n" * 5_001
    assert text_diff("", long, "data") == ["data: 0 lines -> 5001 lines (too long to compare here)"]


@pytest.mark.django_db
def test_an_upload_past_the_bundle_limits_is_refused_before_it_is_unpacked(
    make_user, tmp_path, settings
):
    settings.PODIUM_BUNDLE_MAX_MEMBERS = 3  # the bundle has more entries
    staff = signed_in(make_user(staff=True))
    bundle = write_bundle(tmp_path / "bundle", slug="from-web")
    page = staff.post(NEW, {"action": "import", "bundle": zipped(bundle, "big.zip")})
    problems = page.content.decode().split('id="bundle-problems"')[1].split("</div>")[0]
    assert "<code>big.zip</code> <code>(bundle)</code>: more than 3 entries" in problems
    assert not Challenge.objects.exists()
