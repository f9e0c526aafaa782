"""The web form: sign-in, upload, validation messages on the page, quotas, constant memory."""

from __future__ import annotations

import re
import tarfile
import tracemalloc

import httpx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from leaderboard.models import Challenge, Submission, Task

from .submit_support import broker, image_archive, open_splits

__all__ = ["broker", "open_splits"]  # fixtures used by name

URL = reverse("leaderboard:submit", args=["crag-mm-2026"])


@pytest.fixture
def member(make_user, teams):
    return make_user("ann", team=teams["alpha"])


@pytest.fixture
def browser(client, member):
    client.force_login(member)
    return client


def _form(team, **fields):
    return {
        "team": team.pk,
        "artifact_kind": "registry-ref",
        "method_name": "m",
        "tasks": ["multi-turn-qa"],
        **fields,
    }


def test_signing_in_is_required(client, open_splits):
    response = client.get(URL)
    assert response.status_code == 302 and response.url.startswith(reverse("account_login"))


def test_the_page_shows_the_form_what_is_evaluated_and_the_quotas(browser, open_splits, teams):
    page = browser.get(URL).content.decode()
    assert 'enctype="multipart/form-data"' in page and "leaderboard/submit.js" in page
    assert "Files up to 20.0" in page
    assert re.search(r'name="tasks" value="multi-turn-qa"[^>]*checked', page)
    assert "every split: validation, public test, private test" in page
    assert re.search(r"<td>alpha</td><td>multi-turn-qa</td>\s*<td class=\"num\">0 / 5</td>", page)
    assert re.search(r'<td class="num">1</td>\s*<td class="muted"></td>', page)  # left now
    assert 'name="is_baseline"' not in page  # organisers only


def test_a_user_without_a_team_is_told_so(client, make_user, open_splits):
    client.force_login(make_user("loner"))
    assert "You are not in a team yet" in client.get(URL).content.decode()


def test_uploading_an_archive_queues_runs_and_says_so(
    browser, open_splits, teams, tmp_path, django_capture_on_commit_callbacks
):
    archive = image_archive(tmp_path / "agent.tar")
    upload = SimpleUploadedFile("agent.tar", archive.read_bytes())
    form = _form(teams["alpha"], artifact_kind="image-archive", artifact=upload)
    form["registry_ref"] = "ignored/for:an-upload"
    with django_capture_on_commit_callbacks() as callbacks:
        response = browser.post(URL, form, follow=True)
    submission = Submission.objects.get()
    assert response.redirect_chain == [(reverse("leaderboard:my-submissions"), 302)]
    assert f"Submission #{submission.pk} received: 3 evaluation runs queued." in (
        response.content.decode()
    )
    assert submission.artifact_size == archive.stat().st_size and submission.registry_ref == ""
    assert len(callbacks) == 3


def test_a_bad_upload_comes_back_with_the_reason_next_to_the_field(browser, open_splits, teams):
    upload = SimpleUploadedFile("agent.tar", b"this is not a tar archive" * 40)
    response = browser.post(
        URL, _form(teams["alpha"], artifact_kind="image-archive", artifact=upload)
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "agent.tar: not a tar archive" in page and 'value="m"' in page  # input kept
    response = browser.post(URL, _form(teams["alpha"], registry_ref="a/b", paper_url="x y"))
    assert "Enter a valid URL" in response.content.decode()
    response = browser.post(URL, _form(teams["alpha"], registry_ref="Bad Ref"))
    assert "is not an image reference" in response.content.decode()
    assert not Submission.objects.exists()


def test_another_team_cannot_be_chosen(browser, open_splits, teams):
    response = browser.post(URL, _form(teams["beta"], registry_ref="a/b"))
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    assert not Submission.objects.exists()


def test_an_exhausted_quota_is_explained(browser, open_splits, teams):
    Task.objects.update(quota_total=0)
    response = browser.post(URL, _form(teams["alpha"], registry_ref="a/b"))
    assert response.status_code == 429
    assert "all 0 submissions allowed on task multi-turn-qa are used" in response.content.decode()


def test_organisers_may_mark_a_baseline_participants_cannot(browser, open_splits, teams, member):
    browser.post(URL, _form(teams["alpha"], registry_ref="a/b", is_baseline="on"))
    assert Submission.objects.get().is_baseline is False  # the field is not theirs
    Challenge.objects.get().organisers.add(member)
    assert 'name="is_baseline"' in browser.get(URL).content.decode()
    browser.post(URL, _form(teams["alpha"], registry_ref="a/b", is_baseline="on"))
    assert Submission.objects.filter(is_baseline=True).count() == 1


UPLOAD_BYTES = 200 * 1024 * 1024


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_200_mb_upload_streams_through_in_constant_memory(
    live_server, broker, open_splits, teams, member, tmp_path
):
    path = tmp_path / "big.tar"
    with tarfile.open(path, "w") as archive, open("/dev/zero", "rb") as zeros:
        archive.addfile(tarfile.TarInfo("manifest.json"))
        layer = tarfile.TarInfo("layer.tar")
        layer.size = UPLOAD_BYTES
        archive.addfile(layer, zeros)
    session = Client()
    session.force_login(member)
    cookies = {"sessionid": session.cookies["sessionid"].value}
    with httpx.Client(base_url=live_server.url, cookies=cookies, timeout=120) as http:
        page = http.get(URL).text
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1]
        form = {
            **_form(teams["alpha"], artifact_kind="image-archive"),
            "csrfmiddlewaretoken": token,
        }
        tracemalloc.start()
        try:
            with path.open("rb") as upload:
                response = http.post(URL, data=form, files={"artifact": ("big.tar", upload)})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert response.status_code == 302, response.text[:2000]
    submission = Submission.objects.get()
    assert submission.artifact_size == path.stat().st_size > UPLOAD_BYTES
    assert peak < 16 * 1024 * 1024, f"peak Python memory {peak / 2**20:.1f} MiB for 200 MiB"
    print(f"peak traced memory while uploading 200 MiB: {peak / 2**20:.2f} MiB")
