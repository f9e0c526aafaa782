"""Challenges as code through the REST API and ``python -m podium.cli challenge``: only a
challenge's organisers import, diff or export it (a new one: staff); problems come back with
their file, line and field."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from evaluator.zips import write_zip
from leaderboard import api_tokens
from leaderboard.models import Challenge, ChallengeVersion
from podium import cli
from tests.leaderboard.bundle_support import edit, write_bundle


@pytest.fixture
def bundle(tmp_path) -> Path:
    return write_bundle(tmp_path / "bundle")


def zipped(root: Path) -> io.BytesIO:
    out = io.BytesIO()
    write_zip(root, out)
    out.seek(0)
    out.name = "bundle.zip"
    return out


def post(api: APIClient, action: str, root: Path):
    return api.post(f"/api/bundles/{action}/", {"bundle": zipped(root)}, format="multipart")


@pytest.mark.django_db
def test_organisers_validate_diff_import_and_export_through_the_api(bundle, make_user):
    staff, organiser, stranger = make_user(staff=True), make_user(), make_user()
    api = APIClient()
    assert post(api, "validate", bundle).status_code in (401, 403)  # signed out
    api.force_authenticate(stranger)
    refused = post(api, "import", bundle)
    assert refused.status_code == 403 and not Challenge.objects.exists()
    api.force_authenticate(staff)
    checked = post(api, "validate", bundle)
    assert checked.status_code == 200, checked.json()
    assert checked.json()["checklist"] == [] and not Challenge.objects.exists()
    done = post(api, "import", bundle)
    assert done.json()["version"] == 1
    assert ChallengeVersion.objects.get().via == "api"
    challenge = Challenge.objects.get()
    challenge.organisers.add(organiser)

    edit(bundle, "per_day: 3", "per_day: 4")
    api.force_authenticate(stranger)
    for action in ("validate", "diff", "import"):
        assert post(api, action, bundle).status_code == 403
    assert api.get("/api/challenges/bundle-test/bundle/").status_code == 404
    api.force_authenticate(organiser)
    diff = post(api, "diff", bundle).json()
    assert diff["changes"] == ["~ tasks.multi-turn-qa.quotas.per_day: 3 -> 4"]
    assert post(api, "import", bundle).json()["version"] == 2
    assert ChallengeVersion.objects.get(number=2).imported_by == organiser
    exported = api.get("/api/challenges/bundle-test/bundle/")
    assert exported.status_code == 200 and exported["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(b"".join(exported.streaming_content))).namelist()
    assert "splits/multi-turn-qa/private-test.tar" in names


@pytest.mark.django_db
def test_the_api_names_every_problem_with_file_line_and_field(bundle, make_user):
    edit(bundle, "per_day: 3", "per_day: lots")
    api = APIClient()
    api.force_authenticate(make_user(staff=True))
    answer = post(api, "import", bundle)
    assert answer.status_code == 400
    assert answer.json() == {
        "problems": [
            {
                "file": "challenge.yaml",
                "line": 21,
                "field": "tasks[0].quotas.per_day",
                "message": "'lots' is not of type 'integer', 'null'",
            }
        ]
    }
    assert api.post("/api/bundles/import/", {}, format="multipart").status_code == 400


@pytest.mark.django_db(transaction=True)
def test_the_cli_imports_a_bundle_directory_and_exports_it(
    bundle, make_user, live_server, capsys, tmp_path
):
    token = api_tokens.create(make_user(staff=True), "tests")[1]
    base = ["--url", live_server.url, "--token", token, "challenge"]
    assert cli.main([*base, "import", str(bundle)]) == 0
    assert "imported as version 1" in capsys.readouterr().out
    (bundle / "pages" / "rules.md").write_text("# Rules\n\nBe kinder.\n")
    assert cli.main([*base, "diff", str(bundle)]) == 0
    assert capsys.readouterr().out == (
        "bundle-test: changes:\n  ~ challenge.pages.rules: +1 -1 lines\n"
        "    --- live/rules\n    +++ bundle/rules\n    @@ -1,3 +1,3 @@\n     # Rules\n     \n"
        "    -Be kind.\n    +Be kinder.\n"
    )
    (bundle / "pages" / "rules.md").write_text("# Rules\n\nBe kind.\n")
    edit(bundle, "per_day: 3", "per_day: nine")
    assert cli.main([*base, "validate", str(bundle)]) == 1
    assert "challenge.yaml:21: tasks[0].quotas.per_day: 'nine' is not of type" in (
        capsys.readouterr().err
    )
    out = tmp_path / "exported.zip"
    assert cli.main([*base, "export", "bundle-test", "--output", str(out)]) == 0
    assert zipfile.is_zipfile(out)
    Challenge.objects.all().delete()
    assert cli.main([*base, "import", str(out)]) == 0
    assert Challenge.objects.get().tasks.get().quota_per_day == 3


@pytest.mark.django_db
def test_the_bundle_page_and_its_download_are_for_organisers_only(bundle, make_user, client):
    from leaderboard.challenge_bundle.importer import import_bundle

    import_bundle(bundle)
    stranger, organiser = make_user(), make_user()
    Challenge.objects.get().organisers.add(organiser)
    page, download = "/c/bundle-test/bundle/", "/c/bundle-test/bundle/export.zip"
    assert client.get(page).status_code == 302  # to sign in
    client.force_login(stranger)
    assert client.get(page).status_code == 403
    assert client.get(download).status_code == 403
    assert client.post(page, {"action": "import", "bundle": zipped(bundle)}).status_code == 403
    client.force_login(organiser)
    assert client.get(download).status_code == 200
    other = write_bundle(bundle.parent / "other", slug="another-challenge")
    shown = client.post(page, {"action": "validate", "bundle": zipped(other)})
    assert "this bundle is not &#x27;bundle-test&#x27;" in shown.content.decode()
    assert not Challenge.objects.filter(slug="another-challenge").exists()
