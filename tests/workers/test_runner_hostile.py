"""Hostile agents: each attack is contained and reported, and the host and other runs are fine.

(The agent that tries to write outside scratch and gain privileges is
``test_sandbox.py::test_agent_inside_sees_only_what_the_policy_allows``.)
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import socket
import subprocess
from pathlib import Path

import pytest

from evaluator.benchmarks.crag_mm.agent import TurnPlan
from tests.workers.conftest import (
    TEST_LIMITS,
    TEST_POLICY,
    IdentityTruncator,
    Recorder,
    make_split,
)
from workers.runner import run_agent
from workers.runtimes import check
from workers.sandbox import SandboxPolicy

pytestmark = pytest.mark.docker
TASK = "multi-source-augmentation"


@pytest.fixture
def policy(agent_runtime) -> SandboxPolicy:
    """The tests' policy under each runtime the engine offers (runsc: gVisor)."""
    return dataclasses.replace(TEST_POLICY, runtime=check(agent_runtime))


def run(image, split, sink, policy, limits=TEST_LIMITS):
    plan = TurnPlan(split, TASK, IdentityTruncator().truncate)
    return run_agent(image, plan, TASK, limits, sink, policy=policy)


def well_behaved_run(agent_image, root, policy=TEST_POLICY) -> Recorder:
    """A normal agent's run; it must complete with every turn answered."""
    recorder = Recorder()
    report = run(agent_image("agents/recorder"), make_split(root, [2, 1]), recorder, policy)
    assert report.status == "completed", report.failure_reason
    assert [r.outcome for r in recorder.results] == ["answered"] * 3
    return recorder


def alongside(agent_image, root, hostile, policy):
    """Runs ``hostile()`` while a well-behaved agent runs under ``policy``; returns hostile's
    result."""
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        attack = pool.submit(hostile)
        neighbour = pool.submit(well_behaved_run, agent_image, root, policy)
        neighbour.result(timeout=120)
        return attack.result(timeout=120)


def test_network_attempts_all_fail(agent_image, tmp_path, recorder, no_leftovers, policy):
    report = run(agent_image("hostile/network"), make_split(tmp_path / "s", [1]), recorder, policy)
    assert report.status == "completed", report.failure_reason
    seen = json.loads(recorder.results[0].response)
    attempts = {k: v for k, v in seen.items() if k != "interfaces"}
    assert attempts and all(v.startswith("failed") for v in attempts.values()), attempts
    assert seen["interfaces"] == ["lo"]
    # the host's services are untouched and still there for the host
    with socket.create_connection(("127.0.0.1", 5432), timeout=2):
        pass


def test_filesystem_search_finds_no_ground_truth(
    agent_image, tmp_path, recorder, no_leftovers, policy
):
    split = make_split(tmp_path / "s", [2])
    limits = dataclasses.replace(TEST_LIMITS, per_item_s=60)
    report = run(agent_image("hostile/fs_snoop"), split, recorder, policy, limits=limits)
    assert report.status == "completed", report.failure_reason
    assert [r.outcome for r in recorder.results] == ["answered", "answered"]
    for result in recorder.results:
        seen = json.loads(result.response)
        assert seen["found"] == []
        assert seen["scanned_files"] > 100, "it did search the image's filesystem"
        assert "PODIUM-GROUND-TRUTH" not in result.response


def test_hanging_agent_times_out_and_is_removed(
    agent_image, tmp_path, recorder, no_leftovers, policy
):
    limits = dataclasses.replace(TEST_LIMITS, per_item_s=0.5, max_consecutive_timeouts=5)
    split = make_split(tmp_path / "s", [1, 1, 1])
    report = run(agent_image("hostile/hang"), split, recorder, policy, limits=limits)
    assert report.status == "completed"
    assert report.counts() == {"answered": 0, "timeout": 3, "error": 0, "invalid": 0}
    assert all(r.response == "" for r in recorder.results)


def test_fork_bomb_is_held_by_the_pids_limit(agent_image, tmp_path, recorder, no_leftovers, policy):
    def attack():
        return run(
            agent_image("hostile/fork_bomb"), make_split(tmp_path / "s", [1]), recorder, policy
        )

    report = alongside(agent_image, tmp_path / "n", attack, policy)
    subprocess.run(["true"], check=True)  # the host can still start processes
    if policy.runtime == "runsc" and report.status == "failed":
        # gVisor: the loop meets the whole sandbox's limits (the memory gVisor's kernel holds
        # for its tasks, the host threads the pids limit counts) and the sandbox ends: held,
        # the run fails with Podium's reason, nothing filed; the neighbour completed
        assert recorder.results == [] and report.failure_reason, report
        return
    assert report.status == "completed", report.failure_reason
    answer = recorder.results[0].response
    children = int(answer.split()[1])
    assert 0 < children < TEST_POLICY.pids_limit
    assert "Resource temporarily unavailable" in answer


def test_memory_hog_is_oom_killed_with_a_readable_reason(
    agent_image, tmp_path, recorder, no_leftovers, policy
):
    def attack():
        return run(
            agent_image("hostile/memory_hog"), make_split(tmp_path / "s", [1, 1]), recorder, policy
        )

    report = alongside(agent_image, tmp_path / "n", attack, policy)
    assert report.status == "failed"
    assert report.failure_reason == (
        "the agent ran out of memory: it needed more than its 256 MiB limit; killed"
    )
    assert recorder.results == []
    well_behaved_run(agent_image, tmp_path / "after", policy)


def log_bytes(folder: Path) -> int:
    """The size of a container's JSON logs, rotated files included; the engine may rotate a
    file between listing and measuring it, so a vanished file means measuring again."""
    for _ in range(20):
        try:
            return sum(path.stat().st_size for path in folder.glob("*-json.log*"))
        except FileNotFoundError:
            continue
    raise AssertionError(f"{folder}: the logs kept rotating while being measured")


def test_output_flood_is_capped_by_the_log_limit(
    agent_image, docker_client, tmp_path, no_leftovers, policy
):
    image = agent_image("hostile/flood")
    log_sizes = []

    def sink(results):
        (container,) = docker_client.containers.list(filters={"ancestor": image.image_id})
        log_sizes.append(log_bytes(Path(container.attrs["LogPath"]).parent))

    report = run(image, make_split(tmp_path / "s", [1, 1]), sink, policy)
    assert report.status == "completed", report.failure_reason
    assert report.counts()["answered"] == 2
    # 32 MB written per turn; Docker keeps one json-file of about max-size: it checks the size
    # after each write and rotates, so a busy engine can be caught mid-rotation (a few times
    # max-size at most), never anywhere near the 32 MB written.
    assert len(log_sizes) == 2 and 0 < max(log_sizes) <= 4 * TEST_POLICY.log_max_bytes


def test_exhausting_its_own_limits_harms_no_one_else(
    agent_image, tmp_path, recorder, no_leftovers, policy
):
    """File descriptors, scratch space and shared memory run out at the policy's limits, inside
    the container; zombies it leaves go with it; a neighbour's run completes meanwhile."""

    def attack():
        return run(
            agent_image("hostile/exhaust"), make_split(tmp_path / "s", [1]), recorder, policy
        )

    report = alongside(agent_image, tmp_path / "n", attack, policy)
    assert report.status == "completed", report.failure_reason
    seen = json.loads(recorder.results[0].response)
    assert 0 < seen["fds"] <= TEST_POLICY.nofile and seen["fd_error"] == "Too many open files"
    assert 0 < seen["scratch"] <= TEST_POLICY.scratch_bytes
    assert seen["scratch_error"] == "No space left on device"
    assert (
        0 < seen["shm"] <= TEST_POLICY.shm_bytes and seen["shm_error"] == "No space left on device"
    )
    # Nothing of the agent's is left on the host: no process of its uid, zombies included.
    assert _processes_of_uid(10001) == []
    well_behaved_run(agent_image, tmp_path / "after", policy)


def _processes_of_uid(uid: int) -> list[str]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines())
        except (OSError, ValueError):
            continue  # gone meanwhile
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            found.append(f"{status.parent.name} {fields.get('Name', '').strip()}")
    return found


def test_queries_echoed_in_a_status_line_stay_out_of_the_failure_reason(
    agent_image, tmp_path, recorder, no_leftovers, policy
):
    """The agent answers /batch with a malformed status line carrying the batch's queries: the
    reason is Podium's words alone; what the agent sent is kept apart, whole, for operators."""
    queries = {"c0-t0": "HIDDEN-QUERY-ONE what is it?", "c1-t0": "HIDDEN-QUERY-TWO and this?"}
    split = make_split(tmp_path / "s", [1, 1], queries=queries)
    report = run(agent_image("hostile/echo_queries"), split, recorder, policy)
    assert report.status == "failed"
    assert report.failure_reason == (
        "protocol error: /batch: malformed HTTP response (HttpParserInvalidStatusError)"
    )
    assert "HIDDEN-QUERY" not in report.failure_reason
    assert all(query in report.agent_text for query in queries.values())
    assert recorder.results == []


def test_a_reply_naming_another_batch_is_refused_and_never_filed(
    agent_image, tmp_path, recorder, no_leftovers, policy
):
    """Batch 1 is answered properly; batch 2's reply names batch 1: the run fails, and the
    answers in that reply are filed under no turn."""
    report = run(
        agent_image("hostile/wrong_batch"), make_split(tmp_path / "s", [1, 1]), recorder, policy
    )
    assert report.status == "failed"
    assert report.failure_reason == (
        "protocol error: /batch must answer {'batch_id': ..., 'responses': [...]} naming the "
        "batch sent (batch 2); the reply named another batch: its answers were not filed"
    )
    assert report.agent_text == '"1"'  # what it named: the agent's text, kept apart
    assert [(r.key, r.response) for r in recorder.results] == [("c0-t0", "answer to c0-t0")]
