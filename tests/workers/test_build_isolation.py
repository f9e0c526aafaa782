"""A team's build cannot see another team's image, whatever its Dockerfile says: the build runs
on the build engine, which holds the allowed base images and nothing else, and whose daemon has
no network. The Dockerfile check is turned off here: nothing below depends on it."""

from __future__ import annotations

import hashlib
import os
import time
import uuid

import docker
import pytest

import workers.builds
from tests.workers.conftest import BASE_IMAGE, tar_bytes
from workers import build_engine as engine_module
from workers.build_engine import BuildEngineUnsafe, interfaces
from workers.builds import build_context
from workers.images import ImageError

pytestmark = pytest.mark.docker


def context(tmp_path, dockerfile: str, files: dict[str, bytes] | None = None):
    path = tmp_path / f"{uuid.uuid4().hex[:8]}.tar"
    path.write_bytes(tar_bytes({"Dockerfile": dockerfile.encode(), **(files or {})}))
    return path


@pytest.fixture
def victim(docker_client, base_image, tmp_path):
    """Another team's image on this node: built as any team's is, holding its secret code."""
    secret = f"PODIUM-VICTIM-SECRET-{uuid.uuid4().hex}"
    dockerfile = f"FROM {BASE_IMAGE}\nCOPY agent.py /agent/agent.py\n"
    image = build_context(
        context(tmp_path, dockerfile, {"agent.py": f"SECRET = {secret!r}\n".encode()}),
        client=docker_client,
    )
    assert docker_client.images.get(image.image_id)  # it is in the node's engine
    yield image.image_id, secret
    docker_client.images.remove(image.image_id, force=True)


@pytest.fixture
def no_dockerfile_check(monkeypatch):
    """The Dockerfile check off: the team's Dockerfile reaches the engine as written."""
    monkeypatch.setattr(workers.builds, "pin_base_images", lambda text, *_, **__: text)


ATTACKS = {
    "FROM its image ID": "FROM {prefix}\nRUN cat /agent/agent.py; exit 1\n",
    "a byte-order mark before FROM": (
        "\ufeffFROM {prefix} AS loot\nFROM {base}\nCOPY --from=0 /agent /stolen\n"
        "RUN cat /stolen/*.py; exit 1\n"
    ),
    "a no-break space after a continuation": (
        "FROM {base}\nRUN true \\\u00a0\nFROM {prefix} AS loot\nFROM {base}\n"
        "COPY --from=loot /agent /stolen\nRUN cat /stolen/*.py; exit 1\n"
    ),
    "copying its code as one's own": "FROM {base}\nCOPY --from={prefix} /agent /agent\n",
}


@pytest.mark.parametrize("case", ATTACKS, ids=list(ATTACKS))
def test_a_build_reads_and_copies_nothing_of_another_teams_image(
    docker_client, victim, no_dockerfile_check, tmp_path, case
):
    image_id, secret = victim
    prefix = image_id.removeprefix("sha256:")[:12]
    dockerfile = ATTACKS[case].format(prefix=prefix, base=BASE_IMAGE)
    started = time.monotonic()
    with pytest.raises(ImageError) as failure:
        build_context(context(tmp_path, dockerfile), client=docker_client)
    message = str(failure.value)
    assert secret not in message and "build failed" in message, message
    # the engine has no such image, and its daemon cannot look for one in a registry
    assert "network is unreachable" in message or "pull access denied" in message, message
    assert time.monotonic() - started < 60


def test_the_build_engine_holds_only_the_bases_after_any_build(
    docker_client, build_engine, victim, no_dockerfile_check, tmp_path
):
    image_id, _ = victim
    with pytest.raises(ImageError):
        build_context(context(tmp_path, f"FROM {BASE_IMAGE}\nRUN exit 1\n"), client=docker_client)
    bases = {docker_client.images.get(BASE_IMAGE).id}
    assert set(build_engine.api.images(all=True, quiet=True)) <= bases
    assert build_engine.containers.list(all=True) == []
    with pytest.raises(docker.errors.ImageNotFound):
        build_engine.images.get(image_id)


def test_the_build_engine_s_daemon_has_no_network(build_engine, base_image):
    started = time.monotonic()
    with pytest.raises(docker.errors.DockerException):
        build_engine.images.pull("library/busybox", tag="latest")
    assert time.monotonic() - started < 30
    seen = build_engine.containers.run(
        BASE_IMAGE, ["/proc/net/dev"], entrypoint="cat", network_mode="host", remove=True
    )
    assert interfaces(seen.decode()) == {"lo"}


def test_the_node_s_own_engine_is_refused_as_build_engine_and_left_as_it_is(
    docker_client, victim, tmp_path, monkeypatch
):
    image_id, _ = victim
    url = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"  # the node's engine
    monkeypatch.setenv("PODIUM_BUILD_ENGINE", url)
    with pytest.raises(BuildEngineUnsafe, match="is this node's own engine"):
        build_context(context(tmp_path, f"FROM {BASE_IMAGE}\n"), client=docker_client)
    assert docker_client.images.get(image_id)  # nothing of the node's was removed


def test_an_engine_that_reaches_a_network_is_refused(docker_client, base_image):
    """The check that keeps a misplaced build engine from building, on an engine in the
    machine's network namespace (the node's own: it sees more than loopback)."""
    with pytest.raises(BuildEngineUnsafe, match="reaches a network"):
        engine_module._check_isolated(
            docker_client, f"unix:///probe-{uuid.uuid4().hex}", BASE_IMAGE
        )


def test_a_missing_build_engine_is_a_transient_fault_and_nothing_falls_back(
    docker_client, tmp_path, monkeypatch
):
    from workers.faults import TransientFault

    monkeypatch.setenv("PODIUM_BUILD_ENGINE", f"unix://{tmp_path}/absent.sock")
    with pytest.raises(TransientFault, match="no build engine at"):
        build_context(context(tmp_path, f"FROM {BASE_IMAGE}\n"), client=docker_client)


def test_a_built_image_reaches_the_node_with_its_own_layers_only(
    docker_client, build_engine, base_image, tmp_path, caplog
):
    """The hand-over reads the build's layers from the engine's store (not a whole docker
    save); the node gets the same image ID, and nothing was handed over whole."""
    payload = uuid.uuid4().bytes * 4096
    dockerfile = f"FROM {BASE_IMAGE}\nCOPY weights.bin /agent/weights.bin\nRUN ln -s x /agent/l\n"
    with caplog.at_level("WARNING", logger="podium.builds"):
        image = build_context(
            context(tmp_path, dockerfile, {"weights.bin": payload}), client=docker_client
        )
    assert "handed over whole" not in caplog.text
    node_image = docker_client.images.get(image.image_id)
    assert node_image.id == image.image_id
    digest = "import hashlib as h; print(h.sha256(open('/agent/weights.bin', 'rb').read())"
    digest += ".hexdigest())"
    out = docker_client.containers.run(
        image.image_id, ["-c", digest], entrypoint="python3", network_mode="none", remove=True
    )
    assert out.decode().strip() == hashlib.sha256(payload).hexdigest()
    docker_client.images.remove(image.image_id, force=True)


def test_a_wrong_byte_in_the_handed_over_layers_is_refused_and_the_image_moved_whole(
    docker_client, base_image, tmp_path, caplog, monkeypatch
):
    """The node's engine checks each layer against the image's config: a layer put together
    wrongly is refused, and the image is handed over by ``docker save`` instead."""
    from workers import layer_archive

    contents = layer_archive._contents

    def flipped(diff, name, size):
        for chunk in contents(diff, name, size):
            yield bytes([chunk[0] ^ 1]) + chunk[1:]

    monkeypatch.setattr(layer_archive, "_contents", flipped)
    dockerfile = f"FROM {BASE_IMAGE}\nCOPY agent.py /agent/agent.py\n"
    with caplog.at_level("WARNING", logger="podium.builds"):
        image = build_context(
            context(tmp_path, dockerfile, {"agent.py": b"A = 1\n"}), client=docker_client
        )
    assert "handed over whole (the node refused its layers" in caplog.text
    out = docker_client.containers.run(
        image.image_id, ["/agent/agent.py"], entrypoint="cat", network_mode="none", remove=True
    )
    assert out == b"A = 1\n"
    docker_client.images.remove(image.image_id, force=True)
