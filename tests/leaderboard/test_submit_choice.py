"""Choosing the tasks (and, where organisers allow it, the splits) a submission is evaluated on:
runs only for the choice, the choice kept, quotas on the chosen tasks, later splits."""

from __future__ import annotations

import threading

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.urls import reverse

from leaderboard.models import Challenge, EvaluationRun, Split, Submission, SubmissionTask, Task
from leaderboard.quotas import QuotaExceeded, usage
from leaderboard.submitting import Artifact, Choice, MethodInfo, add_missing_runs, submit

from .submit_support import broker, open_splits

__all__ = ["broker", "open_splits"]  # fixtures used by name

REF = Artifact(Submission.ArtifactKind.REGISTRY_REF, registry_ref="team/agent:1")
EVERY = Choice()


@pytest.fixture
def member(make_user, teams):
    return make_user("ann", team=teams["alpha"])


@pytest.fixture
def two_tasks(open_splits, challenge) -> dict[str, Task]:
    """The conftest's multi-turn-qa and a second task, single-source, with two splits of data."""
    other = Task.objects.create(
        challenge=challenge, task_id="single-source", name="Single source", order=1
    )
    for kind in (Split.Kind.VALIDATION, Split.Kind.PUBLIC_TEST):
        Split.objects.create(task=other, kind=kind, bundle=f"splits/ss-{kind}.tar", items=5)
    Task.objects.update(quota_per_day=None, quota_concurrent=None)
    return {task.task_id: task for task in Task.objects.all()}


def _submit(member, team, choice=EVERY):
    return submit(team, Challenge.objects.get(), member, REF, MethodInfo("m"), choice=choice)


def _task(task_id: str) -> Task:
    return Task.objects.get(task_id=task_id)  # as stored now, after the test's updates


def _runs(submission) -> list[str]:
    return sorted(f"{r.task.task_id}/{r.split.kind}" for r in submission.runs.all())


def _recorded(submission) -> dict[str, list[str]]:
    return {c.task.task_id: c.split_kinds for c in submission.chosen_tasks.all()}


def test_by_default_every_task_and_split_is_evaluated_and_recorded(two_tasks, teams, member):
    submission = _submit(member, teams["alpha"])
    assert len(_runs(submission)) == 5
    assert _recorded(submission) == {"multi-turn-qa": [], "single-source": []}


def test_a_chosen_task_gets_runs_the_others_none(two_tasks, teams, member):
    submission = _submit(member, teams["alpha"], Choice(tasks=("single-source",)))
    assert _runs(submission) == ["single-source/public-test", "single-source/validation"]
    assert _recorded(submission) == {"single-source": []}


def test_splits_are_chosen_only_where_the_organisers_allow_it(two_tasks, teams, member):
    choice = Choice(splits=("multi-turn-qa/validation",))
    with pytest.raises(ValidationError) as error:
        _submit(member, teams["alpha"], choice)
    assert error.value.message_dict == {
        "splits": [
            "'multi-turn-qa/validation': task multi-turn-qa is evaluated on every split (its "
            "organisers do not let teams choose)"
        ]
    }
    Task.objects.filter(task_id="multi-turn-qa").update(splits_selectable=True)
    submission = _submit(member, teams["alpha"], choice)  # naming splits alone: their task
    assert _runs(submission) == ["multi-turn-qa/validation"]
    assert _recorded(submission) == {"multi-turn-qa": ["validation"]}
    both = Choice(
        tasks=("multi-turn-qa", "single-source"),
        splits=("multi-turn-qa/public-test", "multi-turn-qa/validation"),
    )
    submission = _submit(member, teams["alpha"], both)
    assert _runs(submission) == [
        "multi-turn-qa/public-test",
        "multi-turn-qa/validation",
        "single-source/public-test",
        "single-source/validation",
    ]
    assert _recorded(submission) == {
        "multi-turn-qa": ["validation", "public-test"],
        "single-source": [],
    }
    every = Choice(splits=tuple(f"multi-turn-qa/{kind}" for kind in Split.Kind.values))
    assert _recorded(_submit(member, teams["alpha"], every)) == {"multi-turn-qa": []}


def test_a_wrong_choice_names_each_problem_and_stores_nothing(two_tasks, teams, member):
    Task.objects.filter(task_id="multi-turn-qa").update(splits_selectable=True)
    choice = Choice(
        tasks=("multi-turn-qa", "nope"),
        splits=("single", "multi-turn-qa/test", "x/validation", "single-source/validation"),
    )
    with pytest.raises(ValidationError) as error:
        _submit(member, teams["alpha"], choice)
    assert error.value.message_dict == {
        "tasks": ["crag-mm-2026 has no task 'nope' to evaluate on (tasks: multi-turn-qa, "
                  "single-source)"],
        "splits": [
            "'single': name a split as task-id/split-kind, e.g. multi-turn-qa/validation",
            "'multi-turn-qa/test': task multi-turn-qa has no split 'test' (splits: validation, "
            "public-test, private-test)",
            "'x/validation': no task 'x' to evaluate on",
            "'single-source/validation': task single-source is evaluated on every split (its "
            "organisers do not let teams choose)",
        ],
    }  # fmt: skip
    Task.objects.update(splits_selectable=True)
    choice = Choice(tasks=("multi-turn-qa",), splits=("single-source/validation",))
    with pytest.raises(ValidationError) as error:
        _submit(member, teams["alpha"], choice)
    assert error.value.message_dict == {
        "splits": ["'single-source/validation': task single-source is not chosen"]
    }
    assert not Submission.objects.exists() and not SubmissionTask.objects.exists()


def test_only_the_chosen_tasks_quotas_are_checked_and_used(two_tasks, teams, member):
    Task.objects.filter(task_id="multi-turn-qa").update(quota_total=1)
    _submit(member, teams["alpha"], Choice(tasks=("multi-turn-qa",)))
    with pytest.raises(QuotaExceeded, match="all 1 submissions allowed on task multi-turn-qa"):
        _submit(member, teams["alpha"])  # every task: multi-turn-qa among them
    assert _runs(_submit(member, teams["alpha"], Choice(tasks=("single-source",)))) == [
        "single-source/public-test",
        "single-source/validation",
    ]
    alpha = teams["alpha"]
    assert usage(alpha, _task("multi-turn-qa")).total == 1
    assert usage(alpha, _task("single-source")).total == 1
    assert usage(alpha, _task("multi-turn-qa")).remaining == 0


def test_quota_left_is_the_tightest_limit(two_tasks, teams, member):
    Task.objects.update(quota_per_day=3, quota_total=10, quota_concurrent=2)
    _submit(member, teams["alpha"], Choice(tasks=("single-source",)))
    left = usage(teams["alpha"], _task("single-source"))
    assert (left.today, left.concurrent, left.remaining) == (1, 1, 1)
    assert usage(teams["alpha"], _task("multi-turn-qa")).remaining == 2
    Task.objects.update(quota_per_day=None, quota_total=None, quota_concurrent=None)
    assert usage(teams["alpha"], _task("single-source")).remaining is None


def test_later_splits_are_added_only_where_the_team_chose(two_tasks, teams, member):
    Task.objects.filter(task_id="single-source").update(splits_selectable=True)
    only_mtqa = _submit(member, teams["alpha"], Choice(tasks=("multi-turn-qa",)))
    narrowed = _submit(member, teams["alpha"], Choice(splits=("single-source/validation",)))
    every = _submit(member, teams["alpha"])
    Split.objects.create(
        task=two_tasks["single-source"], kind=Split.Kind.PRIVATE_TEST, bundle="x.tar", items=5
    )
    assert add_missing_runs(only_mtqa) == []
    assert add_missing_runs(narrowed) == []
    assert [f"{r.task.task_id}/{r.split.kind}" for r in add_missing_runs(every)] == [
        "single-source/private-test"
    ]


@pytest.mark.django_db(transaction=True)
def test_two_submissions_at_the_limit_of_a_chosen_task_let_exactly_one_through(
    broker, two_tasks, teams, member
):
    Task.objects.filter(task_id="single-source").update(quota_total=2)
    _submit(member, teams["alpha"], Choice(tasks=("single-source",)))
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def one() -> None:
        try:
            barrier.wait()
            _submit(member, teams["alpha"], Choice(tasks=("single-source",)))
            outcomes.append("accepted")
        except QuotaExceeded:
            outcomes.append("quota")
        finally:
            connection.close()

    threads = [threading.Thread(target=one) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(outcomes) == ["accepted", "quota"]
    assert EvaluationRun.objects.filter(task__task_id="single-source").count() == 2 * 2


# The web form: ticked tasks and splits.

URL = reverse("leaderboard:submit", args=["crag-mm-2026"])


def _form(team, **fields):
    return {"team": team.pk, "artifact_kind": "registry-ref", "registry_ref": "a/b:1",
            "method_name": "m", **fields}  # fmt: skip


def test_the_form_runs_what_is_ticked(client, two_tasks, teams, member):
    Task.objects.filter(task_id="multi-turn-qa").update(splits_selectable=True)
    client.force_login(member)
    page = client.get(URL).content.decode()
    assert 'value="multi-turn-qa/private-test"' in page  # a split box where it may be chosen
    assert "every split: validation, public test" in page  # single-source: no split boxes
    assert 'value="single-source/validation"' not in page
    response = client.post(
        URL,
        _form(
            teams["alpha"],
            tasks=["multi-turn-qa"],
            splits=["multi-turn-qa/public-test", "multi-turn-qa/private-test"],
        ),
    )
    assert response.status_code == 302, response.content.decode()
    assert _runs(Submission.objects.get()) == [
        "multi-turn-qa/private-test",
        "multi-turn-qa/public-test",
    ]


def test_the_form_needs_a_task_and_a_split_of_a_selectable_task(client, two_tasks, teams, member):
    Task.objects.filter(task_id="multi-turn-qa").update(splits_selectable=True)
    client.force_login(member)
    response = client.post(URL, _form(teams["alpha"]))
    assert response.status_code == 400 and "choose at least one task" in response.content.decode()
    response = client.post(URL, _form(teams["alpha"], tasks=["multi-turn-qa", "single-source"]))
    assert response.status_code == 400
    assert "choose at least one split of task multi-turn-qa" in response.content.decode()
    # a split ticked under a task left unticked is not run
    response = client.post(
        URL, _form(teams["alpha"], tasks=["single-source"], splits=["multi-turn-qa/validation"])
    )
    assert response.status_code == 302
    assert _recorded(Submission.objects.get()) == {"single-source": []}


def test_each_selectable_task_ticked_without_a_split_is_named(client, two_tasks, teams, member):
    Task.objects.update(splits_selectable=True)  # the first refusal dropped the splits: a 500
    client.force_login(member)
    response = client.post(URL, _form(teams["alpha"], tasks=["multi-turn-qa", "single-source"]))
    assert response.status_code == 400
    page = response.content.decode()
    assert "choose at least one split of task multi-turn-qa" in page
    assert "choose at least one split of task single-source" in page


def test_the_choice_is_shown_to_the_team_and_the_organisers(
    client, two_tasks, teams, member, make_user
):
    Task.objects.filter(task_id="multi-turn-qa").update(splits_selectable=True)
    _submit(member, teams["alpha"], Choice(splits=("multi-turn-qa/validation",)))
    client.force_login(member)
    mine = client.get(reverse("leaderboard:my-submissions")).content.decode()
    assert "Evaluated on multi-turn-qa (validation)" in mine
    organiser = make_user("org")
    Challenge.objects.get().organisers.add(organiser)
    client.force_login(organiser)
    everyone = client.get(reverse("leaderboard:challenge-submissions", args=["crag-mm-2026"]))
    assert '<td class="evaluated-on">multi-turn-qa (validation)</td>' in everyone.content.decode()
