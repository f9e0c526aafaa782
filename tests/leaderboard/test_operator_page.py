"""The operator page: staff only; workers by node, queue depths, stuck and retrying runs with
their reason; re-queue and cancel by POST (CSRF), each logged, through the real broker."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from leaderboard import operations, run_actions
from leaderboard.models import EvaluationRun, RunAction
from leaderboard.pipeline import ownership
from leaderboard.tasks import STAGE_TASKS
from podium.install import key
from tests.leaderboard.broker import broker_at, broker_unreachable, sent
from tests.services import redis_url
from workers.faults import TransientFault

State = EvaluationRun.State
PAGE = reverse("leaderboard:operator")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _quick_broadcast(monkeypatch):
    """Celery's broadcast waits this long for workers to answer (1 s in production)."""
    monkeypatch.setattr(operations, "INSPECT_TIMEOUT_S", 0.2)


@pytest.fixture
def broker():
    with broker_at(redis_url("submit")) as client:
        yield client


@pytest.fixture
def operator(make_user):
    return make_user("operator", staff=True)


@pytest.fixture
def staff(operator) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    return client


@pytest.fixture
def post(django_capture_on_commit_callbacks):
    """POST an action as the page's form does (its CSRF token); messages sent at commit."""

    def act(client: Client, run: EvaluationRun, action: str, why: str = "operator test", detail=""):
        client.get(PAGE)
        token = client.cookies["csrftoken"].value
        url = reverse("leaderboard:operator-action", args=[run.pk, action])
        posted = {"why": why, "detail": detail, "csrfmiddlewaretoken": token}
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(url, posted)

    return act


@pytest.mark.django_db
def test_only_staff_see_the_page_or_act(make_user, pipeline_run, broker):
    run = pipeline_run(State.RUNNING)
    anonymous = Client().get(PAGE)
    assert anonymous.status_code == 302 and "login" in anonymous["Location"]
    participant = Client()
    participant.force_login(make_user("participant"))
    assert participant.get(PAGE).status_code == 403
    url = reverse("leaderboard:operator-action", args=[run.pk, "cancel"])
    assert participant.post(url, {"why": "x"}).status_code == 403
    run.refresh_from_db()
    assert run.state == State.RUNNING and not RunAction.objects.exists()


def test_the_page_shows_nodes_queues_and_the_runs_that_need_an_operator(
    staff, pipeline_run, broker, settings
):
    settings.PODIUM_HEARTBEAT_TIMEOUT_S = 60
    healthy = pipeline_run(State.RUNNING, worker="gpu-node-1:11")
    stuck = pipeline_run(State.RUNNING, worker="gpu-node-7:4242", silent_s=600)
    retrying = pipeline_run(State.BUILDING, worker=ownership.worker_id())
    ownership.release(retrying, TransientFault("storage did not answer"))
    broker.lpush(key("build"), b"{}")
    page = staff.get(PAGE)
    assert page.status_code == 200
    html = page.content.decode()
    assert "gpu-node-1" in html and "gpu-node-7" in html
    assert f"run #{healthy.pk}</a> running (gpu-node-1:11" in html
    assert f'id="attention-{stuck.pk}"' in html
    assert "stuck</strong>: no heartbeat from gpu-node-7:4242" in html
    assert f'id="attention-{retrying.pk}"' in html
    assert "retrying</strong>: TransientFault: storage did not answer" in html
    assert f'id="attention-{healthy.pk}"' not in html
    assert '<td>build</td><td class="num">1</td>' in html


def test_re_queue_sends_the_stage_again_and_is_logged(
    post, staff, operator, pipeline_run, broker, settings
):
    settings.PODIUM_HEARTBEAT_TIMEOUT_S = 60
    stuck = pipeline_run(State.RUNNING, silent_s=600)
    form = staff.get(PAGE).content.decode()  # the team reads the why, never the detail
    assert 'name="why" value="the run was stuck"' in form
    assert f'name="detail" value="no heartbeat from {stuck.worker_id} since' in form
    response = post(staff, stuck, "requeue", "the run was stuck", detail="worker gone")
    assert response.status_code == 302
    stuck.refresh_from_db()
    assert (stuck.state, stuck.stage, stuck.worker_id, stuck.attempt) == (
        State.QUEUED,
        State.RUNNING,
        "",
        1,
    )
    assert sent(broker, "gpu-l40s") == [(STAGE_TASKS[State.RUNNING], {"run_id": stuck.pk})]
    assert sent(broker, "build") == []
    action = RunAction.objects.get(run=stuck)
    assert (action.kind, action.by, action.why, action.from_state) == (
        "requeue",
        operator,
        "the run was stuck",
        State.RUNNING,
    )
    assert action.detail == "worker gone"
    assert f"Run #{stuck.pk} re-queued." in staff.get(PAGE).content.decode()


def test_a_queued_run_whose_message_was_lost_is_sent_again(post, staff, pipeline_run, broker):
    run = pipeline_run(State.JUDGING)
    run.move_to(State.QUEUED)
    assert post(staff, run, "requeue").status_code == 302
    run.refresh_from_db()
    assert run.state == State.QUEUED and run.attempt == 1, "no second move, no extra attempt"
    assert sent(broker, "judge") == [(STAGE_TASKS[State.JUDGING], {"run_id": run.pk})]


def test_cancel_stops_the_run_and_is_logged(post, staff, pipeline_run, broker):
    run = pipeline_run(State.JUDGING)
    assert post(staff, run, "cancel", "a bad judge config").status_code == 302
    run.refresh_from_db()
    assert run.state == State.CANCELLED
    assert "a bad judge config" in run.operator_detail
    assert RunAction.objects.get(run=run).kind == "cancel"
    assert sent(broker, "judge") == []


def test_finished_runs_unknown_actions_and_missing_reasons_are_refused(
    post, staff, pipeline_run, broker
):
    run = pipeline_run(State.RUNNING)
    run.move_to(State.FAILED, failure_reason="x")
    assert post(staff, run, "requeue").status_code == 302
    page = staff.get(PAGE).content.decode()
    assert "it is failed; re-run it instead" in page
    run.refresh_from_db()
    assert run.state == State.FAILED and sent(broker, "gpu-l40s") == []
    assert post(staff, run, "delete").status_code == 403
    live = pipeline_run(State.RUNNING)
    post(staff, live, "cancel", why="   ")
    live.refresh_from_db()
    assert live.state == State.RUNNING and not RunAction.objects.exists()


def test_an_action_without_its_csrf_token_or_by_get_is_refused(staff, pipeline_run, broker):
    run = pipeline_run(State.RUNNING)
    url = reverse("leaderboard:operator-action", args=[run.pk, "cancel"])
    assert staff.post(url, {"why": "no token"}).status_code == 403
    assert staff.get(url).status_code == 405
    run.refresh_from_db()
    assert run.state == State.RUNNING


@pytest.mark.django_db
def test_with_redis_down_the_page_still_answers(staff, pipeline_run):
    pipeline_run(State.RUNNING, worker=f"{socket.gethostname()}:1")
    with broker_unreachable():
        page = staff.get(PAGE)
    assert page.status_code == 200
    assert "Redis did not answer" in page.content.decode()


def test_a_live_celery_worker_is_listed_with_its_node_and_queues(
    staff, broker, tmp_path, pipeline_run, settings
):
    # the run it holds names it as ownership.worker_id does: <PODIUM_NODE_ID>/<host>:<pid>
    held = pipeline_run(State.RUNNING, worker=f"{settings.PODIUM_NODE_ID}/ops-test-node:4242")
    env = {
        **os.environ,
        "REDIS_URL": redis_url("submit"),
        "PODIUM_VAR_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "podium.settings",
    }
    command = [sys.executable, "-m", "celery", "-A", "podium", "worker", "-Q", "build,judge"]
    command += ["-n", "probe@ops-test-node", "--pool", "solo", "--without-heartbeat"]
    log = tmp_path / "worker.log"
    with log.open("wb") as output:
        worker = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT
        )
    started = time.monotonic()
    try:
        html = ""  # a worker's start takes minutes on a loaded host
        while time.monotonic() < started + 180 and "probe@ops-test-node" not in html:
            time.sleep(0.5)
            html = staff.get(PAGE).content.decode()
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    said = (
        f"after {time.monotonic() - started:.0f} s, the worker (exit {worker.returncode}) said:\n"
        f"{log.read_text(errors='replace')[-4000:]}"
    )
    assert "<td>ops-test-node</td><td>probe@ops-test-node</td><td>build, judge</td>" in html, said
    # one row for the worker and the run it holds, answered (not a second node "no")
    assert html.count("<tr><td>ops-test-node</td>") == 1 and "<strong>no</strong>" not in html
    row = html[html.index("<tr><td>ops-test-node</td>") :].split("</tr>", 1)[0]
    assert "<td>yes</td>" in row and f"run #{held.pk}</a> running" in row


def test_a_run_just_re_run_waits_since_its_re_run_not_its_creation(pipeline_run, operator, broker):
    run = pipeline_run(State.RUNNING)
    run.move_to(State.FAILED, failure_reason="x")
    created = timezone.now() - timedelta(hours=3)
    EvaluationRun.objects.filter(pk=run.pk).update(created_at=created)
    assert run_actions.rerun([run], operator, "a fixed judge") == []
    run.refresh_from_db()
    assert run.state == State.QUEUED and run.started_at is None
    assert operations.needing_attention() == [], "re-run a moment ago: not waiting long"
    rerun_at = timezone.now() - timedelta(minutes=11)
    RunAction.objects.filter(run=run).update(at=rerun_at)
    (waiting,) = operations.needing_attention()
    assert waiting.kind == "waiting"
    assert waiting.reason == f"in the building queue since {rerun_at:%Y-%m-%d %H:%M:%S}"
