"""Repeated runs of the final entries (``leaderboard.repeat_entries``, ``leaderboard.repeats``):
the organisers' action and who may take it, the boards taking trial 0 only, the statistics
stored beside a repeated entry (worked out by hand), and how pages, the API and exports show
them; a repeat counts against no quota and its team cannot cancel it."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard import board_store, quotas, run_actions
from leaderboard.models import EvaluationRun, RankedBoard, Split, Submission, SubmissionAction, Team
from leaderboard.repeat_entries import repeat_final_entries
from leaderboard.run_actions import RunActionRefused
from leaderboard.scores import store_scores
from tests.leaderboard.test_panel import organiser  # noqa: F401 - fixture used by name
from tests.leaderboard.test_run_actions import sent  # noqa: F401 - fixture used by name

from .factories import scores_dict

State = EvaluationRun.State


@pytest.fixture
def public(splits) -> Split:
    split = splits["public-test"]
    split.task.final_repeats = 3
    split.task.save()
    return Split.objects.select_related("task").get(pk=split.pk)


def repeat(entry: EvaluationRun, trial: int, score: float | None, units=None) -> EvaluationRun:
    """A repeat of ``entry``: done with ``score`` and ``units``, or queued (``score`` None)."""
    run = EvaluationRun.objects.create(
        submission=entry.submission, task=entry.task, split=entry.split, setting=entry.setting,
        trial=trial, state=State.QUEUED if score is None else State.DONE, judge_id="rules@1",
    )  # fmt: skip
    if score is not None:
        store_scores(run, scores_dict(score), units=np.array(units))
    else:
        board_store.results_changed(run.split_id)
    return run


@pytest.fixture
def repeated(teams, public, make_entry) -> dict[str, EvaluationRun]:
    """alpha run three times on four units (scores 0.0, 0.1, -0.1), beta once."""
    alpha = make_entry(teams["alpha"], public, 0.0, method="alpha-m", units=[1, 1, -1, -1])
    beta = make_entry(teams["beta"], public, -0.5, method="beta-m", units=[0, -1, 0, -1])
    return {
        "alpha": alpha,
        "beta": beta,
        "alpha-2": repeat(alpha, 1, 0.1, [1, -1, 1, -1]),
        "alpha-3": repeat(alpha, 2, -0.1, [1, 1, 1, -1]),
    }


def test_the_board_ranks_trial_zero_and_stores_the_repeats_beside_it(public, repeated):
    entries = board_store.entries(public)
    # the repeats scored 0.1 and -0.1: neither is an entry, alpha's own run (0.0) ranks
    assert [(e.method_name, e.run_id, e.rank) for e in entries] == [
        ("alpha-m", repeated["alpha"].pk, 1),
        ("beta-m", repeated["beta"].pk, 2),
    ]
    alpha, beta = entries
    assert beta.repeated is None
    stats = alpha.repeated
    assert (stats["runs"], stats["done"], stats["units"]) == (3, 3, 4)
    assert stats["mean"] == pytest.approx(0.0)  # (0.0 + 0.1 - 0.1) / 3
    assert stats["sd"] == pytest.approx(0.1)  # squares 0, 0.01, 0.01 over 2
    # per unit, the three runs: (1, 1, 1) passes, (1, -1, 1), (-1, 1, 1), (-1, -1, -1) do not
    assert stats["pass_k"] == pytest.approx(0.25)
    assert stats["low"] < stats["mean"] < stats["high"]
    row = RankedBoard.objects.get(split=public, setting="")
    assert row.repeated == [stats, None]
    assert row.statistics["repeats"]["passing_unit"] == 1.0


def test_an_entry_whose_repeats_are_not_done_says_how_many_are(public, teams, make_entry):
    alpha = make_entry(teams["alpha"], public, 0.0, units=[1, -1])
    repeat(alpha, 1, 0.5, [1, 1])
    waiting = repeat(alpha, 2, None)
    assert board_store.entries(public)[0].repeated == {"runs": 3, "done": 2}
    EvaluationRun.objects.filter(pk=waiting.pk).update(state=State.DONE)
    store_scores(waiting, scores_dict(1.0), units=np.array([1.0, 1.0]))
    assert board_store.entries(public)[0].repeated["pass_k"] == 0.5


def test_runs_scored_without_units_get_counts_only(public, teams, make_entry):
    alpha = make_entry(teams["alpha"], public, 0.0)  # scored before units were kept
    repeat(alpha, 1, 0.5, [1, 1])
    assert board_store.entries(public)[0].repeated == {"runs": 2, "done": 2}


def test_the_action_repeats_ranked_entries_only_and_logs_it(
    public,
    teams,
    make_entry,
    organiser,  # noqa: F811 - the fixture imported above
    sent,  # noqa: F811 - the fixture imported above
    django_capture_on_commit_callbacks,
):
    alpha = make_entry(teams["alpha"], public, 0.4, units=[1, 0])
    make_entry(Team.objects.create(name="organisers"), public, 0.9, baseline=True)
    hidden = make_entry(teams["gamma"], public, 0.8)
    Submission.objects.filter(pk=hidden.submission_id).update(standing="hidden")
    board_store.results_changed(public.pk)
    with django_capture_on_commit_callbacks(execute=True):
        acted, refused = repeat_final_entries(public, organiser, "GPU non-determinism")
    assert (acted, refused) == (1, [])
    made = EvaluationRun.objects.filter(trial__gt=0)
    assert sorted(made.values_list("submission_id", "trial", "state")) == [
        (alpha.submission_id, 1, State.QUEUED), (alpha.submission_id, 2, State.QUEUED),
    ]  # fmt: skip
    assert sorted(run for _, run, _ in sent) == sorted(made.values_list("pk", flat=True))
    assert list(SubmissionAction.objects.values_list("submission_id", "kind", "why")) == [
        (alpha.submission_id, "repeat", "GPU non-determinism")
    ]
    # again: nothing more to make
    assert repeat_final_entries(public, organiser, "again") == (
        0,
        [f"submission #{alpha.submission_id}: it has its 3 runs on {public} already, or cannot "
         "run"],
    )  # fmt: skip
    assert made.count() == 2
    # the repeats count against no quota: neither per day nor at once
    use = quotas.usage(teams["alpha"], public.task)
    assert (use.today, use.concurrent) == (1, 0)


@pytest.mark.parametrize(
    ("k", "entries", "why", "message"),
    [
        (1, True, "x", "asks for one run of each final entry"),
        (3, False, "x", "has no ranked entry to repeat"),
        (3, True, "  ", "say why"),
    ],
)
def test_the_action_is_refused_with_a_reason(
    public,
    teams,
    make_entry,
    organiser,  # noqa: F811 - the fixture imported above
    k,
    entries,
    why,
    message,
):
    public.task.final_repeats = k
    public.task.save()
    if entries:
        make_entry(teams["alpha"], public, 0.4)
    with pytest.raises(RunActionRefused, match=message):
        repeat_final_entries(Split.objects.get(pk=public.pk), organiser, why)
    assert not EvaluationRun.objects.filter(trial__gt=0).exists()


def test_a_superseded_split_is_not_repeated(public, teams, make_entry, organiser):  # noqa: F811
    make_entry(teams["alpha"], public, 0.4)
    Split.objects.filter(pk=public.pk).update(superseded_at=timezone.now())
    with pytest.raises(RunActionRefused, match="is superseded"):
        repeat_final_entries(Split.objects.get(pk=public.pk), organiser, "x")


def test_only_organisers_repeat_from_the_panel_and_the_api(
    client,
    public,
    teams,
    make_entry,
    make_user,
    organiser,  # noqa: F811 - the fixture imported above
    django_capture_on_commit_callbacks,
):
    make_entry(teams["alpha"], public, 0.4)
    member = make_user("al", team=teams["alpha"])
    panel = reverse("leaderboard:panel-repeat", args=[public.task.challenge.slug])
    api_path = reverse("api:split-repeat", args=[public.pk])
    api = APIClient()
    for user in (member, make_user("stranger")):  # staff organise every challenge
        client.force_login(user)
        assert client.post(panel, {"split": public.pk, "why": "x"}).status_code == 403
        api.force_authenticate(user)
        assert api.post(api_path, {"why": "x"}, format="json").status_code == 403
    api.force_authenticate(None)
    assert api.post(api_path, {"why": "x"}, format="json").status_code in (401, 403)
    assert not EvaluationRun.objects.filter(trial__gt=0).exists()
    client.force_login(organiser)
    with django_capture_on_commit_callbacks(execute=False):  # no broker here: not sent
        response = client.post(panel, {"split": public.pk, "why": "variance"})
    assert [str(m) for m in response.wsgi_request._messages] == [
        f"1 entry of {public} repeated up to 3 runs each."
    ]
    api.force_authenticate(organiser)
    body = api.post(api_path, {"why": "again"}, format="json").json()
    assert (body["runs_per_entry"], body["repeated"], len(body["refused"])) == (3, 0, 1)
    assert api.post(api_path, {}, format="json").status_code == 400  # no reason
    public.task.final_repeats = 1
    public.task.save()
    refused = api.post(api_path, {"why": "x"}, format="json")
    assert refused.status_code == 400 and "final_repeats is 1" in refused.json()["detail"]


def test_pages_api_and_exports_show_repeats(client, public, repeated, make_user, teams):
    challenge = public.task.challenge
    board = client.get(
        reverse("leaderboard:leaderboard", args=[challenge.slug, "multi-turn-qa", "public-test"])
    ).content.decode()
    assert "mean of 3 runs 0.0 [" in board and "between runs sd 10.0, pass^3 0.25" in board
    assert "Beside an entry run k times" in board
    # the entry's page lists its runs with their scores, under the same line
    args = [challenge.slug, "multi-turn-qa", "public-test"]
    entry = client.get(
        reverse("leaderboard:entry", args=[*args, repeated["alpha"].pk])
    ).content.decode()
    assert "Repeated runs" in entry and "mean of 3 runs 0.0 [" in entry
    for n, (name, shown) in enumerate(
        (("alpha", "0.0"), ("alpha-2", "10.0"), ("alpha-3", "-10.0"))
    ):
        assert f"<td>#{repeated[name].pk}</td><td>{n + 1} of 3</td><td>done</td>" in entry
        assert f'<td class="num">{shown}</td>' in entry
    other = client.get(
        reverse("leaderboard:entry", args=[*args, repeated["beta"].pk])
    ).content.decode()
    assert "Repeated runs" not in other
    api = APIClient()
    body = api.get(reverse("api:split-leaderboard", args=[public.pk])).json()
    assert body["entries"][0]["repeated"]["pass_k"] == 0.25
    assert body["entries"][1]["repeated"] is None
    assert body["statistics"]["repeats"]["metric"] == "truthfulness"
    export = client.get(
        reverse("leaderboard:export-csv", args=[challenge.slug, "multi-turn-qa", "public-test"])
    ).content.decode()
    rows = list(csv.DictReader(io.StringIO(export)))
    assert (rows[0]["repeated_runs"], rows[0]["repeated_pass_k"]) == ("3", "0.25")
    assert rows[1]["repeated_runs"] == ""
    # the team's own pages name the repeat; the API too
    client.force_login(make_user("al", team=teams["alpha"]))
    again = repeated["alpha-2"]
    page = client.get(reverse("leaderboard:run", args=[again.pk])).content.decode()
    assert f"repeat 2 of 3 of run #{repeated['alpha'].pk}" in page
    mine = client.get(reverse("leaderboard:my-submissions")).content.decode()
    assert f"repeat 3 of 3 of run #{repeated['alpha'].pk}" in mine
    api.force_login(make_user("al2", team=teams["alpha"]))
    run = api.get(reverse("api:run-detail", args=[again.pk])).json()
    assert (run["trial"], run["repeat_of"]) == (1, repeated["alpha"].pk)
    own = api.get(reverse("api:run-detail", args=[repeated["alpha"].pk])).json()
    assert (own["trial"], own["repeat_of"]) == (0, None)


def test_a_team_cannot_cancel_a_repeat_nor_see_another_teams(
    client, public, teams, make_entry, make_user
):
    alpha = make_entry(teams["alpha"], public, 0.4)
    waiting = repeat(alpha, 1, None)
    client.force_login(make_user("al", team=teams["alpha"]))
    assert client.post(reverse("leaderboard:run-cancel", args=[waiting.pk])).status_code == 403
    assert EvaluationRun.objects.get(pk=waiting.pk).state == State.QUEUED
    client.force_login(make_user("be", team=teams["beta"]))
    assert client.get(reverse("leaderboard:run", args=[waiting.pk])).status_code == 404


def test_the_command_repeats_a_split(public, teams, make_entry, django_capture_on_commit_callbacks):
    alpha = make_entry(teams["alpha"], public, 0.4)
    out = io.StringIO()
    with django_capture_on_commit_callbacks(execute=False):  # no broker here: not sent
        call_command(
            "repeat_entries", "crag-mm-2026", "multi-turn-qa", "public-test", "--why", "final",
            stdout=out,
        )  # fmt: skip
    assert out.getvalue() == f"1 entries of {public} repeated up to 3 runs each\n"
    assert sorted(alpha.submission.runs.values_list("trial", flat=True)) == [0, 1, 2]
    action = SubmissionAction.objects.get()
    assert (action.kind, action.why, action.by) == ("repeat", "final", None)
    with pytest.raises(CommandError, match="no split crag-mm-2026/nope/public-test"):
        call_command("repeat_entries", "crag-mm-2026", "nope", "public-test", "--why", "x")


def test_organisers_rejudge_and_cancel_repeats_as_any_run(
    public,
    repeated,
    organiser,  # noqa: F811 - the fixture imported above
    sent,  # noqa: F811 - the fixture imported above
    django_capture_on_commit_callbacks,
):
    with django_capture_on_commit_callbacks(execute=True):
        assert run_actions.rejudge([repeated["alpha-3"]], organiser, "judge fixed") == []
    assert [run for _, run, _ in sent] == [repeated["alpha-3"].pk]
    # out of done: the entry's statistics wait for it again, its board line stays
    entries = board_store.entries(public)
    assert entries[0].run_id == repeated["alpha"].pk
    assert entries[0].repeated == {"runs": 3, "done": 2}
    assert run_actions.cancel([repeated["alpha-3"]], organiser, "enough") == []
    assert EvaluationRun.objects.get(pk=repeated["alpha-3"].pk).state == State.CANCELLED
    assert board_store.entries(public)[0].repeated == {"runs": 3, "done": 2}
