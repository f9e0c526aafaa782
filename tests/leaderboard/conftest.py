"""Fixtures for the Django app's tests: users, a challenge with three splits, stored entries.

These tests run on the real PostgreSQL (``DATABASE_URL``); pytest-django creates the test DB.
"""

from __future__ import annotations

from datetime import timedelta
from itertools import count

import numpy as np
import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth.models import User
from django.utils import timezone

from leaderboard.models import (
    Challenge,
    EvaluationRun,
    Membership,
    Split,
    Submission,
    Task,
    Team,
)
from leaderboard.scores import store_scores

from .factories import scores_dict

_ids = count(1)


@pytest.fixture(autouse=True)
def _test_settings(settings, tmp_path):
    """Split bundles and uploads go to a per-test directory, never to var/; fast hashing."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "media"), "base_url": None},
        },
    }


@pytest.fixture
def make_user(db):
    def make(name: str | None = None, *, staff: bool = False, team: Team | None = None) -> User:
        username = name or f"user{next(_ids)}"
        email = f"{username}@example.org"
        user = User.objects.create_user(
            username, email=email, password="pw-secret-123", is_staff=staff
        )
        # a verified address, as one signed up through allauth has: sign-in needs it
        EmailAddress.objects.create(user=user, email=email, verified=True, primary=True)
        if team is not None:
            Membership.objects.create(team=team, user=user)
        return user

    return make


@pytest.fixture
def challenge(db) -> Challenge:
    return Challenge.objects.create(name="CRAG-MM 2026", slug="crag-mm-2026", is_published=True)


@pytest.fixture
def task(challenge) -> Task:
    return Task.objects.create(challenge=challenge, task_id="multi-turn-qa", name="Multi-turn QA")


@pytest.fixture
def splits(task) -> dict[str, Split]:
    later = timezone.now() + timedelta(days=7)
    return {
        "validation": Split.objects.create(task=task, kind=Split.Kind.VALIDATION),
        "public-test": Split.objects.create(task=task, kind=Split.Kind.PUBLIC_TEST),
        "private-test": Split.objects.create(
            task=task, kind=Split.Kind.PRIVATE_TEST, reveal_at=later
        ),
    }


@pytest.fixture
def make_entry(db):
    """A submission of ``team`` with a done run on ``split`` and stored scores (CRAG-MM's
    from ``truthfulness`` and ``slices``, else the ``scores`` given: another benchmark's),
    with its per-unit ``units`` and its judge's ``verdicts`` counts when given (and the units'
    ``unit_slices``, the verdicts per slice value: ``slice_verdicts``)."""

    def make(
        team: Team,
        split: Split,
        truthfulness: float | None,
        *,
        method: str | None = None,
        age_days: float = 0,
        baseline: bool = False,
        chosen: bool = False,
        slices: dict | None = None,
        state: str = EvaluationRun.State.DONE,
        scores: dict | None = None,
        units: list[float] | None = None,
        verdicts: dict[str, int] | None = None,
        unit_slices: dict[str, list[str | None]] | None = None,
        slice_verdicts: dict[str, dict[str, dict[str, int]]] | None = None,
    ) -> EvaluationRun:
        submission = Submission.objects.create(
            team=team,
            challenge=split.task.challenge,
            artifact_kind=Submission.ArtifactKind.REGISTRY_REF,
            registry_ref="example/agent:1",
            method_name=method or f"method-{next(_ids)}",
            is_baseline=baseline,
            chosen_for_final=chosen,
            state=Submission.State.READY,
            created_at=timezone.now() - timedelta(days=age_days),
        )
        run = EvaluationRun.objects.create(
            submission=submission, task=split.task, split=split, state=state, judge_id="rules@1"
        )
        document = scores if scores is not None else scores_dict(truthfulness, slices)
        store_scores(
            run,
            document,
            units=None if units is None else np.array(units),
            verdicts=verdicts,
            unit_slices=unit_slices,
            slice_verdicts=slice_verdicts,
        )
        return run

    return make


@pytest.fixture
def teams(db) -> dict[str, Team]:
    return {name: Team.objects.create(name=name) for name in ("alpha", "beta", "gamma")}


@pytest.fixture
def pipeline_run(teams, splits):
    """A run of team alpha on the public test, moved through the stages up to ``state`` by
    ``worker`` (its last heartbeat ``silent_s`` ago); ``submission`` fields as given."""

    def make(
        state: str = EvaluationRun.State.QUEUED,
        /,
        *,
        worker: str = "node-a:1",
        silent_s: float = 0,
        **submission: object,
    ) -> EvaluationRun:
        split = splits["public-test"]
        owner = Submission.objects.create(
            team=teams["alpha"],
            challenge=split.task.challenge,
            artifact_kind=Submission.ArtifactKind.REGISTRY_REF,
            method_name="m",
            **submission,
        )
        run = EvaluationRun.objects.create(submission=owner, task=split.task, split=split)
        path = [*EvaluationRun.ACTIVE_STATES, EvaluationRun.State.DONE]
        steps = path[: path.index(state) + 1] if state in path else []
        for step in steps:
            run.move_to(step, worker_id=worker)
        if silent_s:
            EvaluationRun.objects.filter(pk=run.pk).update(
                heartbeat_at=timezone.now() - timedelta(seconds=silent_s)
            )
            run.refresh_from_db()
        return run

    return make
