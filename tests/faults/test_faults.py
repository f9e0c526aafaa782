"""Podium through its services' faults, each met mid-run by a real Celery worker on private
services (``tests/faults/scenario.py``): Redis restarted empty between stages, PostgreSQL
restarted, the object store unreachable, the judge endpoint down. Every run completes, no turn
is lost, stored twice or asked twice, every answer is judged, the quota is charged once and
storage lost nothing. Outages here last seconds (``bench/faults.py`` holds them for minutes);
``pytest -s`` prints each fault's figures."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests import required, seaweedfs
from tests.e2e.harness import REPO
from tests.workers.conftest import base_image, docker_client

pytestmark = [pytest.mark.docker, pytest.mark.slow]
__all__ = ["base_image", "docker_client"]  # fixtures used by the tests below


@pytest.fixture(scope="module")
def services(base_image) -> None:
    """What the scenario starts privately: PostgreSQL's server binaries, ``redis-server``,
    ``runuser`` (PostgreSQL refuses to run as root) and SeaweedFS's ``weed``."""
    if not glob.glob("/usr/lib/postgresql/*/bin/initdb"):
        required.unavailable("no PostgreSQL server binaries under /usr/lib/postgresql")
    for tool in ("redis-server", *(["runuser"] if os.geteuid() == 0 else [])):
        if shutil.which(tool) is None:
            required.unavailable(f"no {tool} on PATH")
    seaweedfs.require()


def scenario(fault: str, *options: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "tests.faults.scenario", fault, *options],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("fault", ["redis", "postgres", "s3", "judge"])
def test_every_run_completes_through_the_fault_and_nothing_is_lost_or_done_twice(services, fault):
    report = scenario(fault, "--outage-s", "5")
    print(f"\n{fault}: {json.dumps(report)}")
    assert report["evidence"] >= 1, "the worker never met the fault"
    assert report["runs_done"] == report["runs_submitted"] == 1, report["failures"]
    assert report["turns_lost"] == 0
    assert report["answers_stored_twice"] == 0
    assert report["turns_asked_twice"] == 0
    assert report["agent_processes"] == 1, "the agent was never restarted"
    assert report["verdicts_missing"] == 0
    assert report["verdicts_not_correct"] == 0, "an unjudged answer counted as wrong"
    assert report["quota_charged"] == 1, "charged once, as any evaluated submission"
    assert report["files_checked"] > 0 and report["files_missing"] == 0
    assert report["recovered_s"] is not None and report["recovered_s"] < 30
