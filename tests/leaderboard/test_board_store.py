"""The stored board (``RankedBoard``) stays the board ranked now after every action that changes
what a leaderboard ranks or shows: new scores, re-scoring, re-judging, re-running, cancelling,
choosing an entry, baseline flags, renames, submission dates, the task's rules, deletions and
visibility; and a board page ranks nothing itself."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from leaderboard import board_store, run_actions
from leaderboard.models import Challenge, EvaluationRun, RankedBoard, Split, Task, Team
from leaderboard.scores import store_scores
from leaderboard.submitting.flags import set_flags
from podium.celery import app

from .factories import scores_dict

State = EvaluationRun.State


@pytest.fixture
def public(splits) -> Split:
    return splits["public-test"]


@pytest.fixture
def runs(teams, public, make_entry) -> dict[str, EvaluationRun]:
    """alpha: an old strong and a newer weak run; beta, gamma: one each; a baseline."""
    organisers = Team.objects.create(name="organisers")
    return {
        "a-old": make_entry(teams["alpha"], public, 0.40, method="a-old", age_days=3),
        "a-new": make_entry(teams["alpha"], public, 0.10, method="a-new", age_days=1),
        "b": make_entry(teams["beta"], public, 0.25, method="b", age_days=2),
        "g": make_entry(teams["gamma"], public, 0.30, method="g", age_days=2),
        "base": make_entry(organisers, public, 0.35, method="base", baseline=True),
    }


@pytest.fixture
def organiser(make_user):
    return make_user("org", staff=True)


@pytest.fixture
def sent(monkeypatch) -> None:
    """Stage tasks are not sent anywhere."""
    monkeypatch.setattr(app, "send_task", lambda *args, **kwargs: None)


def shown(split: Split) -> list[tuple[int | None, str, str]]:
    """The stored board after checking it is the board ranked now, in every setting."""
    split = Split.objects.select_related("task").get(pk=split.pk)
    for setting in split.task.run_settings():
        row = RankedBoard.objects.get(split=split, setting=setting)  # stored, not read lazily
        now = board_store.ranked(split, setting)
        assert (row.runs, row.ranks, row.dimensions, row.judges) == (
            now.runs, now.ranks, now.dimensions, now.judges,
        )  # fmt: skip
    return [(e.rank, e.team, e.method_name) for e in board_store.entries(split)]


BEFORE = [(1, "alpha", "a-old"), (None, "organisers", "base"), (2, "gamma", "g"), (3, "beta", "b")]


def test_new_scores_and_rescoring_rank_the_stored_board_again(teams, public, runs, make_entry):
    assert shown(public) == BEFORE
    make_entry(Team.objects.create(name="delta"), public, 0.5, method="d")
    assert shown(public)[0] == (1, "delta", "d")
    store_scores(runs["b"], scores_dict(0.9))
    assert shown(public)[:2] == [(1, "beta", "b"), (2, "delta", "d")]


def test_a_run_leaving_done_and_coming_back_ranks_again(public, runs, organiser, sent):
    assert run_actions.rejudge([runs["g"]], organiser, "judge changed") == []
    assert ("gamma", "g") not in [(team, method) for _, team, method in shown(public)]
    run = EvaluationRun.objects.get(pk=runs["g"].pk)
    run.move_to(State.SCORING)
    store_scores(run, scores_dict(0.45))
    run.move_to(State.DONE)
    assert shown(public)[0] == (1, "gamma", "g")


def test_a_rerun_leaves_the_board_and_its_team_falls_back(public, runs, organiser, sent):
    assert run_actions.rerun([runs["a-old"]], organiser, "re-imported split") == []
    assert shown(public) == [
        (None, "organisers", "base"), (1, "gamma", "g"), (2, "beta", "b"), (3, "alpha", "a-new"),
    ]  # fmt: skip


def test_cancelling_an_unfinished_run_leaves_the_board_as_it_was(
    teams, public, runs, make_entry, organiser
):
    running = make_entry(teams["beta"], public, 0.99, state=State.RUNNING)
    assert shown(public) == BEFORE
    assert run_actions.cancel([running], organiser, "stuck") == []
    assert shown(public) == BEFORE


def test_choosing_an_entry_and_the_entry_rules_rank_again(public, runs, organiser):
    task = public.task
    task.entry_rule = Task.EntryRule.CHOSEN
    task.save()
    set_flags(runs["a-new"].submission, organiser, chosen_for_final=True)
    assert shown(public)[-1] == (3, "alpha", "a-new")
    set_flags(runs["a-old"].submission, organiser, chosen_for_final=True)  # un-chooses a-new
    assert shown(public)[0] == (1, "alpha", "a-old")
    task.entry_rule = Task.EntryRule.LATEST
    task.save()
    assert shown(public)[-1] == (3, "alpha", "a-new")


def test_baseline_flags_rank_again(client, public, runs, organiser):
    set_flags(runs["g"].submission, organiser, is_baseline=True)
    assert shown(public)[:3] == [
        (1, "alpha", "a-old"), (None, "organisers", "base"), (None, "gamma", "g"),
    ]  # fmt: skip
    client.force_login(organiser)
    organiser.is_superuser = True
    organiser.save()
    changelist = reverse("admin:leaderboard_submission_changelist")
    client.post(
        changelist, {"action": "mark_baseline", "_selected_action": [runs["b"].submission_id]}
    )
    assert [rank for rank, *_ in shown(public)] == [1, None, None, None]


def test_renames_and_submission_dates_show_on_the_stored_board(client, public, runs):
    beta = Team.objects.get(name="beta")
    beta.name = "beta-renamed"
    beta.save()
    submission = runs["b"].submission
    submission.method_name = "b-v2"
    submission.save()
    assert shown(public)[-1] == (3, "beta-renamed", "b-v2")
    page = client.get(reverse("leaderboard:leaderboard", args=_board_args(public)))
    assert "beta-renamed" in page.content.decode() and "b-v2" in page.content.decode()
    # equal scores: under the earlier-submission rule the submission dates order them
    store_scores(runs["b"], scores_dict(0.30))
    task = public.task
    task.tie_rule = Task.TieRule.EARLIER
    task.save()
    submission.created_at = timezone.now() - timedelta(days=10)  # before gamma's
    submission.save()
    assert shown(public)[2:] == [(2, "beta-renamed", "b-v2"), (3, "gamma", "g")]


def test_a_new_primary_metric_ranks_the_stored_board_again(public, runs):
    task = public.task
    task.primary_metric = "missing"  # lower is better; the factory's rises with truthfulness
    task.save()
    # alpha's best run is now its newer one
    assert [method for _, _, method in shown(public)] == ["a-new", "b", "g", "base"]


def test_deleted_runs_submissions_and_teams_leave_the_stored_board(public, runs):
    EvaluationRun.objects.get(pk=runs["g"].pk).delete()
    assert ("gamma", "g") not in [(team, method) for _, team, method in shown(public)]
    runs["base"].submission.delete()
    Team.objects.get(name="alpha").delete()
    assert shown(public) == [(1, "beta", "b")]


def test_deleting_a_split_or_a_challenge_takes_its_boards(public, runs, splits):
    public.delete()
    assert not RankedBoard.objects.filter(split_id=public.pk).exists()
    Challenge.objects.get().delete()
    assert not RankedBoard.objects.exists()


def _board_args(split: Split) -> tuple[str, str, str]:
    return (split.task.challenge.slug, split.task.task_id, split.kind)


def test_visibility_and_reveal_show_the_stored_board_when_due(client, teams, splits, make_entry):
    private = splits["private-test"]
    make_entry(teams["alpha"], private, 0.2, method="a")
    make_entry(teams["beta"], private, 0.3, method="b")
    url = reverse("leaderboard:leaderboard", args=_board_args(private))
    assert client.get(url).status_code == 403  # before its reveal
    private.reveal_at = timezone.now() - timedelta(minutes=1)
    private.save()
    body = client.get(url).content.decode()
    assert body.index(">b</a>") < body.index(">a</a>")
    assert shown(private) == [(1, "beta", "b"), (2, "alpha", "a")]
    private.visibility = Split.Visibility.HIDDEN
    private.save()
    assert client.get(url).status_code == 403
    assert shown(private) == [(1, "beta", "b"), (2, "alpha", "a")]


def test_a_board_never_stored_is_ranked_and_stored_by_its_first_read(public, runs):
    RankedBoard.objects.all().delete()
    assert [e.method_name for e in board_store.entries(public)][:2] == ["a-old", "base"]
    assert RankedBoard.objects.filter(split=public).exists()
    assert shown(public) == BEFORE


def test_a_board_page_ranks_nothing_itself(client, public, runs):
    board_store.results_changed(public.pk)  # nothing cached
    for name in ("leaderboard", "slices"):
        with CaptureQueriesContext(connection) as captured:
            response = client.get(reverse(f"leaderboard:{name}", args=_board_args(public)))
        assert response.status_code == 200
        assert not [q for q in captured if "ROW_NUMBER" in q["sql"].upper()], name


@pytest.mark.django_db(transaction=True)
def test_two_changes_of_one_split_at_once_rank_one_after_the_other(teams, public, make_entry):
    first = make_entry(teams["alpha"], public, 0.1, method="a")
    second = make_entry(teams["beta"], public, 0.2, method="b")
    holding, release = threading.Event(), threading.Event()

    def rescore_first() -> None:
        try:
            with transaction.atomic():
                store_scores(first, scores_dict(0.9))  # holds the split's row until commit
                holding.set()
                release.wait(10)
        finally:
            connection.close()

    def rescore_second() -> None:
        try:
            store_scores(second, scores_dict(0.5))  # ranks once the first has committed
        finally:
            connection.close()

    one = threading.Thread(target=rescore_first)
    one.start()
    assert holding.wait(10)
    two = threading.Thread(target=rescore_second)
    two.start()
    time.sleep(0.5)  # the second waits on the split's row
    release.set()
    one.join(10)
    two.join(10)
    assert shown(public) == [(1, "alpha", "a"), (2, "beta", "b")]
