"""The Compose stack started end to end: ``deploy/compose.yaml`` with ``deploy/compose.cpu.yaml``
(this machine has no GPU), every image built here offline (``deploy/images/build.sh``,
``deploy/images/build-services.sh``), under a project name, web port and host directory of its
own, removed at the end with its volumes (``down -v``) whatever happened.

One test, in the order an operator meets them:

1. ``up``: PostgreSQL, Redis and SeaweedFS healthy, the bucket and the migrations one-shots
   done, the web answering ``/readyz``;
2. the CRAG-MM demo challenge imported as a bundle zip through the API (``POST
   /api/bundles/import/``) by an organiser whose token came from ``POST /api/token/``;
3. a team's agent (``examples/agents/idk``) submitted through the API on one task: its three
   runs built and answered by the stack's workers, judged and ranked on the board page the web
   serves;
4. ``down`` (volumes kept) and ``up`` again: the same token, submissions, runs, answers, board
   and every object in the bucket (a boto3 listing from inside the stack);
5. an upgrade with a run in flight: the counter agent (``tests/e2e/agents/counter``, slowed
   down) answering, the next image made and ``up -d`` with it: the migrations one-shot runs
   again, the GPU worker gets SIGTERM while the run is answered and finishes it (Celery's warm
   shutdown) before its successor starts; every run ends DONE on its first attempt with every
   turn answered exactly once.

Times are printed with ``-s``:
``pytest -s -p no:randomly -m docker tests/deploy/test_compose_stack.py``.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tarfile
import threading
import time
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.urls import reverse

from tests import required
from tests.deploy.render import COMPOSE, COMPOSE_CPU, ENV_EXAMPLE, REPO, docker_compose
from tests.workers.conftest import docker_client

# the first build of every image on a fresh machine takes minutes more than the test itself
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1800)]
__all__ = ["docker_client"]  # a fixture used below

SLUG = "crag-mm-demo"
FIRST_TASK = "single-source-augmentation"  # the first submission's
UPGRADE_TASK = "multi-turn-qa"  # the run in flight during the upgrade
PASSWORD = "compose-e2e-password"
COUNTER_DELAY_S = 1.0  # per batch of two turns: a run answers for ~30 s
SERVICES_RUNNING = {
    "postgres", "redis", "seaweedfs", "web", "worker-build", "worker-gpu", "worker-judge",
    "worker-default", "beat",
}  # fmt: skip
# What to make in the stack before the API can be used: the organiser (staff: may import a
# challenge) with a verified address, in one team.
MAKE_ORGANISER = f"""
from allauth.account.models import EmailAddress
from django.contrib.auth.models import User
from leaderboard.models import Membership, Team
user = User.objects.create_superuser("organiser", "organiser@example.org", "{PASSWORD}")
EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
Membership.objects.create(team=Team.objects.create(name="Abstainers"), user=user)
"""
ACCEPT_RULES = f"""
from django.contrib.auth.models import User
from leaderboard.models import Challenge
from leaderboard.pages import accept_rules, must_accept_rules
user, challenge = User.objects.get(username="organiser"), Challenge.objects.get(slug="{SLUG}")
if must_accept_rules(user, challenge):
    accept_rules(user, challenge)
"""
LIST_BUCKET = """
import json, os, boto3
s3 = boto3.client("s3", endpoint_url=os.environ["PODIUM_S3_ENDPOINT_URL"],
    region_name=os.environ["PODIUM_S3_REGION"],
    aws_access_key_id=os.environ["PODIUM_S3_ACCESS_KEY_ID"],
    aws_secret_access_key=os.environ["PODIUM_S3_SECRET_ACCESS_KEY"])
pages = s3.get_paginator("list_objects_v2").paginate(Bucket=os.environ["PODIUM_S3_BUCKET"])
found = [[o["Key"], o["Size"], o["ETag"]] for p in pages for o in p.get("Contents", [])]
print(json.dumps(sorted(found)))
"""


def _build(script: str, **env: str) -> list[str]:
    done = subprocess.run(
        ["bash", str(REPO / script)], capture_output=True, text=True, env=os.environ | env
    )
    if done.returncode != 0:
        pytest.fail(f"{script} failed:\n{done.stderr[-4000:]}")
    return done.stdout.split()


@pytest.fixture(scope="module")
def images(docker_client) -> dict[str, str]:
    """Podium's image, the services' images and the agent base, built or found up to date."""
    if not Path("/run/podium-build/docker.sock").exists():
        required.unavailable("no build engine (bash scripts/build-engine.sh)")
    started = time.monotonic()
    (podium,) = _build("deploy/images/build.sh")
    services = _build("deploy/images/build-services.sh")
    _build("deploy/agent-base/build.sh")
    print(f"\nimages built or found in {time.monotonic() - started:.0f} s: {podium} {services}")
    return {"podium": podium}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Stack:
    """One Compose project of deploy/compose.yaml + compose.cpu.yaml, its settings in an env
    file of its own (deploy/.env.example with this test's values)."""

    def __init__(self, tmp: Path, image: str) -> None:
        self.project = f"podium-e2e-{os.getpid()}"
        self.port = _free_port()
        self.site = f"http://127.0.0.1:{self.port}"
        self.var_dir = tmp / "host-var"  # PODIUM_HOST_VAR_DIR: the engine workers' files
        (self.var_dir / "tmp").mkdir(parents=True)
        self.env_file = tmp / "stack.env"
        self.images: list[str] = []  # made for this test: removed after the stack
        self.settings = {
            "PODIUM_IMAGE": image,
            "PODIUM_INSTALL_ID": self.project,  # its agent containers' podium.site label
            "SECRET_KEY": "compose-e2e-" + "k" * 40,
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "CSRF_TRUSTED_ORIGINS": "",
            "PODIUM_HTTPS": "0",
            "PODIUM_PROXY_COUNT": "0",
            "PODIUM_WEB_PORT": str(self.port),
            "PODIUM_WEB_WORKERS": "2",
            "POSTGRES_PASSWORD": "compose-e2e-db",
            "S3_ACCESS_KEY": "compose-e2e",
            "S3_SECRET_KEY": "compose-e2e-secret",
            "PODIUM_HOST_VAR_DIR": str(self.var_dir),
            "PODIUM_GPU_CLASSES": "cpu",
            "PODIUM_GPU_CLASS": "cpu",
            "PODIUM_IMAGE_STORE": "never",  # one host: no image needs the bucket
            "PODIUM_EMAIL_BACKEND": "",
        }
        self.write_env()

    def write_env(self, **changes: str) -> None:
        self.settings |= changes
        lines = [
            line
            for line in ENV_EXAMPLE.read_text().splitlines()
            if line.split("=", 1)[0] not in self.settings
        ]
        self.env_file.write_text(
            "\n".join([*lines, *(f"{k}={v}" for k, v in self.settings.items())]) + "\n"
        )

    def run(self, *args: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
        """``docker compose`` on this project, reading the env file only: the test process's
        own environment (its PODIUM_* settings) would win over the file."""
        command = [
            docker_compose(), "-p", self.project, "-f", str(COMPOSE), "-f", str(COMPOSE_CPU),
            "--env-file", str(self.env_file), *args,
        ]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME") or k[:7] == "DOCKER_"}
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env)

    def compose(self, *args: str, timeout_s: float = 600, check: bool = True) -> str:
        done = self.run(*args, timeout_s=timeout_s)
        if check and done.returncode != 0:
            pytest.fail(f"docker compose {' '.join(args)}: {done.stderr[-3000:]}\n{self.logs()}")
        return done.stdout

    def up(self) -> float:
        started = time.monotonic()
        self.compose("up", "-d", "--pull", "never", "--quiet-pull")
        self.wait_ready()
        return time.monotonic() - started

    def wait_ready(self, timeout_s: float = 180) -> None:
        wait_for(f"{self.site}/readyz", lambda: _get(f"{self.site}/readyz") == 200, timeout_s, self)

    def running(self) -> set[str]:
        return set(self.compose("ps", "--services", "--status", "running").split())

    def container(self, service: str) -> dict[str, Any]:
        (cid,) = self.compose("ps", "-a", "-q", service).split()
        done = subprocess.run(["docker", "inspect", cid], capture_output=True, text=True)
        return json.loads(done.stdout)[0]

    def exec_python(self, service: str, *command: str) -> str:
        return self.compose("exec", "-T", service, "python", *command, timeout_s=180)

    def logs(self) -> str:
        return self.run("logs", "--no-color", "--tail", "40", timeout_s=120).stdout[-12000:]

    def remove(self) -> None:
        """Everything the project made (containers, network, volumes) and the agent
        containers and volumes its workers started on the engine (labelled with its install)."""
        self.compose("down", "-v", "--remove-orphans", "-t", "20", check=False)
        label = f"label=podium.site={self.project}"
        for kind in ("container", "volume"):
            listed = subprocess.run(
                ["docker", kind, "ls", "-q", *(["-a"] if kind == "container" else []),
                 "--filter", label],
                capture_output=True, text=True,
            ).stdout.split()  # fmt: skip
            if listed:
                subprocess.run(["docker", kind, "rm", "-f", *listed], capture_output=True)
        for image in self.images:
            subprocess.run(["docker", "image", "rm", "-f", image], capture_output=True)


def _get(url: str, **kw: Any) -> int:
    try:
        return httpx.get(url, timeout=10, **kw).status_code
    except httpx.HTTPError:
        return 0


def wait_for(what: str, done: Callable[[], bool], timeout_s: float, stack: Stack) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout_s:.0f} s\n{stack.logs()}")
        time.sleep(1)


@pytest.fixture
def stack(images, tmp_path) -> Iterator[Stack]:
    deployed = Stack(tmp_path, images["podium"])
    try:
        yield deployed
    finally:
        deployed.remove()
        shutil.rmtree(deployed.var_dir, ignore_errors=True)


class Api:
    """The web service's REST API with the organiser's token."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        answer = httpx.post(
            f"{stack.site}/api/token/",
            data={"username": "organiser", "password": PASSWORD, "name": "e2e"},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        self.headers = {"Authorization": f"Token {answer.json()['token']}"}

    def get(self, path: str, **params: str) -> httpx.Response:
        answer = httpx.get(
            f"{self.stack.site}{path}", headers=self.headers, params=params, timeout=60
        )
        assert answer.status_code == 200, (path, answer.status_code, answer.text[:2000])
        return answer

    def post(self, path: str, data: dict[str, Any], files: dict[str, Any]) -> dict[str, Any]:
        answer = httpx.post(
            f"{self.stack.site}{path}", headers=self.headers, data=data, files=files, timeout=300
        )
        assert answer.status_code in (200, 201), (path, answer.status_code, answer.text[:3000])
        return dict(answer.json())

    def runs(self, submission: int) -> list[dict[str, Any]]:
        found = self.get(f"/api/submissions/{submission}/").json()
        if found["state"] in ("failed", "podium-failed", "cancelled"):
            pytest.fail(f"submission {submission} failed: {found}\n{self.stack.logs()}")
        return list(found["runs"])

    def submit(self, method: str, context: bytes, task: str) -> int:
        data = {
            "challenge": SLUG, "team": "Abstainers", "artifact_kind": "build-context",
            "method_name": method, "tasks": [task],
        }  # fmt: skip
        return int(
            self.post("/api/submissions/", data, {"artifact": (f"{method}.tar", context)})["id"]
        )

    def wait_done(self, submission: int, timeout_s: float) -> list[dict[str, Any]]:
        def finished() -> bool:
            runs = self.runs(submission)
            return bool(runs) and all(r["state"] in ("done", "failed", "cancelled") for r in runs)

        wait_for(f"submission {submission}'s runs", finished, timeout_s, self.stack)
        return self.runs(submission)

    def answers(self, task: str) -> list[dict[str, Any]]:
        """Every answer stored for the task's runs (the export: organisers only)."""
        text = self.get(f"/api/challenges/{SLUG}/answers.jsonl").text
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        return [row for row in rows if row["task"] == task]

    def state(self) -> dict[str, Any]:
        """What must survive a restart: the submissions with their runs, the answers."""
        submissions = self.get("/api/submissions/").json()
        rows = submissions["results"] if isinstance(submissions, dict) else submissions
        return {
            "submissions": sorted(
                (
                    s["id"],
                    s["method_name"],
                    sorted((r["id"], r["state"], r["items_done"]) for r in s["runs"]),
                )
                for s in rows
            ),
            "answers": sorted(
                (a["run"], a["item_key"], a["response"]) for a in self.answers(FIRST_TASK)
            ),
        }


def context_tar(directory: Path, dockerfile_extra: str = "") -> bytes:
    """A build context: the directory's files at the top of a tar, its Dockerfile with
    ``dockerfile_extra`` appended."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(directory.iterdir()):
            data = path.read_bytes()
            if path.name == "Dockerfile":
                data += dockerfile_extra.encode()
            info = tarfile.TarInfo(path.name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def demo_bundle_zip(tmp: Path) -> bytes:
    """The CRAG-MM demo challenge's bundle with its generated data (as the demo makes it)."""
    from leaderboard.demo.setup import bundle

    directory = bundle(SLUG, "crag-mm", under=tmp / "bundles")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundled:
        for path in sorted(directory.rglob("*")):
            if path.is_file() and not path.name.startswith("."):  # the demo's marker
                bundled.write(path, path.relative_to(directory).as_posix())
    return buffer.getvalue()


def bucket_objects(stack: Stack) -> list[list[Any]]:
    return list(json.loads(stack.exec_python("worker-default", "-c", LIST_BUCKET)))


class Follow:
    """``docker logs -f`` of one container into memory until it is removed."""

    def __init__(self, container_id: str) -> None:
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            ["docker", "logs", "-f", "--timestamps", container_id],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def close(self) -> list[str]:
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.thread.join(timeout=10)
        return self.lines


def _turns_asked_once(answers: list[dict[str, Any]], run: int, items: int) -> None:
    """Every item of the run answered once, and each agent process asked its turns 1, 2, 3...
    (a turn asked twice leaves a gap: its first answer was never stored)."""
    mine = [a for a in answers if a["run"] == run]
    keys = [a["item_key"] for a in mine]
    assert len(keys) == len(set(keys)) == items, (run, len(keys), len(set(keys)), items)
    asked: dict[str, list[int]] = defaultdict(list)
    for answer in mine:
        record = json.loads(answer["response"])
        asked[record["process"]].append(record["asked"])
    for counts in asked.values():
        assert sorted(counts) == list(range(1, len(counts) + 1)), (run, sorted(counts))


def test_the_compose_stack_up_evaluates_survives_a_restart_and_an_upgrade_mid_run(
    stack, docker_client, tmp_path
):
    times: dict[str, float] = {}
    began = time.monotonic()

    # 1. up
    times["up"] = stack.up()
    assert stack.running() == SERVICES_RUNNING
    for one_shot in ("migrate", "bucket"):
        state = stack.container(one_shot)["State"]
        assert state["Status"] == "exited" and state["ExitCode"] == 0, one_shot

    # 2. the demo challenge imported through the API by its organiser
    step = time.monotonic()
    stack.exec_python("web", "manage.py", "shell", "-c", MAKE_ORGANISER)
    api = Api(stack)
    imported = api.post(
        "/api/bundles/import/", {}, {"bundle": (f"{SLUG}.zip", demo_bundle_zip(tmp_path))}
    )
    assert imported.get("version"), imported
    stack.exec_python("web", "manage.py", "shell", "-c", ACCEPT_RULES)
    times["import"] = time.monotonic() - step

    # 3. a submission through the API, evaluated by the workers, ranked on the board
    step = time.monotonic()
    first = api.submit("idk", context_tar(REPO / "examples/agents/idk"), FIRST_TASK)
    runs = api.wait_done(first, timeout_s=600)
    assert len(runs) == 3 and {r["state"] for r in runs} == {"done"}, runs
    board = reverse("leaderboard:leaderboard", args=[SLUG, FIRST_TASK, "validation"])
    page = httpx.get(f"{stack.site}{board}", timeout=30)
    assert page.status_code == 200 and page.headers["server"] == "gunicorn"
    assert ">idk</a>" in page.text, page.text[:3000]
    times["first submission"] = time.monotonic() - step

    # 4. down (volumes kept) and up: every row and object still there
    step = time.monotonic()
    before, objects = api.state(), bucket_objects(stack)
    assert len(before["answers"]) == sum(r["items_total"] for r in runs)
    assert len(objects) >= 10, objects  # nine split bundles, the corpus, the upload ...
    stack.compose("down", "-t", "30")
    assert stack.running() == set()
    stack.up()
    assert api.state() == before  # the same token, rows and answers
    assert bucket_objects(stack) == objects
    assert ">idk</a>" in httpx.get(f"{stack.site}{board}", timeout=30).text
    times["down and up"] = time.monotonic() - step

    # 5. an upgrade with a run in flight. The counter's three runs queue on the one GPU worker
    # (one at a time, each ~30 s or more): the upgrade begins as soon as the first is answered,
    # so the old worker is still answering one of them when its SIGTERM comes after the
    # migrations.
    step = time.monotonic()
    next_image = f"{stack.settings['PODIUM_IMAGE']}-next"
    docker_client.images.build(
        fileobj=io.BytesIO(
            f"FROM {stack.settings['PODIUM_IMAGE']}\nLABEL org.podium.e2e.next=1\n".encode()
        ),
        tag=next_image, network_mode="none", rm=True,
    )  # fmt: skip
    stack.images.append(next_image)
    counter = context_tar(
        REPO / "tests/e2e/agents/counter",
        f'\nRUN sed -i "s/^DELAY_S = .*/DELAY_S = {COUNTER_DELAY_S}/" /agent/agent.py\n',
    )
    second = api.submit("counter", counter, UPGRADE_TASK)

    def answering() -> bool:  # (runs waiting for the worker are "running" too, with no item)
        return any(r["state"] == "running" and r["items_done"] >= 2 for r in api.runs(second))

    wait_for("the counter agent answering", answering, 600, stack)
    old_worker = stack.container("worker-gpu")
    following = Follow(old_worker["Id"])
    stack.write_env(PODIUM_IMAGE=next_image)
    upgrade_began = time.monotonic()
    stack.compose("up", "-d", "--pull", "never", "--quiet-pull", timeout_s=900)
    times["upgrade (up -d)"] = time.monotonic() - upgrade_began
    old_log = following.close()
    stack.wait_ready()
    runs = api.wait_done(second, timeout_s=600)
    # every run done on its first attempt: none was cut off and re-queued
    assert {r["state"] for r in runs} == {"done"} and {r["attempt"] for r in runs} == {0}, runs
    new_worker = stack.container("worker-gpu")
    assert new_worker["Id"] != old_worker["Id"]
    assert new_worker["Config"]["Image"] == next_image
    migrate = stack.container("migrate")
    assert migrate["Config"]["Image"] == next_image and migrate["State"]["ExitCode"] == 0
    # The old worker was asked to stop while it answered a run, finished that run (Celery's
    # warm shutdown), then exited.
    shutdown = next((i for i, line in enumerate(old_log) if "Warm shutdown" in line), None)
    assert shutdown is not None, "".join(old_log[-60:])
    finished = [line for line in old_log[shutdown:] if "answer_run" in line and "succeeded" in line]
    assert finished, f"no run in flight at the SIGTERM:\n{''.join(old_log[-60:])}"
    answers = api.answers(UPGRADE_TASK)
    for run in runs:
        _turns_asked_once(answers, run["id"], run["items_total"])
    times["upgrade with a run in flight"] = time.monotonic() - step
    times["whole test"] = time.monotonic() - began
    print("\n" + "; ".join(f"{what}: {seconds:.0f} s" for what, seconds in times.items()))
