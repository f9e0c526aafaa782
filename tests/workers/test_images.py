"""Loading and pulling agent images, and the errors a participant sees (builds:
test_builds.py)."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from tests.workers.conftest import BASE_IMAGE, tar_bytes
from workers.images import (
    ImageError,
    is_reserved,
    load_archive,
    local_image,
    normalized_name,
    pull,
)

pytestmark = pytest.mark.docker


def save(client, image_ref: str, path):
    with path.open("wb") as out:
        for chunk in client.api.get_image(image_ref):  # docker save <ref>: that tag only
            out.write(chunk)
    return path


def test_archive_loads_by_content_and_is_pinned_by_image_id(docker_client, agent_image, tmp_path):
    source = agent_image("agents/recorder")
    docker_client.images.get(source.image_id).tag("podium-test/archive", "1")
    archive = save(docker_client, "podium-test/archive:1", tmp_path / "image.tar")
    docker_client.images.remove("podium-test/archive:1")
    loaded = load_archive(archive, client=docker_client)
    assert loaded.ref == loaded.image_id == source.image_id == loaded.digest
    assert loaded.image_id.startswith("sha256:")
    assert not docker_client.images.list(name="podium-test/archive"), "the archive's tag came back"


def _retagged(archive, out, tags: list[str]):
    """``archive`` with its manifest naming ``tags`` (as a hostile team would write it)."""
    with tarfile.open(archive) as source, tarfile.open(out, "w") as copy:
        for member in source:
            data = source.extractfile(member) if member.isfile() else None
            if member.name == "manifest.json":
                manifest = json.load(data)
                manifest[0]["RepoTags"] = tags
                content = json.dumps(manifest).encode()
                member.size, data = len(content), io.BytesIO(content)
            copy.addfile(member, data)
    return out


@pytest.mark.parametrize(
    "spelling", ["podium-test/victim:1", "index.docker.io/podium-test/victim:1",
                 "registry-1.docker.io/podium-test/victim:1", "docker.io/podium-test/victim:1"]
)  # fmt: skip
def test_an_archive_cannot_move_a_tag(docker_client, agent_image, tmp_path, spelling):
    victim = docker_client.images.get(BASE_IMAGE)
    victim.tag("podium-test/victim", "1")
    attacker = agent_image("agents/recorder")
    docker_client.images.get(attacker.image_id).tag("podium-test/attacker", "1")
    archive = save(docker_client, "podium-test/attacker:1", tmp_path / "attacker.tar")
    docker_client.images.remove("podium-test/attacker:1")
    try:
        loaded = load_archive(
            _retagged(archive, tmp_path / "hostile.tar", [spelling]), docker_client
        )
        assert loaded.image_id == attacker.image_id
        assert docker_client.images.get("podium-test/victim:1").id == victim.id
    finally:
        docker_client.images.remove("podium-test/victim:1")


@pytest.mark.parametrize(
    "ref", ["podium/agent-base:py3.11", "docker.io/podium/agent-base:py3.11",
            "index.docker.io/podium/agent-base:py3.11", "registry-1.docker.io/podium/agent-base",
            "INDEX.DOCKER.IO/podium/agent-base", "podium-submission/1:latest",
            "podium/agent-base@sha256:" + "0" * 64]
)  # fmt: skip
def test_reserved_names_are_found_however_spelled(docker_client, tmp_path, ref):
    assert is_reserved(ref)
    docker_client.images.get(BASE_IMAGE).tag("podium-test/spelled", "1")
    archive = save(docker_client, "podium-test/spelled:1", tmp_path / "a.tar")
    docker_client.images.remove("podium-test/spelled:1")
    with pytest.raises(ImageError, match="is reserved for Podium's own images"):
        load_archive(_retagged(archive, tmp_path / "b.tar", [ref]), client=docker_client)
    with pytest.raises(ImageError, match="is reserved"):
        pull(ref, client=docker_client)


def test_names_that_are_not_podiums_are_not_reserved():
    for ref in ["ghcr.io/podium/agent:1", "library/podium:1", "team/podium-agent:1",
                "localhost:5000/podium/agent-base:1", "podiumx/agent:1"]:  # fmt: skip
        assert not is_reserved(ref), ref
    assert normalized_name("ubuntu:22.04") == "docker.io/library/ubuntu"
    assert normalized_name("index.docker.io/team/a@sha256:" + "1" * 64) == "docker.io/team/a"


def test_bad_archives_are_named(tmp_path, docker_client):
    garbage = tmp_path / "garbage.tar"
    garbage.write_bytes(b"\x00not a tar at all" * 100)
    with pytest.raises(ImageError, match=r"garbage.tar: not a .*(tar|docker save)"):
        load_archive(garbage, client=docker_client)
    no_manifest = tmp_path / "plain.tar"
    no_manifest.write_bytes(tar_bytes({"hello.txt": b"hi"}))
    with pytest.raises(ImageError, match=r"plain.tar: not a docker save archive \(no manifest"):
        load_archive(no_manifest, client=docker_client)
    with pytest.raises(ImageError, match="no such file"):
        load_archive(tmp_path / "absent.tar", client=docker_client)


def test_pull_errors_are_readable(docker_client):
    with pytest.raises(ImageError, match="localhost:1/none:latest: pull failed"):
        pull("localhost:1/none:latest", client=docker_client)
    with pytest.raises(ImageError, match="reserved"):
        pull("podium/agent-base:py3.11", client=docker_client)
    with pytest.raises(ImageError, match="not an image reference"):
        pull("two words", client=docker_client)
    with pytest.raises(ImageError, match="no such image"):
        local_image("podium-test/absent:0", client=docker_client)
