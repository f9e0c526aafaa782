"""Loading, building and pulling agent images, and the errors a participant sees."""

from __future__ import annotations

import time

import pytest

from tests.workers.conftest import BASE_IMAGE, tar_bytes
from workers.images import ImageError, build_context, load_archive, local_image, pull

pytestmark = pytest.mark.docker


def save(client, image_ref: str, path):
    with path.open("wb") as out:
        for chunk in client.api.get_image(image_ref):  # docker save <ref>: that tag only
            out.write(chunk)
    return path


def context(tmp_path, dockerfile: str, name="context.tar"):
    path = tmp_path / name
    path.write_bytes(tar_bytes({"Dockerfile": dockerfile.encode(), "agent.py": b"x = 1\n"}))
    return path


def test_archive_loads_and_is_pinned_by_image_id(docker_client, agent_image, tmp_path):
    source = agent_image("agents/recorder")
    docker_client.images.get(source.image_id).tag("podium-test/archive", "1")
    archive = save(docker_client, "podium-test/archive:1", tmp_path / "image.tar")
    docker_client.images.remove("podium-test/archive:1")
    loaded = load_archive(archive, client=docker_client)
    assert loaded.ref == "podium-test/archive:1"
    assert loaded.image_id == source.image_id == loaded.digest
    assert loaded.image_id.startswith("sha256:")
    docker_client.images.remove("podium-test/archive:1")


def test_archive_may_not_overwrite_podiums_own_images(docker_client, tmp_path):
    docker_client.images.get(BASE_IMAGE).tag("podium/evil", "1")
    archive = save(docker_client, "podium/evil:1", tmp_path / "evil.tar")
    docker_client.images.remove("podium/evil:1")
    with pytest.raises(ImageError, match="'podium/evil:1' is reserved"):
        load_archive(archive, client=docker_client)
    assert not docker_client.images.list(name="podium/evil")


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


def test_build_context_builds_offline(docker_client, base_image, tmp_path):
    dockerfile = f"FROM {base_image}\nCOPY agent.py /agent/agent.py\nENV PODIUM_AGENT=agent:A\n"
    image = build_context(
        context(tmp_path, dockerfile), tag="podium-test/built:1", client=docker_client
    )
    assert image.ref == "podium-test/built:1" and image.image_id.startswith("sha256:")
    assert "PODIUM_AGENT=agent:A" in docker_client.images.get(image.image_id).attrs["Config"]["Env"]


def test_failing_build_reports_the_tail_of_its_log(docker_client, base_image, tmp_path):
    dockerfile = f"FROM {base_image}\nRUN echo preparing-weights && exit 3\n"
    with pytest.raises(ImageError) as failure:
        build_context(context(tmp_path, dockerfile), client=docker_client)
    message = str(failure.value)
    assert "build failed" in message and "returned a non-zero code: 3" in message
    assert "preparing-weights" in message.split("last lines of the build log")[1]


def test_build_has_no_network(docker_client, base_image, tmp_path):
    probe = "import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)"
    dockerfile = f'FROM {base_image}\nRUN python3 -c "{probe}"\n'
    with pytest.raises(ImageError, match=r"(?s)build failed.*(unreachable|OSError|Errno)"):
        build_context(context(tmp_path, dockerfile), client=docker_client)


def test_build_time_limit(docker_client, base_image, tmp_path):
    dockerfile = f"FROM {base_image}\nRUN sleep 45\n"
    started = time.monotonic()
    with pytest.raises(ImageError, match="build failed: over 3 s"):
        build_context(context(tmp_path, dockerfile), timeout_s=3, client=docker_client)
    assert time.monotonic() - started < 15
    # the engine cancelled the step when the runner hung up
    deadline = time.monotonic() + 20
    while any("sleep 45" in str(c.attrs["Config"]["Cmd"]) for c in docker_client.containers.list()):
        assert time.monotonic() < deadline, "the build step still runs"
        time.sleep(0.5)


def test_build_context_errors(docker_client, tmp_path):
    empty = tmp_path / "empty.tar"
    empty.write_bytes(tar_bytes({"README": b"no dockerfile"}))
    with pytest.raises(ImageError, match="has no Dockerfile"):
        build_context(empty, client=docker_client)
    with pytest.raises(ImageError, match="reserved"):
        build_context(
            context(tmp_path, "FROM scratch\n"),
            tag="podium/agent-base:py3.11",
            client=docker_client,
        )


def test_pull_errors_are_readable(docker_client):
    with pytest.raises(ImageError, match="localhost:1/none:latest: pull failed"):
        pull("localhost:1/none:latest", client=docker_client)
    with pytest.raises(ImageError, match="reserved"):
        pull("podium/agent-base:py3.11", client=docker_client)
    with pytest.raises(ImageError, match="not an image reference"):
        pull("two words", client=docker_client)
    with pytest.raises(ImageError, match="no such image"):
        local_image("podium-test/absent:0", client=docker_client)
