"""The agent base image download with a real Docker engine: a ``docker save`` archive of a small
test image (standing in for podium/agent-base), streamed, saved once per image ID."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import tarfile
import uuid

import docker
import pytest
from django.urls import reverse

from leaderboard.kits import base_image
from workers import image_export

from .kit_support import body_of, kit_challenge, kit_settings

__all__ = ["kit_challenge", "kit_settings"]  # fixtures used by name

pytestmark = pytest.mark.docker


def _build(engine: docker.DockerClient, tag: str, text: str) -> str:
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        for name, data in (("Dockerfile", b"FROM scratch\nCOPY note /note\n"), ("note", text)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data.encode() if isinstance(data, str) else data))
    context.seek(0)
    image, _ = engine.images.build(fileobj=context, custom_context=True, tag=tag, rm=True)
    return image.id


@pytest.fixture
def test_base(settings, kit_challenge):
    engine = docker.from_env()
    tag = f"podium-test/kit-base:{uuid.uuid4().hex[:8]}"
    settings.PODIUM_BUILD_BASE_IMAGES = [tag]
    image_id = _build(engine, tag, "first")
    yield engine, tag, image_id
    with contextlib.suppress(docker.errors.ImageNotFound):
        engine.images.remove(image_id, force=True)


@pytest.fixture
def saves(monkeypatch):
    done = []
    save = image_export.save

    def counted(image, out):
        done.append(image.image_id)
        return save(image, out)

    monkeypatch.setattr(image_export, "save", counted)
    return done


def test_the_base_image_is_saved_once_per_image_id_and_streamed(
    client, make_user, test_base, saves
):
    engine, tag, image_id = test_base
    client.force_login(make_user("ann"))
    url = reverse("leaderboard:kit-base-image", args=["crag-mm-2026"])
    response = client.get(url)
    assert response.status_code == 200 and response.streaming
    body = body_of(response)
    assert response["X-Content-SHA256"] == hashlib.sha256(body).hexdigest()
    expected = tag.replace("/", "-").replace(":", "-") + ".tar"
    assert f'filename="{expected}"' in response["Content-Disposition"]
    with tarfile.open(fileobj=io.BytesIO(body)) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))
    assert manifest[0]["RepoTags"] == [tag], "docker load restores the tag"
    assert body_of(client.get(url)) == body and saves == [image_id], "saved once"
    page = client.get(reverse("leaderboard:kit", args=["crag-mm-2026"])).content.decode()
    assert response["X-Content-SHA256"] in page
    rebuilt = _build(engine, tag, "second")  # the tag moves to a new image ID: saved again
    try:
        again = client.get(url)
        assert again["X-Content-SHA256"] != response["X-Content-SHA256"]
        assert saves == [image_id, rebuilt]
        assert base_image.base_image_archive(tag).image_id == rebuilt
    finally:
        engine.images.remove(rebuilt, force=True)


def test_an_image_the_engine_lacks_is_a_clear_message(client, make_user, settings, kit_challenge):
    settings.PODIUM_BUILD_BASE_IMAGES = [f"podium-test/absent:{uuid.uuid4().hex[:8]}"]
    client.force_login(make_user("ann"))
    response = client.get(reverse("leaderboard:kit-base-image", args=["crag-mm-2026"]))
    assert response.status_code == 503
    assert "it is not built on Podium&#x27;s web server yet" in response.content.decode()


def test_the_kit_page_links_only_base_images_the_engine_has(client, make_user, settings, test_base):
    """A base image the engine lacks (``podium/agent-base:cuda12`` where it is not built) is
    listed with how it is got, not linked to a download that answers 503."""
    _, tag, _ = test_base
    absent = f"podium-test/absent:{uuid.uuid4().hex[:8]}-cuda"
    settings.PODIUM_BUILD_BASE_IMAGES = [tag, absent]
    client.force_login(make_user("ann"))
    html = client.get(reverse("leaderboard:kit", args=["crag-mm-2026"])).content.decode()
    rows = html[html.index('<table id="base-images">') :].split("</table>", 1)[0].split("<tr>")
    have, lack = rows[2], rows[3]
    assert f"<code>{tag}</code>" in have and "download</a>" in have
    assert f"<code>{absent}</code>" in lack and "download</a>" not in lack
    assert "Not built on this server" in lack and "deploy/agent-base/build.sh" in lack
    assert "(<code>build.sh cuda</code>)" in lack
    api = client.get(reverse("api:kit", args=["crag-mm-2026"])).json()["base_images"]
    assert [(image["image"], image["built"]) for image in api] == [(tag, True), (absent, False)]
