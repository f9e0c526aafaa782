"""Log lines: JSON by default, each carrying the run id while a worker works on a run; plain
text on request (``PODIUM_LOG_FORMAT``)."""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from leaderboard.models import EvaluationRun, Submission
from leaderboard.pipeline import stage_tasks
from leaderboard.pipeline.ownership import heartbeats, worker_id
from podium.logs import RunIdFilter, run_context
from tests.leaderboard.test_settings import settings_in_process

State = EvaluationRun.State
ROOT = Path(__file__).resolve().parents[2]
IN_A_RUN = (
    "import django, logging; django.setup(); from podium.logs import run_context\n"
    "logging.getLogger('podium.pipeline').info('outside')\n"
    "with run_context(41):\n"
    "    logging.getLogger('workers.runner').warning('inside %s', 'a run')\n"
)


@contextmanager
def json_lines() -> Iterator[list[dict]]:
    """What Podium's log handler (from ``LOGGING``) writes meanwhile, one parsed line each."""
    handler = next(
        h
        for h in logging.getLogger().handlers
        if any(isinstance(f, RunIdFilter) for f in h.filters)
    )
    buffer, parsed = io.StringIO(), []
    previous = handler.setStream(buffer)
    try:
        yield parsed
    finally:
        handler.setStream(previous)
        parsed += [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_every_line_a_stage_writes_carries_its_run_id(pipeline_run):
    run = pipeline_run(state=Submission.State.FAILED, failure_reason="your image did not build")
    with json_lines() as lines:
        assert stage_tasks.build_task.apply(kwargs={"run_id": run.pk}).get() == State.FAILED
        logging.getLogger("podium.pipeline").info("after the stage")
    ours = [line for line in lines if line["logger"] == "podium.pipeline"]
    assert [line["message"] for line in ours] == [
        f"run #{run.pk}: claimed for building by {worker_id()}",
        "after the stage",
    ]
    assert ours[0]["run_id"] == run.pk, ours[0]
    assert ours[1]["run_id"] is None, "cleared once the stage ended"
    assert all({"time", "level", "logger", "message", "run_id"} <= set(line) for line in lines)
    run.refresh_from_db()
    assert (run.state, run.failure_kind) == (State.FAILED, EvaluationRun.FailureKind.TEAM)


def test_json_is_the_default_and_plain_text_is_there_for_a_terminal(tmp_path):
    default = settings_in_process(tmp_path, IN_A_RUN)
    assert default.returncode == 0, default.stderr
    lines = [json.loads(line) for line in default.stderr.splitlines()]
    mine = {line["message"]: line for line in lines if line["logger"] != "podium"}
    assert mine["outside"]["run_id"] is None
    assert (mine["inside a run"]["run_id"], mine["inside a run"]["level"]) == (41, "WARNING")
    plain = settings_in_process(tmp_path, IN_A_RUN, PODIUM_LOG_FORMAT="plain")
    assert plain.returncode == 0, plain.stderr
    text = plain.stderr.splitlines()
    assert any(line.endswith("INFO podium.pipeline: outside") for line in text), text
    assert any(line.endswith("WARNING workers.runner run #41: inside a run") for line in text)


def test_the_heartbeat_thread_writes_with_the_run_id_of_its_stage(pipeline_run):
    run = pipeline_run(State.RUNNING)
    broken = EvaluationRun(pk="not-a-number", state=run.state)  # its heartbeat's update raises
    with json_lines() as lines, run_context(run.pk), heartbeats(broken, interval_s=0.01):
        time.sleep(0.3)
    failed = [line for line in lines if line["message"] == "run #not-a-number: heartbeat failed"]
    assert failed, lines
    assert failed[0]["run_id"] == run.pk and "ValueError" in failed[0]["exc_info"]
