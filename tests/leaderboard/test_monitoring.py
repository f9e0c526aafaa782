"""``/metrics``: staff or the bearer token only; its figures follow the state of PostgreSQL and
Redis (queues filled through the real broker, events recorded by the worker code paths)."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from evaluator.benchmarks.crag_mm.prompt import CragMMRubric
from evaluator.judges import judge_all, make_judge
from evaluator.records import JudgeRequest
from leaderboard.models import EvaluationRun
from leaderboard.pipeline import ownership
from leaderboard.pipeline.judge import record_judge_calls
from leaderboard.tasks import STAGE_TASKS, dispatch_stage
from podium.celery import app
from podium.install import key
from podium.storage import FileSystemStorage
from tests.fake_openai import GARBAGE, FakeOpenAI
from tests.leaderboard.broker import broker_at, broker_unreachable
from tests.services import redis_url
from workers.faults import TransientFault

State = EvaluationRun.State
TOKEN = "metrics-token-0123456789abcdef"


@pytest.fixture
def broker():
    """The app's broker (queues and metric events) is a test Redis database, emptied."""
    with broker_at(redis_url("submit")) as client:
        yield client


@pytest.fixture
def staff(make_user) -> Client:
    client = Client()
    client.force_login(make_user("operator", staff=True))
    return client


def scrape(client: Client) -> dict[tuple[str, frozenset], float]:
    response = client.get("/metrics")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("who", "header"),
    [
        ("anonymous", ""),
        ("participant", ""),
        ("anonymous", "Bearer wrong-token-0123456789abcdef"),
        ("anonymous", f"Basic {TOKEN}"),
        ("anonymous", "Bearer "),
    ],
)
def test_nobody_but_staff_or_the_token_reads_the_metrics(settings, make_user, who, header):
    settings.PODIUM_METRICS_TOKEN = TOKEN
    client = Client()
    if who == "participant":
        client.force_login(make_user("participant"))
    response = (
        client.get("/metrics", HTTP_AUTHORIZATION=header) if header else client.get("/metrics")
    )
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"podium_runs" not in response.content


@pytest.mark.django_db
def test_without_a_configured_token_no_bearer_is_accepted(settings, broker):
    settings.PODIUM_METRICS_TOKEN = ""
    response = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer ")
    assert response.status_code == 401


def test_the_token_and_staff_read_the_same_metrics(settings, broker, staff):
    settings.PODIUM_METRICS_TOKEN = TOKEN
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert b"podium_runs{state=" in response.content
    assert value(scrape(staff), "podium_metrics_redis_up") == 1.0


def test_a_queued_message_raises_its_queue_depth(
    broker, staff, pipeline_run, django_capture_on_commit_callbacks
):
    before = scrape(staff)
    assert value(before, "podium_queue_depth", queue="gpu-l40s") == 0
    assert value(before, "podium_queue_depth", queue="build") == 0
    run = pipeline_run(State.RUNNING)
    with django_capture_on_commit_callbacks(execute=True):
        dispatch_stage(run, State.RUNNING)
        dispatch_stage(run, State.RUNNING)
    after = scrape(staff)
    assert value(after, "podium_queue_depth", queue="gpu-l40s") == 2
    assert value(after, "podium_queue_depth", queue="build") == 0
    broker.delete(key("gpu-l40s"))  # the install's queue (podium.install)
    assert value(scrape(staff), "podium_queue_depth", queue="gpu-l40s") == 0
    app.send_task(STAGE_TASKS[State.BUILDING], kwargs={"run_id": run.pk}, priority=9)
    assert broker.llen(key("build")) == 0, "kombu keeps a prioritised message in a list of its own"
    assert value(scrape(staff), "podium_queue_depth", queue="build") == 1


def test_a_finished_run_appears_in_runs_by_state_and_the_duration_histogram(
    broker, staff, pipeline_run
):
    run = pipeline_run(State.SCORING)
    samples = scrape(staff)
    assert value(samples, "podium_runs", state="scoring") == 1
    assert value(samples, "podium_runs", state="done") == 0
    assert value(samples, "podium_run_duration_seconds_count", state="done") == 0
    run.move_to(State.DONE)
    ended = timezone.now()
    EvaluationRun.objects.filter(pk=run.pk).update(
        started_at=ended - timedelta(seconds=120), finished_at=ended
    )
    samples = scrape(staff)
    assert value(samples, "podium_runs", state="scoring") == 0
    assert value(samples, "podium_runs", state="done") == 1
    assert value(samples, "podium_run_duration_seconds_count", state="done") == 1
    assert value(samples, "podium_run_duration_seconds_sum", state="done") == pytest.approx(120)
    assert value(samples, "podium_run_duration_seconds_bucket", state="done", le="60.0") == 0
    assert value(samples, "podium_run_duration_seconds_bucket", state="done", le="300.0") == 1
    assert value(samples, "podium_run_duration_seconds_bucket", state="done", le="+Inf") == 1


def test_failures_are_counted_by_whose_fault_they_are(broker, staff, pipeline_run):
    ownership.fail_for_podium(pipeline_run(State.RUNNING), "engine config broken")
    pipeline_run(State.BUILDING).move_to(State.FAILED, failure_reason="your image did not build")
    samples = scrape(staff)
    assert value(samples, "podium_failed_runs", kind="podium") == 1
    assert value(samples, "podium_failed_runs", kind="team") == 1
    assert value(samples, "podium_failed_runs", kind="lost_worker") == 0
    assert value(samples, "podium_runs", state="failed") == 2


def test_a_retried_stage_shows_its_fault_until_a_worker_claims_it_again(
    broker, staff, pipeline_run
):
    run = pipeline_run(State.QUEUED)
    mine = ownership.claim(run.pk, State.BUILDING)
    assert mine is not None
    ownership.release(mine, TransientFault("the Docker engine did not answer"))
    run.refresh_from_db()
    assert (run.worker_id, run.retry_reason) == (
        "",
        "TransientFault: the Docker engine did not answer",
    )
    samples = scrape(staff)
    assert value(samples, "podium_retrying_runs") == 1
    assert (
        value(samples, "podium_stage_retries_total", stage="building", fault="TransientFault") == 1
    )
    assert ownership.claim(run.pk, State.BUILDING) is not None
    run.refresh_from_db()
    assert run.retry_reason == ""
    assert value(scrape(staff), "podium_retrying_runs") == 0


def test_dead_time_is_the_idle_time_between_a_worker_s_stages(
    broker, staff, pipeline_run, monkeypatch, settings
):
    node = settings.PODIUM_NODE_ID
    monkeypatch.setattr(ownership, "_idle_since", None)
    assert ownership.claim(pipeline_run().pk, State.BUILDING) is not None
    name = "podium_worker_dead_time_seconds_count"
    assert value(scrape(staff), name, node=node) == 0, "no previous stage: no dead time"
    ownership.stage_ended()
    assert ownership.claim(pipeline_run().pk, State.BUILDING) is not None
    assert ownership.claim(pipeline_run(State.RUNNING).pk, State.BUILDING) is None, (
        "not mine: not counted"
    )
    samples = scrape(staff)
    assert value(samples, name, node=node) == 1
    assert value(samples, "podium_worker_dead_time_seconds_bucket", node=node, le="1.0") == 1
    assert 0 <= value(samples, "podium_worker_dead_time_seconds_sum", node=node) < 1


def test_judge_latency_and_errors_come_from_the_judge_s_calls(broker, staff):
    with FakeOpenAI() as server:
        server.latency_s = 0.3
        server.replies["question 2?"] = GARBAGE
        judge = make_judge(
            "openai", CragMMRubric(), base_url=server.url, model="fake", structured="none"
        )
        calls = []
        judge.on_call = lambda seconds, judgment: calls.append((seconds, judgment))
        requests = [JudgeRequest(f"question {i}?", "a dog", "a dog") for i in range(3)]
        judge_all(judge, requests, None, progress=False)
    record_judge_calls("default", calls)
    samples = scrape(staff)
    assert value(samples, "podium_judge_latency_seconds_count", judge="default") == 3
    assert value(samples, "podium_judge_latency_seconds_bucket", judge="default", le="0.25") == 0
    assert value(samples, "podium_judge_latency_seconds_sum", judge="default") >= 0.9
    assert value(samples, "podium_judge_errors_total", judge="default") == 1


def test_storage_errors_are_counted_and_a_missing_file_is_not_one(broker, staff, tmp_path):
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the storage wants a folder")
    storage = FileSystemStorage(location=str(blocked))
    with pytest.raises(OSError):
        storage.save("bundle.tar", io.BytesIO(b"x"))
    fine = FileSystemStorage(location=str(tmp_path / "media"))
    with pytest.raises(FileNotFoundError):
        fine.open("missing.tar")
    samples = scrape(staff)
    errors = {
        dict(labels)["operation"]: v
        for (name, labels), v in samples.items()
        if name == "podium_storage_errors_total"
    }
    assert errors == {"save": 1}


@pytest.mark.django_db
def test_with_redis_down_the_database_figures_still_answer(staff, pipeline_run):
    pipeline_run(State.RUNNING)
    with broker_unreachable():
        samples = scrape(staff)
    assert value(samples, "podium_metrics_redis_up") == 0
    assert value(samples, "podium_runs", state="running") == 1
    assert not any(name == "podium_queue_depth" for name, _ in samples)
