"""Podium through its services' faults, each met mid-run by a real Celery worker on private
services (``tests/faults/scenario.py``): Redis restarted empty between stages, PostgreSQL
restarted, the object store unreachable, the judge endpoint down. Every run completes, no turn
is lost, stored twice or asked twice, every answer is judged, the quota is charged once and
storage lost nothing. Outages here last seconds (``bench/faults.py`` holds them for minutes);
``pytest -s`` prints each fault's figures.

No limit here is a wall clock: a scenario is ended only when it falls silent for longer than
its own waits allow, and then with every process it started (``tests/faults/process.py``)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import required, seaweedfs
from tests.e2e.harness import REPO
from tests.faults import process, scenario
from tests.workers.conftest import base_image, docker_client

# pytest-timeout's wall clock off: every wait here fails only when nothing moves (see above)
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(0)]
__all__ = ["base_image", "docker_client"]  # fixtures used by the tests below


@pytest.fixture(scope="module")
def servers() -> None:
    """What the scenario starts privately: PostgreSQL's server binaries, ``redis-server`` and
    SeaweedFS's ``weed``."""
    if not glob.glob("/usr/lib/postgresql/*/bin/initdb"):
        required.unavailable("no PostgreSQL server binaries under /usr/lib/postgresql")
    if shutil.which("redis-server") is None:
        required.unavailable("no redis-server on PATH")
    seaweedfs.require()


@pytest.fixture(scope="module")
def services(servers, base_image) -> None:
    """The servers, and the agent base image the runs' agent is built on."""


@pytest.mark.parametrize("fault", ["redis", "postgres", "s3", "judge"])
def test_every_run_completes_through_the_fault_and_nothing_is_lost_or_done_twice(services, fault):
    report = process.run(fault, "--outage-s", "5")
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


def test_a_scenario_that_falls_silent_is_ended_with_every_process_it_started(servers):
    with pytest.raises(process.Stalled) as ended:
        process.run("none", "--hang", silent_s=30)
    started = " ".join(command for _, command in ended.value.running)
    for server in ("postgres -D", "redis-server", "celery -A podium worker"):
        assert server in started, f"{server} was not running when the scenario was ended"
    assert process.left_behind(ended.value.marker, ended.value.group) == []


@pytest.fixture
def run_root() -> Iterator[Path]:
    """A directory for the run's own, which the ``postgres`` user may pass through."""
    root = Path(tempfile.mkdtemp(prefix="podium-faults-test-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("interrupt", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "killed"])
def test_a_scenario_ends_with_the_process_that_runs_it(servers, run_root, interrupt):
    """Ctrl-C in pytest unwinds ``process.run``; a SIGKILL leaves that to the scenario (its
    parent-death signal). Either way, nothing it started is left."""
    # Ctrl-C's own handler: a shell's background job (nohup, &) inherits SIGINT ignored
    runner = (
        "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from tests.faults import process; process.run('none', '--hang', silent_s=3600)"
    )
    env = {**os.environ, "TMPDIR": str(run_root)}  # the run's directory is made in it
    driver = subprocess.Popen([sys.executable, "-c", runner], cwd=REPO, env=env)
    said, size, moved_at = "", -1, time.monotonic()
    while "hanging" not in said:  # until everything started; fails only if nothing moves
        assert driver.poll() is None, "the runner exited before the scenario was up"
        assert time.monotonic() - moved_at < process.MARGIN_S, f"no progress: {said[-3000:]}"
        time.sleep(0.5)
        said = "".join(p.read_text() for p in run_root.glob("podium-faults-run-*/scenario.err"))
        if len(said) != size:
            size, moved_at = len(said), time.monotonic()
    marker = f"TMPDIR={next(run_root.glob('podium-faults-run-*'))}"
    (group, _), *_ = (p for p in process.left_behind(marker, -1) if "tests.faults.scenario" in p[1])
    assert len(process.left_behind(marker, group)) >= 4  # scenario, postgres, redis, worker
    driver.send_signal(interrupt)
    driver.wait()
    deadline = time.monotonic() + scenario.GRACE_S + 30
    while process.left_behind(marker, group) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert process.left_behind(marker, group) == []
