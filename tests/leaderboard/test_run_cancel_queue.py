"""A team cancels its own unfinished run (page and API; the quota given back where the task
says so), and a waiting run shows its place in its queue and an estimated start."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from leaderboard import quotas, run_actions, run_queue
from leaderboard.models import EvaluationRun, RunAction, Submission
from podium.install import key
from tests.leaderboard.broker import broker_at
from tests.services import redis_url

State = EvaluationRun.State


@pytest.fixture
def broker():
    with broker_at(redis_url("submit")) as client:
        yield client


@pytest.fixture
def people(make_user, teams, challenge):
    organiser = make_user("org")
    challenge.organisers.add(organiser)
    return {
        "alice": make_user("alice", team=teams["alpha"]),
        "bob": make_user("bob", team=teams["beta"]),
        "org": organiser,
    }


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def cancel_url(run: EvaluationRun) -> str:
    return reverse("leaderboard:run-cancel", args=[run.pk])


@pytest.mark.django_db
def test_a_member_cancels_the_teams_queued_run_and_the_quota_stays_used(
    people, pipeline_run, broker
):
    run = pipeline_run(State.QUEUED)
    page = signed_in(people["alice"]).get(reverse("leaderboard:run", args=[run.pk]))
    assert b'id="run-cancel"' in page.content and b"still counts against your quota" in page.content
    response = signed_in(people["alice"]).post(cancel_url(run), follow=True)
    assert b"Run #%d is cancelled." % run.pk in response.content
    run.refresh_from_db()
    assert (run.state, run.failure_reason) == (State.CANCELLED, "Your team cancelled this run.")
    (action,) = RunAction.objects.all()
    assert (action.kind, action.by, action.from_state) == ("cancel", people["alice"], "queued")
    assert Submission.objects.get(pk=run.submission_id).consumes_quota is True
    usage = quotas.usage(run.submission.team, run.task)
    assert (usage.total, usage.concurrent) == (1, 0)  # counted, but no longer being evaluated
    # an ended run offers no cancel
    page = signed_in(people["alice"]).get(reverse("leaderboard:run", args=[run.pk]))
    assert b'id="run-cancel"' not in page.content


@pytest.mark.django_db
def test_where_the_task_says_so_a_cancelled_submission_counts_against_no_quota(
    people, pipeline_run, task, broker
):
    task.quota_back_on_cancel = True
    task.save()
    run = pipeline_run(State.RUNNING)
    response = signed_in(people["alice"]).post(cancel_url(run), follow=True)
    assert b"It counts against no quota." in response.content
    assert Submission.objects.get(pk=run.submission_id).consumes_quota is False
    usage = quotas.usage(run.submission.team, run.task)
    assert (usage.total, usage.today, usage.concurrent) == (0, 0, 0)


@pytest.mark.django_db
def test_the_quota_comes_back_only_once_every_run_of_the_submission_is_cancelled(
    people, pipeline_run, task, splits
):
    task.quota_back_on_cancel = True
    task.save()
    run = pipeline_run(State.QUEUED)
    other = EvaluationRun.objects.create(
        submission=run.submission, task=task, split=splits["validation"]
    )
    assert run_actions.cancel_own(run, people["alice"]) is False
    assert Submission.objects.get(pk=run.submission_id).consumes_quota is True
    assert run_actions.cancel_own(other, people["alice"]) is True
    assert Submission.objects.get(pk=run.submission_id).consumes_quota is False


@pytest.mark.django_db
def test_only_the_teams_members_cancel(people, pipeline_run, broker):
    run = pipeline_run(State.QUEUED)
    anonymous = Client().post(cancel_url(run))
    assert anonymous.status_code == 302 and "login" in anonymous["Location"]
    assert signed_in(people["bob"]).post(cancel_url(run)).status_code == 404  # another team's
    organiser = signed_in(people["org"])
    assert organiser.post(cancel_url(run)).status_code == 403  # the operator's tools, not this
    page = organiser.get(reverse("leaderboard:run", args=[run.pk]))
    assert b'id="run-cancel"' not in page.content
    assert signed_in(people["alice"]).get(cancel_url(run)).status_code == 405
    run.refresh_from_db()
    assert run.state == State.QUEUED and not RunAction.objects.exists()


@pytest.mark.django_db
def test_an_ended_run_is_not_cancelled(people, pipeline_run, broker):
    run = pipeline_run(State.DONE)
    response = signed_in(people["alice"]).post(cancel_url(run), follow=True)
    assert b"was not cancelled: it is already done." in response.content
    run.refresh_from_db()
    assert run.state == State.DONE and not RunAction.objects.exists()


@pytest.mark.django_db
def test_the_api_cancels_for_members_only(people, pipeline_run, task, broker):
    task.quota_back_on_cancel = True
    task.save()
    run = pipeline_run(State.QUEUED)
    url = reverse("api:run-cancel", args=[run.pk])
    assert Client().post(url).status_code in (401, 403)
    assert signed_in(people["bob"]).post(url).status_code == 404
    assert signed_in(people["org"]).post(url).status_code == 403
    response = signed_in(people["alice"]).post(url)
    assert response.status_code == 200
    body = response.json()
    assert (body["state"], body["quota_given_back"], body["queue"]) == ("cancelled", True, None)
    again = signed_in(people["alice"]).post(url)
    assert again.status_code == 409
    assert again.json()["detail"] == f"run #{run.pk} was not cancelled: it is already cancelled"


def _done_run(pipeline_run, minutes: int) -> EvaluationRun:
    run = pipeline_run(State.DONE)
    end = timezone.now() - timedelta(hours=1)
    EvaluationRun.objects.filter(pk=run.pk).update(
        started_at=end - timedelta(minutes=minutes), finished_at=end
    )
    return run


@pytest.mark.django_db
def test_a_queued_run_sees_its_place_and_an_estimated_start(people, pipeline_run, broker):
    for minutes in (10, 20, 30):  # the median: 20 minutes
        _done_run(pipeline_run, minutes)
    pipeline_run(State.BUILDING, worker="node-a:1")  # a worker builds one now
    now = timezone.now()
    waiting = [pipeline_run(State.QUEUED) for _ in range(3)]
    for age, run in zip((30, 20, 10), waiting, strict=True):
        EvaluationRun.objects.filter(pk=run.pk).update(claim_due_at=now - timedelta(minutes=age))
    broker.lpush(key("build"), "m1", "m2", "m3")
    third = EvaluationRun.objects.get(pk=waiting[2].pk)
    place = run_queue.place(third, now=now)
    assert place is not None
    assert (place.stage, place.queue, place.position, place.working, place.depth) == (
        "building", "build", 3, 1, 3,
    )  # fmt: skip
    assert place.typical_run == timedelta(minutes=20)
    # two ahead and one being built, one worker: three runs of 20 minutes before it
    assert place.estimated_start == now + timedelta(minutes=60)
    first = run_queue.place(EvaluationRun.objects.get(pk=waiting[0].pk), now=now)
    assert first is not None and (first.position, first.estimated_start) == (
        1, now + timedelta(minutes=20),
    )  # fmt: skip

    # the team reads its place and estimated start, not what the queue holds (every
    # challenge's runs); the challenge's organisers read that too
    page = signed_in(people["alice"]).get(reverse("leaderboard:run", args=[third.pk]))
    assert b'Place <strong id="queue-position">3</strong> in the building queue.' in page.content
    assert b"being worked on" not in page.content and b"waiting in the queue" not in page.content
    api = signed_in(people["alice"]).get(reverse("api:run-detail", args=[third.pk])).json()
    assert api["queue"]["position"] == 3 and api["queue"]["typical_run_s"] == 1200.0
    assert (api["queue"]["working"], api["queue"]["depth"]) == (None, None)
    progress = signed_in(people["alice"]).get(reverse("leaderboard:run-progress", args=[third.pk]))
    assert progress.json()["queue"]["position"] == 3
    assert (progress.json()["queue"]["working"], progress.json()["queue"]["depth"]) == (None, None)
    page = signed_in(people["org"]).get(reverse("leaderboard:run", args=[third.pk]))
    assert b"1 run being worked on there; 3 waiting in the queue" in page.content
    api = signed_in(people["org"]).get(reverse("api:run-detail", args=[third.pk])).json()
    assert (api["queue"]["working"], api["queue"]["depth"]) == (1, 3)


@pytest.mark.django_db
def test_a_run_held_by_a_worker_or_ended_has_no_place(pipeline_run, broker):
    assert run_queue.place(pipeline_run(State.RUNNING)) is None
    handed_over = pipeline_run(State.RUNNING)
    handed_over.move_to(State.JUDGING, worker_id="")  # waits for a judge worker
    place = run_queue.place(handed_over)
    assert place is not None and (place.stage, place.queue, place.position) == (
        "judging", "judge", 1,
    )  # fmt: skip
    assert place.estimated_start is None  # no done run of the task yet: no estimate
    assert run_queue.place(pipeline_run(State.DONE)) is None


@pytest.mark.django_db
def test_without_a_done_run_the_page_says_there_is_no_estimate(people, pipeline_run, broker):
    run = pipeline_run(State.QUEUED)
    page = signed_in(people["alice"]).get(reverse("leaderboard:run", args=[run.pk]))
    assert b"unknown until a run of this task has finished" in page.content
