"""Fixtures for the runner's tests: the Docker engine, test agent images, small splits."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PIL import Image

from evaluator.benchmarks.crag_mm.records import Conversation, Split, Turn
from tests import required
from workers.builds import build_context
from workers.images import AgentImage
from workers.janitor import listed_containers
from workers.limits import Limits
from workers.outcomes import ItemResult
from workers.runtimes import RUNTIMES, offered
from workers.sandbox import LABEL_IMAGE, LABEL_RUN, MiB, SandboxPolicy

HERE = Path(__file__).parent
REPO = HERE.parent.parent
BASE_IMAGE = "podium/agent-base:py3.11"
TEST_PREFIX = "podium-test/"

# Small and quick: what most docker tests run under; under runc whatever the engine offers (the
# tests of a runtime's sandbox take each one: ``agent_runtime``, test_sandbox_conformance.py).
TEST_POLICY = SandboxPolicy(
    runtime="runc",
    memory_bytes=256 * MiB,
    cpus=1.0,
    pids_limit=64,
    nofile=256,
    scratch_bytes=16 * MiB,
    shm_bytes=8 * MiB,
    socket_dir_bytes=1 * MiB,
    log_max_bytes=256 * 1024,
)
# "continue": these tests look at every item's outcome after an agent error (Limits' default,
# "abort", is tested on its own: test_runner.py)
TEST_LIMITS = Limits(
    readiness_s=30,
    per_item_s=2,
    max_consecutive_timeouts=2,
    max_restarts=2,
    error_policy="continue",
)


@pytest.fixture(scope="session")
def docker_client():
    docker = required.module("docker")
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:  # no engine here: the docker-marked tests cannot run
        required.unavailable(f"no Docker engine: {exc}")
    yield client
    client.close()


@pytest.fixture(params=RUNTIMES)
def agent_runtime(request, docker_client) -> str:
    """Each runtime agents run under (``workers.runtimes``), where this engine offers it;
    unavailable where not (skipped here, failed in CI: its engine registers runsc)."""
    if request.param not in offered(docker_client):
        required.unavailable(f"the engine does not offer the {request.param} runtime")
    return request.param


@pytest.fixture(scope="session")
def build_engine(docker_client):
    """A client of the build engine (``PODIUM_BUILD_ENGINE``), where team builds run."""
    docker = required.module("docker")
    from workers.build_engine import configured_url

    try:
        client = docker.DockerClient(base_url=configured_url())
        client.ping()
    except Exception as exc:  # scripts/install.sh starts it
        required.unavailable(f"no build engine at {configured_url()}: {exc}")
    yield client
    client.close()


@pytest.fixture(scope="session")
def base_image(docker_client) -> str:
    """The agent base image, built (or found up to date) once per session."""
    return build_agent_base()


def build_agent_base() -> str:
    """``deploy/agent-base/build.sh``: the agent base image built, or found up to date (where
    it cannot be rebuilt outside CI, the existing one is used, with a warning)."""
    result = subprocess.run(
        ["bash", str(REPO / "deploy/agent-base/build.sh")], capture_output=True, text=True
    )
    if result.returncode != 0:
        listed = subprocess.run(["docker", "image", "inspect", BASE_IMAGE], capture_output=True)
        if required.in_ci() or listed.returncode != 0:
            pytest.fail(f"building {BASE_IMAGE} failed:\n{result.stderr[-3000:]}")
        warnings.warn(
            f"{BASE_IMAGE} could not be rebuilt; testing with the existing one", stacklevel=1
        )
    return BASE_IMAGE


def context_tarball(directory: Path, out: Path) -> Path:
    with tarfile.open(out, "w") as tar:
        for path in sorted(directory.iterdir()):
            tar.add(path, arcname=path.name)
    return out


@pytest.fixture(scope="session")
def agent_image(docker_client, base_image, tmp_path_factory) -> Callable[[str], AgentImage]:
    """``agent_image("hostile/hang")``: a test agent under tests/workers/ (or an example,
    ``agent_image("examples/agents/idk")``), built once per session."""
    built = BUILT
    lock = threading.Lock()
    workdir = tmp_path_factory.mktemp("contexts")

    def build(name: str) -> AgentImage:
        with lock:
            if name not in built:
                directory = REPO / name if name.startswith("examples/") else HERE / name
                tarball = context_tarball(directory, workdir / f"{name.replace('/', '-')}.tar")
                tag = f"{TEST_PREFIX}{name.replace('/', '-').replace('_', '-')}:latest"
                built[name] = build_context(tarball, tag=tag, timeout_s=300, client=docker_client)
            return built[name]

    return build


BUILT: dict[str, AgentImage] = {}  # this session's test images, by name


def write_image(path: Path, colour: tuple[int, int, int], size=(64, 48)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path, format="JPEG")


def make_split(root: Path, turn_counts: list[int], queries: dict[str, str] | None = None) -> Split:
    """A split whose conversation ``c<i>`` has ``turn_counts[i]`` turns ``c<i>-t<j>``; every
    ground truth carries the marker PODIUM-GROUND-TRUTH. Written in Podium's format too."""
    queries = queries or {}
    conversations = []
    lines = []
    for i, count in enumerate(turn_counts):
        image = f"images/c{i}.jpg"
        write_image(root / image, (40 * i % 256, 80, 160), size=(64 + i, 48))
        turns = tuple(
            Turn(
                interaction_id=f"c{i}-t{j}",
                query=queries.get(f"c{i}-t{j}", f"question {j} about conversation {i}?"),
                ground_truth=f"PODIUM-GROUND-TRUTH answer c{i}-t{j}",
                labels={
                    "domain": "vehicle",
                    "query_category": "simple-recognition",
                    "dynamism": "static",
                    "image_quality": "normal",
                },
            )
            for j in range(count)
        )
        conversations.append(Conversation(f"c{i}", image, None, turns))
        lines.append(
            json.dumps(
                {
                    "session_id": f"c{i}",
                    "image": image,
                    "image_url": None,
                    "turns": [
                        {"interaction_id": t.interaction_id, "query": t.query, **t.labels}
                        for t in turns
                    ],
                    "answers": [
                        {"interaction_id": t.interaction_id, "ans_full": t.ground_truth}
                        for t in turns
                    ],
                }
            )
        )
    (root / "sessions.jsonl").write_text("\n".join(lines) + "\n")
    return Split(root=root, conversations=conversations)


class Recorder:
    """A sink keeping every ItemResult in arrival order, and the size of each call."""

    def __init__(self) -> None:
        self.results: list[ItemResult] = []
        self.calls: list[int] = []

    def __call__(self, results: list[ItemResult]) -> None:
        self.results.extend(results)
        self.calls.append(len(results))

    def by_id(self) -> dict[str, ItemResult]:
        return {r.key: r for r in self.results}


class IdentityTruncator:
    name = "identity"

    def truncate(self, text: str) -> str:
        return text


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


def _labelled(labels: dict[str, str], wanted: set[str]) -> bool:
    return f"{LABEL_IMAGE}={labels.get(LABEL_IMAGE)}" in wanted


@pytest.fixture
def no_leftovers(docker_client) -> Iterator[None]:
    """Asserts the test left no container or socket volume of this session's test images
    behind (other sessions' runs on the same engine are not this test's business)."""

    def current() -> tuple[set[str], set[str]]:
        ours = {f"{LABEL_IMAGE}={image.image_id}" for image in BUILT.values()}
        containers = listed_containers(docker_client, {"label": LABEL_RUN})
        volumes = docker_client.volumes.list(filters={"label": LABEL_RUN})
        return (
            {c.name for c in containers if _labelled(c.labels, ours)},
            {v.name for v in volumes if _labelled(v.attrs.get("Labels") or {}, ours)},
        )

    containers_before, volumes_before = current()
    yield
    containers_after, volumes_after = current()
    assert containers_after <= containers_before, "containers left behind"
    assert volumes_after <= volumes_before, "socket volumes left behind"


def tar_bytes(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
