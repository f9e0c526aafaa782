"""Worker nodes lost and engines restarted mid-run (``tests/cluster/nodes.py``): the run
completes elsewhere or later, no stored turn is asked again, none is lost, the image reaches a
late node through storage, and the node's janitor removes what its dead worker left; and, with
``PODIUM_IMAGE_STORE=auto``, a build node's image reaches a GPU node through storage.

Each node: its own dockerd, cache directory and ``celery worker``; shared PostgreSQL, Redis
and SeaweedFS's S3 server (``tests/seaweedfs.py``). Figures (time to recover) are printed
with ``-s``.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from contextlib import closing

import pytest

from leaderboard.models import Challenge, EvaluationRun, ItemAnswer
from leaderboard.splits import import_split_dir
from tests.cluster.nodes import BASE_IMAGE, Cluster, Node, image_events, wait_until
from tests.e2e.harness import REPO, make_task, submit_agent, team_member, write_split
from workers.image_export import archive_name
from workers.sandbox import LABEL_NODE, LABEL_WORKER

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
__all__ = ["team_member"]  # a fixture used by the tests below

State = EvaluationRun.State
COUNTER = REPO / "tests/e2e/agents/counter"  # answers with its own count of the turns asked


def _counter_run(team_member, tmp_path, slug: str) -> EvaluationRun:
    team, user = team_member
    challenge = Challenge.objects.create(name=slug, slug=slug, is_published=True)
    task = make_task(challenge, "multi-turn-qa")
    import_split_dir(task, "validation", write_split(tmp_path / "split", 8, 3))
    submission = submit_agent(team, user, challenge, COUNTER, "counter")
    return EvaluationRun.objects.get(submission=submission)


def _wait(cluster: Cluster, what: str, check, timeout_s: float = 120) -> None:  # type: ignore[no-untyped-def]
    try:
        wait_until(what, check, timeout_s, every_s=0.1)
    except TimeoutError as exc:
        pytest.fail(f"{exc}\n{cluster.logs()}")


def _finished(run: EvaluationRun) -> bool:
    run.refresh_from_db()
    return run.state in EvaluationRun.TERMINAL_STATES


def _leftovers(node: Node) -> tuple[list[str], list[str]]:
    """The node's labelled containers and volumes in its engine."""
    mine = {"label": f"{LABEL_NODE}={node.name}"}
    with closing(node.engine.client()) as client:
        containers = [c.name for c in client.containers.list(all=True, filters=mine)]
        return containers, [v.name for v in client.volumes.list(filters=mine)]


def _asked_by_process(run: EvaluationRun) -> dict[str, list[tuple[int, str]]]:
    """Per agent process, (its count of turns asked, item key) of every stored answer."""
    asked: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for row in ItemAnswer.objects.filter(run=run).order_by("created_at", "pk"):
        record = json.loads(row.response)
        asked[record["process"]].append((record["asked"], row.item_key))
    return asked


def test_a_node_lost_mid_run_its_run_resumes_on_a_late_node_and_its_orphans_are_removed(
    cluster, team_member, tmp_path
):
    run = _counter_run(team_member, tmp_path, "node-lost")
    submission = run.submission
    answers = ItemAnswer.objects.filter(run=run)
    first = cluster.add_node("node-a")
    cluster.start_beat()
    _wait(cluster, "answers on node-a", lambda: answers.count() >= 6)
    first.kill()  # the worker SIGKILLed, its engine stopped: the machine is gone
    lost_at = time.monotonic()
    stored_at_kill = set(answers.values_list("item_key", flat=True))
    assert 6 <= len(stored_at_kill) < run.split.items, "node-a must die mid-run"

    # A node joins late: no base image in its engine, so it could not build the agent.
    joined = time.time()
    second = cluster.add_node("node-b", base_image=False)
    _wait(cluster, "the run to finish on node-b", lambda: _finished(run))
    recovered_s = time.monotonic() - lost_at
    assert run.state == State.DONE, (run.failure_reason, run.operator_detail)
    assert run.attempt == 1

    keys = list(answers.values_list("item_key", flat=True))
    assert len(keys) == run.split.items == len(set(keys))  # none lost, none stored twice
    before, after = _asked_by_process(run).values()
    # Each agent process counted its turns 1, 2, 3...: no turn was asked twice of either; the
    # second was asked exactly the turns unanswered at the kill (the first's last batch, in
    # flight when its node died, was never stored: that one was asked again).
    assert [n for n, _ in before] == list(range(1, len(before) + 1))
    assert [n for n, _ in after] == list(range(1, len(after) + 1))
    assert {key for _, key in before} == stored_at_kill
    assert {key for _, key in after} == set(keys) - stored_at_kill

    # The image came to node-b from storage, by its ID: loaded, never pulled nor built there.
    submission.refresh_from_db()
    assert f"podium/{archive_name(submission.image_digest)}" in cluster.stored("podium/")
    actions = image_events(second, joined)
    assert "load" in actions and "pull" not in actions, actions
    assert f"image {submission.image_digest} loaded from storage" in second.log()
    with closing(second.engine.client()) as client:
        assert [image.id for image in client.images.list()] == [submission.image_digest]

    # node-a comes back: its engine still holds the dead worker's container and volumes
    # until the janitor, at the worker's start, removes them.
    first.engine.start()
    containers, volumes = _leftovers(first)
    assert len(containers) == 1 and len(volumes) == 2, (containers, volumes)
    with closing(first.engine.client()) as client:  # not the janitor's: another node's, anyone's
        others = [
            client.containers.create(BASE_IMAGE, labels=labels).id
            for labels in ({LABEL_NODE: "node-b", LABEL_WORKER: "node-b:1"}, {})
        ]
    first.start_worker(cluster.env)
    _wait(cluster, "node-a's janitor", lambda: _leftovers(first) == ([], []), timeout_s=60)
    assert "removed 1 orphaned container(s)" in first.log()
    with closing(first.engine.client()) as client:
        assert {c.id for c in client.containers.list(all=True)} == set(others)
    assert _leftovers(second) == ([], [])  # node-b's finished run left nothing behind
    print(f"\nnode lost: run done {recovered_s:.1f} s after the kill; {len(keys)} answers, turns "
          f"lost 0, stored turns asked again 0")  # fmt: skip


def test_the_node_engine_restarted_mid_run_the_run_completes(cluster, team_member, tmp_path):
    run = _counter_run(team_member, tmp_path, "engine-restart")
    answers = ItemAnswer.objects.filter(run=run)
    node = cluster.add_node("node-a")
    _wait(cluster, "answers", lambda: answers.count() >= 4)
    restarted = time.monotonic()
    node.engine.stop()
    stored_at_stop = answers.count()
    node.engine.start()
    _wait(cluster, "the run to finish", lambda: _finished(run))
    assert run.state == State.DONE, (run.failure_reason, run.operator_detail)
    assert stored_at_stop < run.split.items, "the engine must stop mid-run"
    keys = list(answers.values_list("item_key", flat=True))
    assert len(keys) == run.split.items == len(set(keys))
    for asked in _asked_by_process(run).values():  # no process was asked a turn twice
        assert [n for n, _ in asked] == list(range(1, len(asked) + 1))
    _wait(cluster, "the janitor", lambda: _leftovers(node) == ([], []), timeout_s=30)
    print(f"\nengine restarted: run done {time.monotonic() - restarted:.1f} s after the stop")


def test_auto_mode_a_gpu_node_gets_the_image_its_build_node_made(cluster, team_member, tmp_path):
    """``PODIUM_IMAGE_STORE=auto``, a build node and a GPU node without the base image (as on
    a cluster): the build node stores the image (ahead: another node serves runs, or at once
    when that node asks for it), the GPU node loads it from storage."""
    from leaderboard.models import ImageArchive

    cluster.env["PODIUM_IMAGE_STORE"] = "auto"
    run = _counter_run(team_member, tmp_path, "auto-store")
    builder = cluster.add_node("node-build", start=False)
    builder.start_worker(cluster.env, queues="build")
    runner = cluster.add_node("node-gpu", base_image=False, start=False)
    runner.start_worker(cluster.env, queues="gpu-l40s,judge,default")
    _wait(cluster, "the run to finish on node-gpu", lambda: _finished(run))
    assert run.state == State.DONE, (run.failure_reason, run.operator_detail)
    digest = run.submission.image_digest
    assert f"podium/{archive_name(digest)}" in cluster.stored("podium/")
    assert f"image {digest} stored for the other nodes" in builder.log()
    assert f"image {digest} loaded from storage" in runner.log()
    assert ImageArchive.objects.get(image_id=digest).state == ImageArchive.State.STORED
