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
import shutil
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.urls import reverse

from leaderboard.demo.setup import context_tar
from tests import required
from tests.deploy.compose_stack import Follow, Stack, bucket_objects, built_images, wait_for
from tests.deploy.render import REPO
from tests.deploy.stack_api import SLUG, Api, accept_rules, demo_bundle_zip, make_organiser
from tests.workers.conftest import docker_client

# the first build of every image on a fresh machine takes minutes more than the test itself
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1800)]
__all__ = ["docker_client"]  # a fixture used below

FIRST_TASK = "single-source-augmentation"  # the first submission's
UPGRADE_TASK = "multi-turn-qa"  # the runs in flight during the upgrade
COUNTER_DELAY_S = 1.0  # per batch of two turns: a run answers for ~30 s
SERVICES_RUNNING = {
    "postgres", "redis", "seaweedfs", "web", "worker-build", "worker-gpu", "worker-judge",
    "worker-default", "beat",
}  # fmt: skip


@pytest.fixture(scope="module")
def podium_image(docker_client) -> str:
    if not Path("/run/podium-build/docker.sock").exists():
        required.unavailable("no build engine (bash scripts/build-engine.sh)")
    return built_images()


@pytest.fixture
def stack(podium_image, tmp_path) -> Iterator[Stack]:
    deployed = Stack(tmp_path, podium_image)
    try:
        yield deployed
    finally:
        deployed.remove()
        shutil.rmtree(deployed.var_dir, ignore_errors=True)


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
    make_organiser(stack)
    api = Api(stack)
    imported = api.post(
        "/api/bundles/import/", {}, {"bundle": (f"{SLUG}.zip", demo_bundle_zip(tmp_path))}
    )
    assert imported.get("version"), imported
    accept_rules(stack)
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
    before, objects = api.state(FIRST_TASK), bucket_objects(stack)
    assert len(before["answers"]) == sum(r["items_total"] for r in runs)
    assert len(objects) >= 10, objects  # nine split bundles, the corpus, the upload ...
    stack.compose("down", "-t", "30")
    assert stack.running() == set()
    stack.up()
    assert api.state(FIRST_TASK) == before  # the same token, rows and answers
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
    counter_dir = shutil.copytree(REPO / "tests/e2e/agents/counter", tmp_path / "counter")
    with (counter_dir / "Dockerfile").open("a") as dockerfile:
        dockerfile.write(
            f'\nRUN sed -i "s/^DELAY_S = .*/DELAY_S = {COUNTER_DELAY_S}/" /agent/agent.py\n'
        )
    counter = context_tar(counter_dir)
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
