"""The public board's freeze (``leaderboard.public_board``): in the last days of a phase the
public-test boards rank only submissions made before the cutoff, teams see nothing of their
later ones, and at the phase's end the board shows everything again, nobody changing results."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard import api_tokens, board_store, permissions, public_board
from leaderboard.models import Challenge, Phase, RankedBoard, Split
from leaderboard.tasks import reap_stale_runs


@pytest.fixture
def phase(challenge) -> Phase:
    """A phase ending in 2 days, its public board frozen for the last 3: since a day ago."""
    challenge.freeze_days = 3
    challenge.save()
    now = timezone.now()
    return Phase.objects.create(
        challenge=challenge,
        name="Phase 1",
        starts_at=now - timedelta(days=10),
        ends_at=now + timedelta(days=2),
    )


@pytest.fixture
def runs(phase, teams, splits, make_entry) -> dict:
    public = splits["public-test"]
    return {
        "old": make_entry(teams["alpha"], public, 0.3, method="old", age_days=5),
        "new": make_entry(teams["alpha"], public, 0.9137, method="new", age_days=0.5),
        "beta": make_entry(teams["beta"], public, 0.4, method="b", age_days=2),
    }


def _board(split: Split) -> list[tuple[int | None, str, str]]:
    return [(e.rank, e.team, e.method_name) for e in board_store.entries(split)]


def _url(split: Split, name: str = "leaderboard") -> str:
    task = split.task
    return reverse(f"leaderboard:{name}", args=(task.challenge.slug, task.task_id, split.kind))


def _api(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_tokens.create(user, 'tests')[1]}")
    return api


def _shows(text: str, value: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", text) is not None


def test_a_frozen_board_ranks_submissions_made_before_the_cutoff(client, splits, runs, phase):
    public = splits["public-test"]
    assert _board(public) == [(1, "beta", "b"), (2, "alpha", "old")]
    frozen = RankedBoard.objects.get(split=public).statistics["frozen"]
    since = phase.ends_at - timedelta(days=3)
    assert frozen == {"since": since.isoformat(), "until": phase.ends_at.isoformat()}
    raw = public.task.declared().metric("truthfulness").shown(0.9137)
    for url in (_url(public), _url(public, "export-csv")):
        text = client.get(url).content.decode()
        assert not _shows(text, raw)
    page = client.get(_url(public)).content.decode()
    assert f"Frozen since {since:%Y-%m-%d %H:%M} UTC until {phase.ends_at:%Y-%m-%d %H:%M}" in page
    exported = client.get(_url(public, "export-json")).json()
    assert exported["statistics"]["frozen"] == frozen
    api = APIClient().get(reverse("api:split-leaderboard", args=[public.pk])).json()
    assert api["statistics"]["frozen"]["until"].startswith(f"{phase.ends_at:%Y-%m-%dT%H:%M}")


def test_a_team_sees_nothing_of_its_submissions_since_the_cutoff(
    client, splits, runs, phase, make_user, teams
):
    member = make_user(team=teams["alpha"])
    new, old = runs["new"], runs["old"]
    assert not permissions.can_see_score(member, new) and permissions.can_see_score(member, old)
    assert not permissions.can_see_answers(member, new) and permissions.can_see_answers(member, old)
    listed = {r["id"]: r for r in _api(member).get(reverse("api:run-list")).json()["results"]}
    assert (listed[new.pk]["score"], listed[new.pk]["score_hidden"]) == (None, True)
    until = listed[new.pk]["published"]["withheld_until"]
    assert until.startswith(f"{phase.ends_at:%Y-%m-%dT%H:%M}")
    assert listed[old.pk]["score"]["value"] == pytest.approx(0.3)
    assert listed[old.pk]["published"] is None
    client.force_login(member)
    page = client.get(reverse("leaderboard:run", args=[new.pk])).content.decode()
    assert "its score appears when the phase ends" in page
    assert not _shows(
        page, splits["public-test"].task.declared().metric("truthfulness").shown(0.9137)
    )
    organiser = make_user("org", staff=True)
    assert permissions.can_see_score(organiser, new) and permissions.can_see_answers(organiser, new)


def test_the_board_shows_everything_once_the_phase_ends(client, splits, runs, phase):
    public = splits["public-test"]
    version = Split.objects.get(pk=public.pk).results_version
    Phase.objects.filter(pk=phase.pk).update(ends_at=timezone.now() - timedelta(minutes=1))
    assert public_board.stale(public)
    page = client.get(_url(public)).content.decode()  # ranks it again before the cached page
    assert "Frozen since" not in page
    assert _board(public)[0] == (1, "alpha", "new")
    assert "frozen" not in RankedBoard.objects.get(split=public).statistics
    assert Split.objects.get(pk=public.pk).results_version != version
    assert not public_board.stale(public)
    assert public_board.withholds(runs["new"]) is False


def test_the_reaper_thaws_and_freezes_a_board_nobody_reads(splits, runs, phase):
    public = splits["public-test"]
    board_store.results_changed(public.pk)
    assert reap_stale_runs()["boards_refrozen"] == []  # frozen, and ranked so
    Phase.objects.filter(pk=phase.pk).update(ends_at=timezone.now() - timedelta(minutes=1))
    assert reap_stale_runs()["boards_refrozen"] == [public.pk]  # thawed with no read
    assert "frozen" not in RankedBoard.objects.get(split=public).statistics
    assert reap_stale_runs()["boards_refrozen"] == []
    Phase.objects.filter(pk=phase.pk).update(ends_at=timezone.now() + timedelta(days=1))
    assert reap_stale_runs()["boards_refrozen"] == [public.pk]  # a new freeze begins
    assert "frozen" in RankedBoard.objects.get(split=public).statistics


def test_the_board_freezes_when_the_freeze_begins(client, splits, runs, phase):
    public = splits["public-test"]
    later = timezone.now() + timedelta(days=10)
    Phase.objects.filter(pk=phase.pk).update(ends_at=later)
    Challenge.objects.filter(pk=phase.challenge_id).update(freeze_days=3)
    board_store.results_changed(public.pk)  # ranked before the freeze: everything shows
    assert _board(public)[0] == (1, "alpha", "new")
    Phase.objects.filter(pk=phase.pk).update(ends_at=timezone.now() + timedelta(days=1))
    page = client.get(_url(public)).content.decode()
    assert "Frozen since" in page
    assert _board(public) == [(1, "beta", "b"), (2, "alpha", "old")]


def test_only_public_tests_freeze(splits, runs, make_entry, teams):
    validation = splits["validation"]
    make_entry(teams["alpha"], validation, 0.7, method="late", age_days=0.1)
    assert _board(validation) == [(1, "alpha", "late")]
    assert public_board.rules(validation) == public_board.Rules()


def test_a_challenge_that_never_freezes_asks_nothing_more(splits, django_assert_num_queries):
    public = Split.objects.select_related("task__challenge").get(pk=splits["public-test"].pk)
    with django_assert_num_queries(0):
        assert not public_board.stale(public)


def test_under_the_ladder_a_submission_since_the_cutoff_publishes_nothing(
    splits, runs, make_user, teams
):
    Challenge.objects.filter(pk=runs["new"].submission.challenge_id).update(ladder_threshold=0.1)
    new = type(runs["new"]).objects.get(pk=runs["new"].pk)
    published = public_board.published(new)
    assert published is not None and published.released is None
    assert published.withheld_until is not None
    old = type(runs["old"]).objects.get(pk=runs["old"].pk)
    assert public_board.published(old) == public_board.Published(0.3, True)


def test_organisers_read_the_unfrozen_board_on_asking(client, splits, runs, make_user, teams):
    public = splits["public-test"]
    for who, shown in (
        (make_user(team=teams["alpha"]), False),
        (make_user("org", staff=True), True),
    ):
        client.force_login(who)
        page = client.get(_url(public) + "?raw=1").content.decode()
        assert ("Raw scores, organisers only" in page) is shown
        assert ('"new"' in page or ">new<" in page) is shown
