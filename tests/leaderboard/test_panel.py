"""The organisers' submissions panel: only a challenge's organisers get in; its filters; each
action with a required reason, logged on the action log and shown to the team; the boards
leave out disqualified and hidden submissions until they are restored."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from leaderboard import board_store
from leaderboard.models import (
    AnswerSimilarity,
    Challenge,
    EvaluationRun,
    Phase,
    RunAction,
    Split,
    Submission,
    SubmissionAction,
)
from tests.leaderboard.test_run_actions import sent  # noqa: F401 - fixture used by name

State = EvaluationRun.State


@pytest.fixture
def organiser(challenge, make_user):
    user = make_user("org")
    challenge.organisers.add(user)
    return user


@pytest.fixture
def runs(teams, splits, make_entry) -> dict[str, EvaluationRun]:
    """alpha 0.8 and beta 0.5 done on the public test; gamma's run on validation still running."""
    return {
        "alpha": make_entry(teams["alpha"], splits["public-test"], 0.8, method="alpha-m"),
        "beta": make_entry(teams["beta"], splits["public-test"], 0.5, method="beta-m"),
        "gamma": make_entry(
            teams["gamma"], splits["validation"], 0.3, method="gamma-m", state=State.RUNNING
        ),
    }


def _panel(challenge) -> str:
    return reverse("leaderboard:panel", args=[challenge.slug])


def _act(client, challenge, action: str, runs: list[EvaluationRun], why: str = "checked"):
    return client.post(
        reverse("leaderboard:panel-action", args=[challenge.slug]),
        {"action": action, "run": [run.pk for run in runs], "why": why, "query": "team=al"},
    )


def _board_methods(split: Split) -> list[str]:
    split = Split.objects.select_related("task").get(pk=split.pk)
    return [entry.method_name for entry in board_store.entries(split)]


def test_only_the_challenges_organisers_get_the_panel_and_its_actions(
    client, challenge, runs, teams, make_user, organiser
):
    urls = [
        _panel(challenge),
        reverse("leaderboard:action-log", args=[challenge.slug]),
    ]
    act = reverse("leaderboard:panel-action", args=[challenge.slug])
    for url in urls:
        assert client.get(url).status_code == 302  # to sign in
    member = make_user("carol", team=teams["alpha"])
    client.force_login(member)
    for url in urls:
        assert client.get(url).status_code == 403
    posted = {"action": "disqualify", "run": [runs["beta"].pk], "why": "x"}
    assert client.post(act, posted).status_code == 403
    assert Submission.objects.get(pk=runs["beta"].submission_id).standing == "shown"
    client.force_login(organiser)
    for url in urls:
        assert client.get(url).status_code == 200
    assert client.get(act).status_code == 405  # actions are posted


def test_the_panel_lists_every_run_and_filters_them(client, challenge, runs, organiser):
    client.force_login(organiser)
    page = client.get(_panel(challenge)).content.decode()
    for name in ("alpha", "beta", "gamma"):
        assert f'href="/runs/{runs[name].pk}/"' in page
    entry = reverse(
        "leaderboard:entry", args=[challenge.slug, "multi-turn-qa", "public-test", runs["alpha"].pk]
    )
    assert f'href="{entry}"' in page  # a run on its board links its entry
    assert page.count("/entries/") == 2  # alpha's and beta's: gamma's is not done

    def listed(**query: str) -> set[str]:
        page = client.get(_panel(challenge), query).content.decode()
        return {name for name, run in runs.items() if f'value="{run.pk}" id="run-' in page}

    assert listed(team="alp") == {"alpha"}
    assert listed(split="validation") == {"gamma"}
    assert listed(state="running") == {"gamma"}
    assert listed(task="multi-turn-qa") == {"alpha", "beta", "gamma"}
    assert listed(task="no-such-task") == set()
    assert listed(flagged="1") == set()
    AnswerSimilarity.objects.create(
        split=runs["alpha"].split, run_a=runs["alpha"], run_b=runs["beta"], items=20, alike=19,
        share=0.95,
    )  # fmt: skip
    assert listed(flagged="1") == {"alpha", "beta"}
    Submission.objects.filter(pk=runs["beta"].submission_id).update(standing="hidden")
    assert listed(standing="hidden") == {"beta"}


def test_an_action_without_a_reason_is_refused_and_nothing_is_logged(
    client, challenge, runs, organiser
):
    client.force_login(organiser)
    response = _act(client, challenge, "disqualify", [runs["beta"]], why="   ")
    assert response.status_code == 302
    messages = [str(m) for m in response.wsgi_request._messages]
    assert messages == ["Nothing disqualified: say why: the team reads the reason."]
    assert not SubmissionAction.objects.exists()
    response = _act(client, challenge, "cancel", [runs["gamma"]], why="")
    assert not RunAction.objects.exists()
    assert EvaluationRun.objects.get(pk=runs["gamma"].pk).state == State.RUNNING


def test_disqualify_takes_the_submission_off_the_board_logged_and_shown_to_the_team(
    client, challenge, runs, splits, teams, make_user, organiser
):
    public = splits["public-test"]
    assert _board_methods(public) == ["alpha-m", "beta-m"]
    client.force_login(organiser)
    response = _act(client, challenge, "disqualify", [runs["alpha"]], why="shared its image")
    assert response["Location"] == f"{_panel(challenge)}?team=al"
    assert [str(m) for m in response.wsgi_request._messages] == ["1 submission disqualified."]
    submission = Submission.objects.get(pk=runs["alpha"].submission_id)
    assert submission.standing == "disqualified"
    assert _board_methods(public) == ["beta-m"]
    page = client.get(_panel(challenge)).content.decode()
    assert f"/entries/{runs['alpha'].pk}/" not in page  # no longer an entry: no link
    assert f"/entries/{runs['beta'].pk}/" in page
    (logged,) = SubmissionAction.objects.all()
    assert (logged.kind, logged.by, logged.why, logged.from_standing) == (
        "disqualify", organiser, "shared its image", "shown",
    )  # fmt: skip
    log = client.get(reverse("leaderboard:action-log", args=[challenge.slug])).content.decode()
    assert "shared its image" in log and f"submission #{submission.pk}" in log
    # the team reads it on its run page and on its submissions
    client.force_login(make_user("alice", team=teams["alpha"]))
    page = client.get(reverse("leaderboard:run", args=[runs["alpha"].pk])).content.decode()
    assert "Its submission is disqualified: it has no entry on the boards." in page
    assert "the submission disqualified by an organiser: shared its image" in page
    mine = client.get(reverse("leaderboard:my-submissions")).content.decode()
    assert 'class="badge failed standing">disqualified<' in mine
    # disqualifying again is refused, and not logged twice
    client.force_login(organiser)
    response = _act(client, challenge, "disqualify", [runs["alpha"]])
    assert [str(m) for m in response.wsgi_request._messages] == [
        "0 submissions disqualified.",
        f"Not disqualified: submission #{submission.pk}: it is already disqualified.",
    ]
    assert SubmissionAction.objects.count() == 1


def test_hide_then_restore_puts_the_entry_back_as_it_was(
    client, challenge, runs, splits, organiser
):
    public = splits["public-test"]
    client.force_login(organiser)
    _act(client, challenge, "hide", [runs["alpha"]], why="under review")
    assert _board_methods(public) == ["beta-m"]
    board = client.get(
        reverse("leaderboard:leaderboard", args=[challenge.slug, "multi-turn-qa", "public-test"])
    ).content.decode()
    assert "beta-m" in board and "alpha-m" not in board
    _act(client, challenge, "restore", [runs["alpha"]], why="review done")
    assert _board_methods(public) == ["alpha-m", "beta-m"]
    assert list(SubmissionAction.objects.order_by("at").values_list("kind", "from_standing")) == [
        ("hide", "shown"),
        ("restore", "hidden"),
    ]


def test_cancel_from_the_panel_is_logged_and_the_team_sees_it(
    client, challenge, runs, teams, make_user, organiser
):
    client.force_login(organiser)
    response = _act(client, challenge, "cancel", [runs["gamma"], runs["alpha"]], why="stuck")
    assert [str(m) for m in response.wsgi_request._messages] == [
        "1 run cancelled.",
        f"Not cancelled: run #{runs['alpha'].pk}: it is already done.",
    ]
    gamma = EvaluationRun.objects.get(pk=runs["gamma"].pk)
    assert gamma.state == State.CANCELLED
    (logged,) = RunAction.objects.all()
    assert (logged.kind, logged.run_id, logged.why, logged.from_state) == (
        "cancel", gamma.pk, "stuck", "running",
    )  # fmt: skip
    assert gamma.failure_reason == "An organiser cancelled this run: stuck"
    assert gamma.operator_detail == "cancelled by org: stuck"  # who: never the team's
    # the team reads what was done and why, never who; another team reads nothing of it
    client.force_login(make_user("gil", team=teams["gamma"]))
    page = client.get(reverse("leaderboard:run", args=[gamma.pk])).content.decode()
    assert f"run #{gamma.pk} cancelled by an organiser: stuck</li>" in page
    assert "An organiser cancelled this run: stuck" in page
    assert "by org" not in page and "Operator detail" not in page
    mine = client.get(reverse("leaderboard:my-submissions")).content.decode()
    assert f"run #{gamma.pk} cancelled by an organiser: stuck</li>" in mine
    client.force_login(make_user("bob", team=teams["beta"]))
    assert client.get(reverse("leaderboard:run", args=[gamma.pk])).status_code == 404
    mine = client.get(reverse("leaderboard:my-submissions")).content.decode()
    assert "stuck" not in mine and "cancel of run" not in mine


@pytest.mark.usefixtures("sent")  # stage tasks recorded, not sent to a broker
def test_rerun_and_rejudge_from_the_panel_are_logged(client, challenge, runs, organiser):
    client.force_login(organiser)
    _act(client, challenge, "rejudge", [runs["alpha"]], why="judge fixed")
    _act(client, challenge, "rerun", [runs["beta"]], why="flaky network")
    states = dict(EvaluationRun.objects.values_list("pk", "state"))
    assert (states[runs["alpha"].pk], states[runs["beta"].pk]) == (State.JUDGING, State.QUEUED)
    assert list(RunAction.objects.order_by("at").values_list("kind", "run_id", "why")) == [
        ("rejudge", runs["alpha"].pk, "judge fixed"),
        ("rerun", runs["beta"].pk, "flaky network"),
    ]


@pytest.mark.usefixtures("sent")  # stage tasks recorded, not sent to a broker
def test_every_finished_run_of_a_split_is_rerun_at_once(client, challenge, runs, splits, organiser):
    client.force_login(organiser)
    act = reverse("leaderboard:panel-action", args=[challenge.slug])
    public = splits["public-test"]
    response = client.post(act, {"action": "rerun", "split": public.pk, "why": "split fixed"})
    assert [str(m) for m in response.wsgi_request._messages] == ["2 runs re-run."]
    assert set(RunAction.objects.values_list("run_id", flat=True)) == {
        runs["alpha"].pk, runs["beta"].pk,
    }  # fmt: skip
    assert EvaluationRun.objects.get(pk=runs["gamma"].pk).state == State.RUNNING
    # a whole split is only re-run
    posted = {"action": "disqualify", "split": public.pk, "why": "x"}
    assert client.post(act, posted).status_code == 403


@pytest.mark.usefixtures("sent")  # stage tasks recorded, not sent to a broker
def test_every_finished_run_of_a_phases_submissions_is_rerun_at_once(
    client, challenge, teams, splits, make_entry, organiser
):
    now = timezone.now()
    phase = Phase.objects.create(
        challenge=challenge, name="Phase 1", starts_at=now - timedelta(days=3),
        ends_at=now - timedelta(days=1),
    )  # fmt: skip
    during = make_entry(teams["alpha"], splits["public-test"], 0.8, age_days=2)
    before = make_entry(teams["beta"], splits["public-test"], 0.5, age_days=4)
    after = make_entry(teams["gamma"], splits["public-test"], 0.3, age_days=0.5)
    client.force_login(organiser)
    page = client.get(_panel(challenge)).content.decode()
    assert f'<option value="{phase.pk}">Phase 1 (' in page
    act = reverse("leaderboard:panel-action", args=[challenge.slug])
    response = client.post(act, {"action": "rerun", "phase": phase.pk, "why": "phase 1 again"})
    assert [str(m) for m in response.wsgi_request._messages] == ["1 run re-run."]
    assert list(RunAction.objects.values_list("run_id", "why")) == [(during.pk, "phase 1 again")]
    states = dict(EvaluationRun.objects.values_list("pk", "state"))
    assert (states[before.pk], states[after.pk]) == (State.DONE, State.DONE)


def test_runs_of_another_challenge_are_never_acted_on(
    client, challenge, runs, organiser, make_user
):
    other = Challenge.objects.create(slug="other", name="Other")
    other.organisers.add(organiser)
    client.force_login(organiser)
    response = _act(client, other, "disqualify", [runs["alpha"]])
    assert [str(m) for m in response.wsgi_request._messages] == ["Choose one run or more first."]
    assert Submission.objects.get(pk=runs["alpha"].submission_id).standing == "shown"


def test_the_quota_is_given_back_once_logged_and_shown_to_the_team(
    client, challenge, runs, teams, make_user, organiser
):
    client.force_login(organiser)
    alpha = Submission.objects.get(pk=runs["alpha"].submission_id)
    assert alpha.consumes_quota
    response = _act(client, challenge, "refund", [runs["alpha"]], why="our node died")
    assert [str(m) for m in response.wsgi_request._messages] == [
        "1 submission given their quota back."
    ]
    assert not Submission.objects.get(pk=alpha.pk).consumes_quota
    response = _act(client, challenge, "refund", [runs["alpha"]], why="again")
    assert [str(m) for m in response.wsgi_request._messages][-2:] == [
        "0 submissions given their quota back.",
        f"Not given their quota back: submission #{alpha.pk}: it already counts against no quota.",
    ]
    (logged,) = SubmissionAction.objects.all()
    assert (logged.kind, logged.why, logged.by) == ("refund", "our node died", organiser)
    client.force_login(make_user("al", team=teams["alpha"]))
    page = client.get(reverse("leaderboard:run", args=[runs["alpha"].pk])).content.decode()
    assert "the submission given its quota back by an organiser: our node died" in page


def test_submissions_are_evaluated_on_the_splits_added_since(
    client, challenge, runs, splits, organiser, django_capture_on_commit_callbacks
):
    for split in splits.values():  # every split imported: each has its items
        split.bundle.name = f"splits/{split.kind}.tar"
        split.save(update_fields=["bundle"])
    client.force_login(organiser)
    with django_capture_on_commit_callbacks(execute=False):  # no broker here: not sent
        response = _act(client, challenge, "evaluate", [runs["alpha"]], why="private split out")
    assert [str(m) for m in response.wsgi_request._messages] == [
        "1 submission evaluated on the splits added since."
    ]
    added = EvaluationRun.objects.filter(submission_id=runs["alpha"].submission_id)
    assert sorted(added.values_list("split__kind", flat=True)) == [
        "private-test", "public-test", "validation"
    ]  # fmt: skip
    with django_capture_on_commit_callbacks(execute=False):
        response = _act(client, challenge, "evaluate", [runs["alpha"]], why="again")
    assert [str(m) for m in response.wsgi_request._messages][-1] == (
        f"Not evaluated on the splits added since: submission #{runs['alpha'].submission_id}: "
        "it has a run on every split and setting it takes."
    )
    assert list(SubmissionAction.objects.values_list("kind", "why")) == [
        ("evaluate", "private split out")
    ]
