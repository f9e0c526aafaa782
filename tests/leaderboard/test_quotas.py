"""Quotas per team and task: per day, total, concurrent; refunds; simultaneous submits."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import connection
from django.utils import timezone

from leaderboard.models import Challenge, EvaluationRun, Submission, Task
from leaderboard.quotas import QuotaExceeded, usage
from leaderboard.submitting import Artifact, MethodInfo, submit

from .broker import sent
from .submit_support import broker, image_archive, open_splits

__all__ = ["broker", "open_splits"]  # fixtures used by name

REF = Artifact(Submission.ArtifactKind.REGISTRY_REF, registry_ref="team/agent:1")
State = EvaluationRun.State


@pytest.fixture
def member(make_user, teams):
    return make_user("ann", team=teams["alpha"])


def _quotas(**limits):
    Task.objects.update(**{"quota_per_day": None, "quota_concurrent": None, **limits})


def _submit(member, team, now=None, artifact=REF):
    return submit(team, Challenge.objects.get(), member, artifact, MethodInfo("m"), now=now)


def _finish(submission, state=State.DONE):
    EvaluationRun.objects.filter(submission=submission).update(state=state)


def test_per_day_is_a_rolling_24_hours_and_says_when_the_next_slot_opens(
    open_splits, teams, member
):
    _quotas(quota_per_day=2)
    start = timezone.now() - timedelta(hours=30)
    _submit(member, teams["alpha"], now=start)  # outside the window by now
    first = _submit(member, teams["alpha"], now=start + timedelta(hours=10))
    _submit(member, teams["alpha"])
    with pytest.raises(QuotaExceeded) as error:
        _submit(member, teams["alpha"])
    slot = first.created_at + timedelta(hours=24)
    assert str(error.value) == (
        "Team alpha: 2 submissions on task multi-turn-qa in the last 24 hours (at most 2); "
        f"the next one is possible from {slot:%Y-%m-%d %H:%M} UTC"
    )
    assert _submit(member, teams["alpha"], now=slot + timedelta(minutes=1)).pk
    assert usage(teams["alpha"], Task.objects.get()).total == 4


def test_a_lowered_daily_limit_waits_for_enough_submissions_to_leave_the_window(
    open_splits, teams, member
):
    _quotas()
    start = timezone.now() - timedelta(hours=12)
    made = [_submit(member, teams["alpha"], now=start + timedelta(hours=h)) for h in (0, 1, 2)]
    _quotas(quota_per_day=2)
    assert usage(teams["alpha"], Task.objects.get()).next_daily_slot == (
        made[1].created_at + timedelta(hours=24)
    )
    _quotas(quota_per_day=0)
    with pytest.raises(QuotaExceeded, match=r"in the last 24 hours \(at most 0\)$"):
        _submit(member, teams["alpha"])


def test_a_submission_podium_failed_is_refunded(open_splits, teams, member):
    _quotas(quota_total=1)
    failed = _submit(member, teams["alpha"])
    with pytest.raises(QuotaExceeded, match="all 1 submissions allowed on task multi-turn-qa"):
        _submit(member, teams["alpha"])
    Submission.objects.filter(pk=failed.pk).update(consumes_quota=False)
    assert _submit(member, teams["alpha"]).pk


def test_concurrent_counts_submissions_with_unfinished_runs(open_splits, teams, member):
    _quotas(quota_concurrent=1)
    running = _submit(member, teams["alpha"])
    EvaluationRun.objects.filter(submission=running, split__kind="validation").update(
        state=State.DONE
    )
    with pytest.raises(QuotaExceeded, match=r"1 submission\(s\) on task multi-turn-qa still being"):
        _submit(member, teams["alpha"])
    _finish(running, State.FAILED)
    assert _submit(member, teams["alpha"]).pk
    # Another team's quota is its own.
    bob = User.objects.create_user("bob", password="pw-secret-123")  # one team per challenge
    assert _submit(_member_of(teams["beta"], bob), teams["beta"]).pk


def _member_of(team, user):
    team.memberships.create(user=user)
    return user


def test_organisers_are_not_limited(open_splits, teams, member):
    _quotas(quota_total=0)
    with pytest.raises(QuotaExceeded):
        _submit(member, teams["alpha"])
    Challenge.objects.get().organisers.add(member)
    assert _submit(member, teams["alpha"]).pk


def _race(member, team, artifacts):
    """Submit ``artifacts`` from as many threads at once; the outcome of each."""
    barrier = threading.Barrier(len(artifacts))
    outcomes: list[str] = []

    def one(artifact):
        try:
            barrier.wait()
            _submit(member, team, artifact=artifact)
            outcomes.append("accepted")
        except QuotaExceeded:
            outcomes.append("quota")
        finally:
            connection.close()

    threads = [threading.Thread(target=one, args=(a,)) for a in artifacts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return sorted(outcomes)


@pytest.mark.django_db(transaction=True)
def test_simultaneous_submits_cannot_both_take_the_last_slot(
    broker, open_splits, teams, member, tmp_path
):
    _quotas(quota_total=2)
    _submit(member, teams["alpha"])
    archive = image_archive(tmp_path / "agent.tar")
    files = [File(archive.open("rb"), name="agent.tar") for _ in range(4)]
    kind = Submission.ArtifactKind.IMAGE_ARCHIVE
    outcomes = _race(member, teams["alpha"], [Artifact(kind, file=f) for f in files])
    assert outcomes == ["accepted", "quota", "quota", "quota"]
    assert Submission.objects.count() == 2
    # The losers' uploads, stored before the locked check, were removed again.
    stored = [name for d in default_storage.listdir("submissions")[0] for name in _walk(d)]
    assert len(stored) == 1
    assert len(sent(broker, "build")) == 2 * 3  # the runs of the two accepted submissions


def _walk(directory):
    folders, files = default_storage.listdir(f"submissions/{directory}")
    for folder in folders:
        yield from (f"{folder}/{name}" for name in _walk(f"{directory}/{folder}"))
    yield from files


@pytest.mark.django_db(transaction=True)
def test_simultaneous_submits_respect_the_concurrency_limit(broker, open_splits, teams, member):
    _quotas(quota_concurrent=1)
    assert _race(member, teams["alpha"], [REF] * 3) == ["accepted", "quota", "quota"]
