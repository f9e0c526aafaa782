"""The deployment smoke test: Podium's image built by deploy/images/build.sh; the web (gunicorn),
a worker on every queue and beat started from it as containers on this machine's PostgreSQL and
Redis (host network), the worker reaching the Docker engine through its socket as in
deploy/compose.yaml; the example agent submitted, evaluated and ranked on the leaderboard page
that gunicorn serves."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.db import connection
from django.urls import reverse

from evaluator.benchmarks.crag_mm.sample import write_sample
from leaderboard.models import Challenge, EvaluationRun, Submission
from leaderboard.pipeline.bundles import store_corpus
from leaderboard.splits import import_split_dir
from tests import required
from tests.deploy.compose_stack import build, free_port
from tests.e2e.harness import ALL_QUEUES, BROKER, make_task, pipeline, submit_agent, team_member
from tests.workers.conftest import base_image, docker_client

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
__all__ = ["base_image", "docker_client", "pipeline", "team_member"]  # fixtures used below

REPO = Path(__file__).resolve().parents[2]
TASK = "single-source-augmentation"
AGENT = REPO / "examples" / "agents" / "rag-kit-a"


@pytest.fixture(scope="session")
def podium_image(docker_client) -> str:
    """podium/podium:<commit>, built (or found up to date) by deploy/images/build.sh."""
    started = time.monotonic()
    image = build("deploy/images/build.sh")[-1]
    print(f"\n{image}: built or found in {time.monotonic() - started:.0f} s")
    return image


class Stack:
    """Podium's containers for one test, removed at the end."""

    def __init__(self, client, image: str, tmp: Path) -> None:
        self.client, self.image, self.containers = client, image, {}
        self.port = free_port()
        db = connection.settings_dict
        self.env = {
            "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:"
            f"{db['PORT'] or 5432}/{db['NAME']}",
            "REDIS_URL": BROKER,
            # the tests' install (tests/conftest.py): the queues the test process sends to
            "PODIUM_INSTALL_ID": os.environ["PODIUM_INSTALL_ID"],
            "SECRET_KEY": "smoke-test-key",
            "ALLOWED_HOSTS": "127.0.0.1",
            "PODIUM_MEDIA_ROOT": str(tmp / "media"),
            "PODIUM_VAR_DIR": str(tmp / "var"),
            "PODIUM_RETRY_BACKOFF_S": "1",
            "PODIUM_RETRY_BACKOFF_MAX_S": "2",
        }
        (tmp / "var" / "tmp").mkdir(parents=True, exist_ok=True)
        self.tmp = tmp

    def start(
        self, role: str, command: list[str], *, engine: bool = False, var_dir: str = "", **kw
    ) -> None:
        volumes = {}
        env = dict(self.env)
        if var_dir:  # as deploy/compose.yaml sets it for the web
            env["PODIUM_VAR_DIR"] = var_dir
        if engine:  # as deploy/compose.yaml mounts them for the build and GPU workers
            volumes = {
                "/var/run/docker.sock": {"bind": "/var/run/docker.sock", "mode": "rw"},
                "/run/podium-build": {"bind": "/run/podium-build", "mode": "rw"},
                "/var/lib/podium-build": {"bind": "/var/lib/podium-build", "mode": "ro"},
                "/var/lib/docker/volumes": {"bind": "/var/lib/docker/volumes", "mode": "rslave"},
                str(self.tmp): {"bind": str(self.tmp), "mode": "rw"},
            }
            env["TMPDIR"] = str(self.tmp / "var" / "tmp")
        self.containers[role] = self.client.containers.run(
            self.image, command, detach=True, network_mode="host", environment=env,
            volumes=volumes, name=f"podium-smoke-{role}-{os.getpid()}", **kw,
        )  # fmt: skip

    def logs(self) -> str:
        return "\n".join(
            f"--- {role}:\n{c.logs(tail=80).decode(errors='replace')}"
            for role, c in self.containers.items()
        )

    def probe(self, role: str, *command: str) -> tuple[int, str]:
        code, output = self.containers[role].exec_run(list(command))
        return code, output.decode(errors="replace")

    def remove(self) -> None:
        for container in self.containers.values():
            container.remove(force=True)


@pytest.fixture
def stack(docker_client, podium_image, pipeline) -> Iterator[Stack]:
    deployed = Stack(docker_client, podium_image, pipeline.tmp)
    try:
        yield deployed
    finally:
        deployed.remove()


def _wait_ready(stack: Stack, url: str, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    pytest.fail(f"{url} never answered 200\n{stack.logs()}")


def test_the_images_serve_evaluate_and_rank_the_example_agent(
    stack, pipeline, team_member, base_image, tmp_path
):
    if not AGENT.is_dir():
        required.unavailable(f"{AGENT} is missing")
    team, user = team_member
    sample = tmp_path / "sample"
    write_sample(sample)
    challenge = Challenge.objects.create(name="Smoke", slug="smoke", is_published=True)
    task = make_task(challenge, TASK, image_search_enabled=True)
    import_split_dir(task, "validation", sample / TASK / "validation")
    store_corpus(challenge, sample / "corpus")

    site = f"http://127.0.0.1:{stack.port}"
    stack.start("web", ["gunicorn", "podium.wsgi:application", f"--bind=127.0.0.1:{stack.port}",
                        "--workers=2"], user="65534:65534", var_dir="/tmp/podium")  # fmt: skip
    stack.start("worker", ["celery", "-A", "podium", "worker", "-Q", ALL_QUEUES,
                           "--concurrency=1", "-l", "INFO"], engine=True)  # fmt: skip
    stack.start("beat", ["celery", "-A", "podium", "beat", "-s", "/tmp/celerybeat-schedule"])
    _wait_ready(stack, f"{site}/readyz")
    static = httpx.get(f"{site}/static/leaderboard/podium.css", headers={"Accept-Encoding": "gzip"})
    assert static.status_code == 200 and static.headers["content-encoding"] == "gzip"

    submission = submit_agent(team, user, challenge, AGENT, "rag-kit-a-agent")
    try:
        (run,) = pipeline.wait_finished(submission, timeout_s=600)
    except pytest.fail.Exception as exc:
        pytest.fail(f"{exc}\n{stack.logs()}")
    assert run.state == EvaluationRun.State.DONE, (run.failure_reason, stack.logs())
    submission.refresh_from_db()
    assert submission.state == Submission.State.READY

    board = reverse("leaderboard:leaderboard", args=[challenge.slug, TASK, "validation"])
    page = httpx.get(f"{site}{board}", timeout=30)
    assert page.status_code == 200 and page.headers["server"] == "gunicorn"
    assert ">rag-kit-a-agent</a>" in page.text, page.text[:3000]

    for role in ("worker", "beat"):
        code, output = stack.probe(role, "python", "-m", "podium.health", role)
        assert code == 0, f"{role} probe: {output}"
