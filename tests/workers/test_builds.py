"""Building a team's context: offline, limited, from Podium's base images only, untagged and
without another team's cache."""

from __future__ import annotations

import json
import time

import pytest

from tests.workers.conftest import BASE_IMAGE, tar_bytes
from workers.builds import DEFAULT_BASE_IMAGES, build_context
from workers.images import ImageError

pytestmark = pytest.mark.docker


def context(tmp_path, dockerfile: str, name="context.tar"):
    path = tmp_path / name
    path.write_bytes(tar_bytes({"Dockerfile": dockerfile.encode(), "agent.py": b"x = 1\n"}))
    return path


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


def test_build_time_limit(docker_client, build_engine, base_image, tmp_path):
    dockerfile = f"FROM {base_image}\nRUN sleep 45\n"
    started = time.monotonic()
    with pytest.raises(ImageError, match="build failed: over 3 s"):
        build_context(context(tmp_path, dockerfile), timeout_s=3, client=docker_client)
    assert time.monotonic() - started < 15
    # the build engine cancelled the step when the runner hung up (and was emptied after)
    deadline = time.monotonic() + 20
    while any("sleep 45" in str(c.attrs["Config"]["Cmd"]) for c in build_engine.containers.list()):
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


def test_a_built_image_has_no_tag_and_starts_from_the_pinned_base(
    docker_client, base_image, tmp_path
):
    dockerfile = (
        "# syntax=docker/dockerfile:1\n"
        f"FROM {BASE_IMAGE} AS deps\nRUN echo built > /tmp/built\n"
        f"FROM \\\n  docker.io/{BASE_IMAGE}\nCOPY --from=deps /tmp/built /tmp/built\n"
    )
    image = build_context(
        context(tmp_path, dockerfile), labels={"podium.submission": "7"}, client=docker_client
    )
    built = docker_client.images.get(image.image_id)
    assert built.tags == [] and image.ref == image.image_id
    assert built.labels.get("podium.submission") == "7"
    base_layers = docker_client.images.get(BASE_IMAGE).attrs["RootFS"]["Layers"]
    assert built.attrs["RootFS"]["Layers"][: len(base_layers)] == base_layers


OTHER_TEAM = {
    "FROM another team's image by ID": "FROM {victim}\n",
    "FROM another team's guessable tag": "FROM podium-test/victim:1\n",
    "COPY --from another team's image": "FROM {base}\nCOPY --from={victim} /agent /stolen\n",
    "RUN --mount from another team's image": (
        "FROM {base}\nRUN --mount=type=bind,from=podium-test/victim:1,target=/v ls /v\n"
    ),
    "a build argument that expands into it": "ARG B=podium-test/victim:1\nFROM ${{B}}\n",
    "a later stage reaching out": (
        "FROM {base} AS a\nFROM a\nCOPY --from=podium-test/victim:1 / /x\n"
    ),
}


@pytest.mark.parametrize("case", OTHER_TEAM, ids=list(OTHER_TEAM))
def test_a_build_cannot_read_another_teams_image(
    docker_client, base_image, agent_image, tmp_path, case
):
    victim = agent_image("agents/recorder")
    docker_client.images.get(victim.image_id).tag("podium-test/victim", "1")
    dockerfile = OTHER_TEAM[case].format(victim=victim.image_id, base=BASE_IMAGE)
    started = len(docker_client.containers.list(all=True))
    try:
        with pytest.raises(ImageError) as refused:
            build_context(context(tmp_path, dockerfile), client=docker_client)
    finally:
        docker_client.images.remove("podium-test/victim:1")
    message = str(refused.value)
    assert "Dockerfile line" in message and "build failed" not in message, message
    assert "is not one of the base images" in message or "write image references out" in message
    if "is not one of" in message:  # the build's refusal lists what the Dockerfile may read
        assert message.endswith(f"the allowed bases are {', '.join(DEFAULT_BASE_IMAGES)}")
    assert len(docker_client.containers.list(all=True)) == started, "nothing was built"


def test_no_build_reuses_another_builds_cache(docker_client, base_image, tmp_path):
    """Two teams with the same steps: the second build runs them again, nothing is shared."""
    dockerfile = f"FROM {BASE_IMAGE}\nRUN date +%s%N > /tmp/stamp\n"
    first = build_context(context(tmp_path, dockerfile, "a.tar"), client=docker_client)
    second = build_context(context(tmp_path, dockerfile, "b.tar"), client=docker_client)
    assert first.image_id != second.image_id


def _step_containers(docker_client, marker: str) -> list:
    return [
        c
        for c in docker_client.containers.list(all=True)
        if marker in str(c.attrs["Config"]["Cmd"])
    ]


def test_a_step_writing_a_huge_layer_is_stopped_and_refused(
    docker_client, build_engine, base_image, tmp_path
):
    """A step that keeps writing (here to 2 GB, then sleeping) is killed once its layer passes
    the limit: the build fails at once, saying so, and leaves no container or image behind."""
    marker = "fill-the-disk"
    dockerfile = (
        f"FROM {base_image}\n"
        f"RUN for i in $(seq 200); do head -c 10000000 /dev/zero >> /tmp/{marker}; done; sleep 60\n"
    )
    started = time.monotonic()
    with pytest.raises(ImageError) as failure:
        build_context(
            context(tmp_path, dockerfile), max_layer_bytes=100 * 1024**2, client=docker_client
        )
    took = time.monotonic() - started
    message = str(failure.value)
    assert "build failed: a build step wrote" in message
    assert "more than the 100 MiB one step may write; it was stopped" in message
    assert took < 30, f"{took:.1f} s: the step was not stopped before its sleep ended"
    wrote_mib = float(message.split("a build step wrote ")[1].split(" MiB")[0])
    assert 100 < wrote_mib < 1000  # stopped soon after the limit, far from 2 GB
    deadline = time.monotonic() + 20
    while _step_containers(build_engine, marker):
        assert time.monotonic() < deadline, "the killed step's container is still there"
        time.sleep(0.5)
    left = [
        image
        for engine in (docker_client, build_engine)
        for image in engine.images.list(all=True)
        if marker in str((image.attrs.get("ContainerConfig") or {}).get("Cmd"))
    ]
    assert not left, "the stopped build left an image of its step behind"


def test_a_step_under_the_limit_builds(docker_client, base_image, tmp_path):
    dockerfile = f"FROM {base_image}\nRUN head -c 20000000 /dev/zero > /tmp/weights\n"
    image = build_context(
        context(tmp_path, dockerfile), max_layer_bytes=100 * 1024**2, client=docker_client
    )
    docker_client.images.remove(image.image_id, force=True)


def test_an_image_over_the_total_size_is_removed_and_refused(
    docker_client, build_engine, base_image, tmp_path
):
    base_size = docker_client.images.get(base_image).attrs["Size"]
    marker = "too-big-weights"
    dockerfile = f"FROM {base_image}\nRUN head -c 30000000 /dev/zero > /tmp/{marker}\nLABEL n=1\n"
    with pytest.raises(ImageError, match=r"build failed: the image holds .* more than the"):
        build_context(
            context(tmp_path, dockerfile),
            max_image_bytes=base_size + 10 * 1024**2,
            client=docker_client,
        )
    kept = [
        image
        for engine in (docker_client, build_engine)
        for image in engine.images.list(all=True)
        if marker in json.dumps(image.attrs.get("ContainerConfig") or {})
        or marker in json.dumps(image.history())
    ]
    assert not kept, "the refused image (or one of its layers) was kept"


def test_a_build_installs_from_the_package_index_and_reaches_nothing_else(
    docker_client, build_engine, base_image, tmp_path
):
    """With a package index, the build's steps reach it through the gate (pip as usual, no
    wheels shipped); any other host, the Docker host included, stays out of reach, and the
    gate is gone after the build."""
    from tests.package_index import serve_index, wheel
    from workers.package_index import LABEL_GATE, PackageIndex

    (tmp_path / "index/files").mkdir(parents=True)
    wheel(tmp_path / "index/files", "podium-test-dep", "1.0", {"podium_test_dep.py": "V = 7\n"})
    direct = "import socket; socket.create_connection(('172.17.0.1', 22), timeout=3)"
    dockerfile = (
        f"FROM {base_image}\n"
        "RUN pip install --no-cache-dir podium-test-dep==1.0\n"
        f'RUN python3 -c "{direct}" 2>&1 | grep -q "unreachable"\n'
        'RUN python3 -c "import podium_test_dep; assert podium_test_dep.V == 7"\n'
    )
    with serve_index(tmp_path / "index") as (url, requests):
        index = PackageIndex.parse(url)
        image = build_context(
            context(tmp_path, dockerfile), package_index=index, client=docker_client
        )
        assert "/simple/podium-test-dep/" in requests
        assert any(r.endswith("podium_test_dep-1.0-py3-none-any.whl") for r in requests)
        config = docker_client.images.get(image.image_id).attrs["Config"]
        assert not any("PIP_INDEX_URL" in e or "PROXY" in e.upper() for e in config["Env"] or [])

        elsewhere = "import urllib.request as u; u.urlopen('http://example.org/', timeout=5)"
        with pytest.raises(ImageError) as failure:
            build_context(
                context(tmp_path, f'FROM {base_image}\nRUN python3 -c "{elsewhere}"\n', "b.tar"),
                package_index=index,
                client=docker_client,
            )
    message = str(failure.value)
    assert "HTTP Error 403" in message
    assert (
        f"Builds have no network but this challenge's package index, {url}: pip installs from "
        "it (a package it does not serve cannot be installed), and every other host is out of "
        "reach. This build asked for example.org:80.\n" in message
    )
    assert build_engine.containers.list(all=True, filters={"label": LABEL_GATE}) == []

    # and without an index, the same pip install has no network
    with pytest.raises(ImageError, match="build failed"):
        build_context(context(tmp_path, dockerfile, "c.tar"), client=docker_client)


def test_a_pip_install_that_cannot_be_met_reads_as_sentences(
    docker_client, build_engine, base_image, tmp_path
):
    """A step installing what no index serves fails with plain text (the colours its output
    carried removed) and the sentence that builds have no network, saying whether the
    challenge has a package index (and naming it)."""
    from tests.package_index import serve_index, wheel
    from workers.package_index import PackageIndex

    dockerfile = (
        f"FROM {base_image}\n"
        r"RUN printf '\033[1;31mpreparing\033[0m \033]0;title\007\n' && "
        "pip install --retries 0 --timeout 3 --no-cache-dir podium-not-served==1.0\n"
    )
    with pytest.raises(ImageError) as failure:
        build_context(context(tmp_path, dockerfile), client=docker_client)
    reason = str(failure.value)
    assert "\x1b" not in reason and "\x07" not in reason
    assert "returned a non-zero code: 1. Builds have no network, and this challenge names no " in (
        reason
    )
    log = reason.split("--- last lines of the build log ---\n")[1]
    assert "preparing " in log.splitlines()  # the line the step printed, plain
    assert "ERROR: No matching distribution found for podium-not-served==1.0" in log

    (tmp_path / "index/files").mkdir(parents=True)
    wheel(tmp_path / "index/files", "podium-test-dep", "1.0", {"podium_test_dep.py": ""})
    with serve_index(tmp_path / "index") as (url, requests), pytest.raises(ImageError) as failure:
        build_context(
            context(tmp_path, dockerfile, "b.tar"),
            package_index=PackageIndex.parse(url),
            client=docker_client,
        )
    reason = str(failure.value)
    assert "/simple/podium-not-served/" in requests and "\x1b" not in reason
    assert (
        f"returned a non-zero code: 1. Builds have no network but this challenge's package "
        f"index, {url}: pip installs from it" in reason
    )
    assert "No matching distribution found for podium-not-served==1.0" in reason


def test_a_flood_from_the_images_own_python_leaves_a_short_build_log(
    docker_client, base_image, tmp_path
):
    """The notice check runs the team's image: whatever its python3 prints, the build log
    keeps a few lines of it."""
    flood = "#!/bin/sh\\nyes /flood/cragmm_search | head -c 20000000\\n"
    python = "/opt/venv/bin/python3"
    dockerfile = (
        f"FROM {base_image}\nRUN rm {python} && printf '{flood}' > {python} && chmod +x {python}\n"
    )
    image = build_context(context(tmp_path, dockerfile), client=docker_client)
    notices = [line for line in image.build_log.splitlines() if line.startswith("podium: ")]
    assert len(notices) == 5 and "(/flood/cragmm_search)" in notices[0]
    assert len(image.build_log) < 20_000
