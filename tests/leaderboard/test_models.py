from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from leaderboard.models import (
    EvaluationRun,
    InvalidTransition,
    Invitation,
    ItemAnswer,
    Split,
    Submission,
    Task,
)

State = EvaluationRun.State


@pytest.fixture
def run(teams, splits):
    submission = Submission.objects.create(
        team=teams["alpha"],
        challenge=splits["validation"].task.challenge,
        artifact_kind=Submission.ArtifactKind.REGISTRY_REF,
        method_name="m",
    )
    return EvaluationRun.objects.create(
        submission=submission, task=splits["validation"].task, split=splits["validation"]
    )


def test_run_walks_the_happy_path_with_timings(run):
    for state in (State.BUILDING, State.RUNNING, State.JUDGING, State.SCORING, State.DONE):
        run.move_to(state, worker_id="w1")
    run.refresh_from_db()
    assert run.state == State.DONE
    assert run.started_at is not None and run.finished_at >= run.started_at
    assert run.heartbeat_at is None
    assert run.stage == State.SCORING


@pytest.mark.parametrize(
    ("path", "bad"),
    [
        ([], State.DONE),
        ([], State.JUDGING + "x"),
        ([State.BUILDING], State.SCORING),
        ([State.RUNNING, State.FAILED], State.RUNNING),  # only back to queued (a re-run)
        ([State.CANCELLED], State.RUNNING),
    ],
)
def test_disallowed_transitions_raise_and_change_nothing(run, path, bad):
    for state in path:
        run.move_to(state)
    before = EvaluationRun.objects.get(pk=run.pk).state
    with pytest.raises((InvalidTransition, ValueError)):
        run.move_to(bad)
    assert EvaluationRun.objects.get(pk=run.pk).state == before


def test_two_workers_racing_for_a_run_only_one_wins(run):
    first, second = EvaluationRun.objects.get(pk=run.pk), EvaluationRun.objects.get(pk=run.pk)
    first.move_to(State.BUILDING, worker_id="a")
    with pytest.raises(InvalidTransition, match="moved by someone else"):
        second.move_to(State.BUILDING, worker_id="b")
    assert EvaluationRun.objects.get(pk=run.pk).worker_id == "a"


def test_requeue_counts_attempts_and_resumes_the_stage(run):
    run.move_to(State.BUILDING)
    run.move_to(State.RUNNING, worker_id="w1")
    run.move_to(State.QUEUED, operator_detail="worker lost")
    run.refresh_from_db()
    assert (run.attempt, run.worker_id, run.heartbeat_at, run.stage) == (1, "", None, State.RUNNING)
    run.move_to(State.RUNNING, worker_id="w2")  # straight back to the stage it was in
    assert EvaluationRun.objects.get(pk=run.pk).worker_id == "w2"


def test_failure_reason_is_kept_apart_from_operator_detail(run):
    run.move_to(State.FAILED, failure_reason="agent crashed", operator_detail="exit 137 on node7")
    run.refresh_from_db()
    assert run.failure_reason == "agent crashed"
    assert run.operator_detail == "exit 137 on node7"


def test_beat_records_progress_without_touching_state(run):
    run.move_to(State.BUILDING)
    run.move_to(State.RUNNING)
    run.items_total = 40
    run.save(update_fields=["items_total"])
    run.beat(items_done=12)
    fresh = EvaluationRun.objects.get(pk=run.pk)
    assert (fresh.state, fresh.items_done, fresh.progress) == (State.RUNNING, 12, 0.3)


def test_an_answer_is_stored_once_per_turn(run):
    ItemAnswer.objects.create(run=run, group="s", item_key="i1", position=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        ItemAnswer.objects.create(run=run, group="s", item_key="i1", position=0)


def test_a_submission_has_one_run_per_task_and_split(run):
    with pytest.raises(IntegrityError), transaction.atomic():
        EvaluationRun.objects.create(submission=run.submission, task=run.task, split=run.split)


def test_task_validation_names_the_bad_fields(task, settings):
    settings.PODIUM_JUDGE_ENDPOINTS = {"default": {"base_url": "http://127.0.0.1:1/v1"}}
    task.gpu_class = "h100"
    task.judge_kind = Task.JudgeKind.OPENAI
    task.judge_endpoint = "nowhere"
    with pytest.raises(ValidationError) as caught:
        task.full_clean()
    errors = caught.value.message_dict
    assert "unknown GPU class 'h100'" in errors["gpu_class"][0]
    assert "needs a model name" in errors["judge_model"][0]
    assert "unknown judge endpoint 'nowhere' (default)" in errors["judge_endpoint"][0]


@pytest.mark.parametrize(
    ("benchmark", "endpoint", "message"),
    [
        ("m2rag", "gone", "unknown judge endpoint 'gone' (default, vlm, blind)"),
        ("m2rag", "blind", "judge endpoint 'blind' names no model (PODIUM_JUDGE_ENDPOINTS)"),
        ("crag-mm", "vlm", "CRAG-MM sends no image to its judge: leave this blank"),
        ("m2rag", "vlm", None),
    ],
)
def test_the_vision_judge_endpoint_is_a_configured_one_with_a_model(
    task, settings, benchmark, endpoint, message
):
    settings.PODIUM_JUDGE_ENDPOINTS = {
        "default": {"base_url": "http://127.0.0.1:1/v1", "model": "m"},
        "vlm": {"base_url": "http://127.0.0.1:2/v1", "model": "qwen-vl"},
        "blind": {"base_url": "http://127.0.0.1:3/v1", "model": ""},
    }
    task.benchmark, task.vision_judge_endpoint = benchmark, endpoint
    assert task.vision_endpoint_problem() == message


def test_judge_label_names_model_and_revision(task):
    assert task.judge_label == "rules"
    task.judge_kind, task.judge_model, task.judge_revision = "openai", "gpt-4o", "2024-08-06"
    assert task.judge_label == "openai:gpt-4o@2024-08-06"


def test_reveal_rules(splits):
    now = timezone.now()
    private, public = splits["private-test"], splits["public-test"]
    assert public.is_revealed(now)
    assert not private.is_revealed(now)
    assert private.is_revealed(private.reveal_at)
    private.reveal_at = None
    assert not private.is_revealed(now), "a private test without a reveal time stays hidden"
    public.visibility = Split.Visibility.HIDDEN
    assert not public.is_revealed(now)


def test_invitation_works_once_and_not_after_expiry(teams, make_user):
    user = make_user()
    invitation = Invitation.objects.create(team=teams["alpha"], email="a@example.org")
    assert len(invitation.token) >= 40 and invitation.is_usable()
    invitation.accept(user)
    assert teams["alpha"].members.filter(pk=user.pk).exists()
    with pytest.raises(ValueError, match="already used"):
        invitation.accept(make_user())
    stale = Invitation.objects.create(
        team=teams["beta"], email="b@example.org", expires_at=timezone.now() - timedelta(hours=1)
    )
    with pytest.raises(ValueError, match="expired"):
        stale.accept(user)
    assert not teams["beta"].members.filter(pk=user.pk).exists()
