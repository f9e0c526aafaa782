"""The base image and the example agents, run for real in Docker with no network at all."""

from __future__ import annotations

import base64
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from docker.models.containers import Container

from agentkit.protocol import IMAGE_DIR
from tests.agentkit.conftest import REPO, batch, jpeg_bytes, request, turn
from tests.package_index import wheel

pytestmark = pytest.mark.docker

BASE_IMAGE = "podium/agent-base:py3.11"
AGENT_UID = 10001


@pytest.fixture(scope="module")
def client() -> Iterator[docker.DockerClient]:
    client = docker.from_env()
    result = subprocess.run(
        ["bash", str(REPO / "deploy/agent-base/build.sh")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    yield client
    client.close()


def build_example(client: docker.DockerClient, name: str) -> str:
    tag = f"podium-test/example-{name}"
    client.images.build(path=str(REPO / "examples/agents" / name), tag=tag, rm=True)
    return tag


@pytest.fixture
def start_agent(client, tmp_path) -> Iterator:
    """Start an image sandboxed as Podium runs it; the socket directory is a host folder, the
    image directory a host folder mounted read-only at /podium/images (``socket_dir.parent /
    "images"``)."""
    containers = []

    def run(image: str, task: str) -> tuple[Path, Container]:
        socket_dir = tmp_path / f"sock{len(containers)}"
        socket_dir.mkdir()
        socket_dir.chmod(0o777)
        (tmp_path / "images").mkdir(exist_ok=True)
        container = client.containers.run(
            image,
            detach=True,
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": "size=16m"},
            cap_drop=["ALL"],
            user=f"{AGENT_UID}:{AGENT_UID}",
            environment={"PODIUM_TASK": task},
            volumes={
                str(socket_dir): {"bind": "/podium/sock", "mode": "rw"},
                str(tmp_path / "images"): {"bind": IMAGE_DIR, "mode": "ro"},
            },
        )
        containers.append(container)
        deadline = time.monotonic() + 30
        while True:
            if (socket_dir / "agent.sock").exists():
                status, body = request(socket_dir / "agent.sock", "GET", "/ready")
                if status != 503:
                    assert status == 200, body
                    return socket_dir, container
            container.reload()
            assert container.status != "exited", container.logs().decode()
            assert time.monotonic() < deadline, container.logs().decode()
            time.sleep(0.05)

    yield run
    for container in containers:
        container.remove(force=True)


def test_base_image_is_labelled_and_rebuilds_only_when_agentkit_changes(client):
    labels = client.images.get(BASE_IMAGE).labels
    assert labels["org.podium.agentkit.version"]
    assert len(labels["org.podium.agentkit.hash"]) == 16
    result = subprocess.run(
        ["bash", str(REPO / "deploy/agent-base/build.sh")], capture_output=True, text=True
    )
    assert result.returncode == 0
    assert "is up to date" in result.stderr


def test_idk_agent_answers_through_the_socket_with_no_network(client, start_agent):
    socket_dir, _ = start_agent(build_example(client, "idk"), "single-source-augmentation")
    status, ready = request(socket_dir / "agent.sock", "GET", "/ready")
    assert (ready["kit"], ready["batch_size"]) == ("A", 16)
    assert ready["python_version"].startswith("3.11.")
    body = batch(turn("What is this?", jpeg_bytes()), turn("And this?", None, interaction_id="i2"))
    status, answer = request(socket_dir / "agent.sock", "POST", "/batch", body)
    assert (status, answer["responses"]) == (200, ["I don't know", "I don't know"])


def test_rag_agent_searches_podiums_socket_from_inside_the_container(client, start_agent, stub):
    image = build_example(client, "rag-kit-a")
    socket_dir, _ = start_agent(image, "multi-source-augmentation")
    server = stub("multi-source-augmentation", socket_dir / "search.sock")
    photo = jpeg_bytes((120, 90))
    (socket_dir.parent / "images/photo.jpg").write_bytes(photo)
    in_container = Path(IMAGE_DIR, "photo.jpg")
    body = batch(
        turn("What is the brand of this vehicle?", in_container),
        turn("What car is this?", in_container, interaction_id="i2"),
        turn("What is the price of this vehicle?", photo, interaction_id="i3"),  # inline
    )
    status, answer = request(socket_dir / "agent.sock", "POST", "/batch", body)
    assert status == 200, answer
    assert answer["responses"] == ["Ford", "Model T", "I don't know"]
    image_searches = [body for path, body in server.requests if path == "/search/image"]
    assert len(image_searches) == 3
    sent = [base64.b64decode(search["image_b64"]) for search in image_searches]
    assert sent == [photo] * 3  # the file's own bytes, undecoded
    assert ("/search/web", {"query": "Model T price", "k": 10}) in server.requests


OFFICIAL_BASE_AGENT = """
from typing import Any, Dict, List

from PIL import Image
from cragmm_search.search import UnifiedSearchPipeline


class BaseAgent:
    def __init__(self, search_pipeline: UnifiedSearchPipeline):
        self.search_pipeline = search_pipeline

    def get_batch_size(self) -> int:
        return 16

    def batch_generate_response(
        self,
        queries: List[str],
        images: List[Image.Image],
        message_histories: List[List[Dict[str, Any]]],
    ) -> List[str]:
        raise NotImplementedError
"""

OFFICIAL_STYLE_AGENT = """
from cragmm_search.search import UnifiedSearchPipeline

from agents.base_agent import BaseAgent


class MyAgent(BaseAgent):
    def __init__(self, search_pipeline: UnifiedSearchPipeline):
        super().__init__(search_pipeline)

    def batch_generate_response(self, queries, images, message_histories):
        is_pipeline = isinstance(self.search_pipeline, UnifiedSearchPipeline)
        return [f"{is_pipeline} {image.size}" for image in images]
"""


def test_an_agent_written_for_the_challenge_kit_runs_unchanged(client, start_agent, tmp_path):
    context = tmp_path / "context"
    (context / "agents").mkdir(parents=True)
    (context / "agents/__init__.py").write_text("")
    (context / "agents/base_agent.py").write_text(OFFICIAL_BASE_AGENT)
    (context / "agents/my_agent.py").write_text(OFFICIAL_STYLE_AGENT)
    (context / "Dockerfile").write_text(
        f"FROM {BASE_IMAGE}\nCOPY . /agent\nENV PODIUM_AGENT=agents.my_agent:MyAgent\n"
    )
    client.images.build(path=str(context), tag="podium-test/official-style", rm=True)
    socket_dir, _ = start_agent("podium-test/official-style", "multi-source-augmentation")
    body = batch(turn("What is this?", jpeg_bytes((30, 20))))
    status, answer = request(socket_dir / "agent.sock", "POST", "/batch", body)
    assert (status, answer["responses"]) == (200, ["True (30, 20)"])


def test_sigterm_stops_the_container_promptly(client, start_agent):
    socket_dir, container = start_agent(build_example(client, "zero-work"), "multi-turn-qa")
    started = time.monotonic()
    container.stop(timeout=10)
    assert time.monotonic() - started < 5
    assert container.wait()["StatusCode"] == 143
    assert not (socket_dir / "agent.sock").exists()


def test_visual_rag_colour_agent_answers_items_in_the_sandbox(client, start_agent):
    from PIL import Image

    socket_dir, _ = start_agent(build_example(client, "visual-rag-colour"), "visual-rag")
    images = socket_dir.parent / "images"
    for name, colour in (("plain", (120, 110, 100)), ("clue", (240, 130, 20))):
        picture = Image.new("RGB", (64, 64), (120, 110, 100))
        picture.paste(colour, (8, 8, 40, 40))
        picture.save(images / f"{name}.png")
    files = [{"id": n, "path": f"{IMAGE_DIR}/{n}.png"} for n in ("plain", "clue")]
    item = {"item_id": "retrieval/q1", "setting": "retrieval", "k": None, "images": [],
            "question": "What colour are the hindwings?", "candidates": files}  # fmt: skip
    body = {"batch_id": "b1", "deadline_s": 20, "protocol": "visual-rag", "items": [item]}
    status, answer = request(socket_dir / "agent.sock", "POST", "/batch", body)
    assert status == 200, answer
    assert answer["responses"] == [{"answer": "orange", "ranking": ["clue", "plain"]}]


KIT_AGENT = """
import numpy
import podium_test_dep
from cragmm_search.search import UnifiedSearchPipeline


class UserAgent:
    def __init__(self, search_pipeline: UnifiedSearchPipeline):
        self.search_pipeline = search_pipeline

    def get_batch_size(self) -> int:
        return 2

    def batch_generate_response(self, queries, images, message_histories):
        import cragmm_search.search as search

        total = int(numpy.asarray(images[0].convert("L")).sum() > 0)
        return [f"{podium_test_dep.VALUE} {total} {search.__file__}" for _ in queries]
"""


def test_a_kit_style_agent_pip_installs_its_requirements_and_keeps_podiums_search(
    client, start_agent, tmp_path
):
    """pip and a virtual environment in the base image: a build installs wheels it ships (no
    network in Podium's builds); the official search package, even forced in, never replaces
    Podium's stand-in, and the agent's log says so; numpy is there."""
    from workers.builds import build_context
    from workers.images import AgentImage

    context = tmp_path / "kit"
    (context / "agents").mkdir(parents=True)
    (context / "wheels").mkdir()
    (context / "agents/__init__.py").write_text("")
    (context / "agents/user_agent.py").write_text(KIT_AGENT)
    wheel(context / "wheels", "podium-test-dep", "1.0", {"podium_test_dep.py": "VALUE = 'wheel'"})
    official = wheel(
        context / "wheels",
        "cragmm-search-pipeline",
        "0.5.1",
        {
            "cragmm_search/__init__.py": "",
            "cragmm_search/search.py": "raise RuntimeError('the official package was imported')",
        },
    )
    (context / "requirements.txt").write_text("podium-test-dep\ncragmm-search-pipeline>=0.2.12\n")
    (context / "Dockerfile").write_text(
        f"FROM {BASE_IMAGE}\nCOPY . /agent\n"
        "RUN pip install --no-index --find-links /agent/wheels -r /agent/requirements.txt\n"
        f"RUN pip install --no-index --no-deps --force-reinstall /agent/wheels/{official.name}\n"
        "ENV PODIUM_AGENT=agents.user_agent:UserAgent\n"
    )
    tarball = tmp_path / "kit.tar"
    with tarfile.open(tarball, "w") as tar:
        for path in sorted(context.iterdir()):
            tar.add(path, arcname=path.name)
    image: AgentImage = build_context(tarball, tag="podium-test/kit-style:latest")
    assert "Successfully installed cragmm-search-pipeline-0.5.1" in image.build_log
    assert image.build_log.endswith(
        "podium: this image installs its own cragmm_search "
        "(/opt/venv/lib/python3.11/site-packages/cragmm_search); Podium's stand-in (its search "
        "client) is imported instead"
    )
    socket_dir, container = start_agent(image.ref, "single-source-augmentation")
    status, answer = request(
        socket_dir / "agent.sock", "POST", "/batch", batch(turn("What?", jpeg_bytes((8, 8))))
    )
    assert (status, answer["responses"]) == (
        200,
        ["wheel 1 /opt/podium/cragmm_search/search.py"],
    )
    log = container.logs().decode()
    assert (
        "this image installs its own cragmm_search (/opt/venv/lib/python3.11/site-packages/" in log
    )

    # a kit's requirements.txt naming the official package: already satisfied by the stand-in
    satisfied = client.containers.run(
        BASE_IMAGE,
        ["-m", "pip", "install", "--no-index", "cragmm-search-pipeline>=0.2.12"],
        entrypoint="python3",
        network_mode="none",
        remove=True,
    ).decode()
    assert "Requirement already satisfied: cragmm-search-pipeline>=0.2.12" in satisfied
    assert "(0.5.1+podium)" in satisfied
