"""Per-slice statistics stored off the request (``leaderboard.slice_store``): the task a
results change sends after its commit stores what the slice page, API and exports then read
without computing; a stale version is never shown; without a stored row the view computes and
stores it; a task for an old version does nothing."""

from __future__ import annotations

import threading
import time
import uuid
import zlib
from datetime import timedelta
from unittest.mock import patch

import numpy as np
import pytest
from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard import board_cache, board_store, slice_store
from leaderboard.models import EvaluationRun, RankedSlices, Split
from leaderboard.scores import store_scores
from leaderboard.slice_statistics import slice_statistics
from leaderboard.tasks import reap_stale_runs, store_slice_statistics
from podium.celery import DEFAULT_QUEUE, queue_for

from ..services import redis_url
from .broker import broker_at, sent
from .factories import scores_dict
from .test_slice_statistics import UNIT_SLICES, _args, _board, finished_audit

TASK = board_store.SLICE_STATISTICS_TASK


@pytest.fixture
def board(teams, splits, make_entry) -> Split:
    split = _board(splits["public-test"], teams, make_entry)
    split.refresh_from_db()
    return split


@pytest.fixture
def no_computing(monkeypatch) -> None:
    """Computing slice statistics fails: whatever is shown was stored."""

    def refuse(*args: object) -> None:
        raise AssertionError("computed in the view")

    monkeypatch.setattr(slice_store, "slice_statistics", refuse)
    cache.clear()


def _rows(split: Split) -> dict[tuple[str, str], str]:
    return {
        (row.setting, row.dimension): str(row.results_version)
        for row in RankedSlices.objects.filter(split=split)
    }


def _change(split: Split, method: str = "z") -> int:
    """z now right on every unit: first in every value."""
    run_id = next(e.run_id for e in board_cache.board(split).entries if e.method_name == method)
    store_scores(EvaluationRun.objects.get(pk=run_id), scores_dict(1.0),
                 units=np.array([1.0] * 4), unit_slices=UNIT_SLICES)  # fmt: skip
    split.refresh_from_db()
    return run_id


def test_the_task_goes_to_the_default_queue():
    assert queue_for(TASK) == DEFAULT_QUEUE


def test_the_task_stores_what_page_api_and_exports_read_without_computing(
    board, make_user, client, request
):
    finished_audit(board, make_user(staff=True))
    board.refresh_from_db()
    dimensions = board_store.stored(board, "").dimensions
    assert {"domain", "turn_idx"} <= set(dimensions)
    expected = {d: slice_statistics(board, "", d) for d in dimensions}
    outcome = store_slice_statistics(board.pk, str(board.results_version))
    assert outcome["stored"] == len(dimensions)
    assert _rows(board) == {("", d): str(board.results_version) for d in dimensions}
    request.getfixturevalue("no_computing")
    for dimension, found in expected.items():  # as computed, read back from the row
        assert slice_store.read(board, "", dimension) == found
    url = reverse("leaderboard:slices", args=_args(board)) + "?dimension=domain"
    page = client.get(url).content.decode()
    assert "#1 (1–2)</span>" in page and "people 30.0 [" in page
    turns = client.get(url.replace("domain", "turn_idx")).content.decode()
    assert "No rank intervals by turn_idx: 1 of the split" in turns
    api = APIClient().get(reverse("api:split-slices", args=[board.pk]), {"dimension": "domain"})
    assert api.json()["entries"][0]["slices"]["food"]["rank_ci95"] == [1, 2]
    export = reverse("leaderboard:slices-export-json", args=_args(board))
    assert client.get(export, {"dimension": "domain"}).json()["entries"] == api.json()["entries"]


def test_a_stale_row_is_never_shown(board, request):
    store_slice_statistics(board.pk, str(board.results_version))
    old = str(board.results_version)
    z = _change(board)  # the task of this change is never run here
    assert str(board.results_version) != old
    found = slice_store.read(board, "", "domain")
    assert found.values["food"].places[z].rank == 1  # computed afresh, not the old row's 3
    # the row is replaced by the new version's (one per split, setting and dimension)
    rows = _rows(board)
    assert rows[("", "domain")] == str(board.results_version)
    assert rows[("", "turn_idx")] == old  # not read since: left for the next task or view
    request.getfixturevalue("no_computing")
    assert slice_store.read(board, "", "domain") == found


def test_without_a_row_the_view_computes_and_stores_it(board, request):
    assert _rows(board) == {}
    found = slice_store.read(board, "", "domain")
    assert found.values["food"].places and not found.unavailable
    assert _rows(board) == {("", "domain"): str(board.results_version)}
    request.getfixturevalue("no_computing")
    assert slice_store.read(board, "", "domain") == found


def test_a_task_for_an_old_version_does_nothing(board):
    old = str(board.results_version)
    _change(board)
    assert store_slice_statistics(board.pk, old)["stored"] == 0
    assert _rows(board) == {}
    current = str(board.results_version)
    assert store_slice_statistics(board.pk, current)["stored"] > 0
    assert store_slice_statistics(board.pk, old)["stored"] == 0
    assert set(_rows(board).values()) == {current}
    assert store_slice_statistics(board.pk, current)["stored"] > 0  # again: the same rows
    assert RankedSlices.objects.filter(split=board).count() == len(_rows(board))


def test_numbers_of_a_version_that_moved_on_while_computing_are_dropped(board, monkeypatch):
    computing = slice_store.slice_statistics

    def meanwhile(split: Split, setting: str, dimension: str, known: object = None):
        found = computing(split, setting, dimension, known)
        Split.objects.filter(pk=split.pk).update(results_version=uuid.uuid4())  # a change
        return found

    monkeypatch.setattr(slice_store, "slice_statistics", meanwhile)
    outcome = store_slice_statistics(board.pk, str(board.results_version))
    assert outcome["stored"] == 0 and "while they were computed" in outcome["why"]
    assert _rows(board) == {}


def test_a_task_prunes_dimensions_the_board_no_longer_has(board):
    RankedSlices.objects.create(
        split=board, setting="", dimension="gone", results_version=uuid.uuid4()
    )
    store_slice_statistics(board.pk, str(board.results_version))
    assert ("", "gone") not in _rows(board)


@pytest.fixture
def broker():
    with broker_at(redis_url("submit")) as client:
        yield client


def test_the_message_is_sent_after_the_commit_only(
    board, broker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        board_store.results_changed(board.pk)
        assert sent(broker, DEFAULT_QUEUE) == []  # not before the commit
    board.refresh_from_db()
    kwargs = {"split_id": board.pk, "results_version": str(board.results_version)}
    assert sent(broker, DEFAULT_QUEUE) == [(TASK, kwargs)]
    broker.flushdb()
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        board_store.results_changed(board.pk)
        raise RuntimeError("rolled back")
    assert callbacks == [] and sent(broker, DEFAULT_QUEUE) == []


def test_a_lost_message_is_sent_again_by_the_reaper(
    board, broker, django_capture_on_commit_callbacks
):
    board_store.results_changed(board.pk)  # its message lost: nothing runs after this commit
    board.refresh_from_db()
    due = board.slice_statistics_due_at
    assert due is not None
    kwargs = {"split_id": board.pk, "results_version": str(board.results_version)}
    with django_capture_on_commit_callbacks(execute=True):
        assert slice_store.resend_waiting() == []  # not due long enough yet
        later = due + timedelta(seconds=settings.PODIUM_UNCLAIMED_RESEND_S + 1)
        with patch.object(timezone, "now", return_value=later):
            assert reap_stale_runs()["slice_statistics_resent"] == [board.pk]
        assert slice_store.resend_waiting(later) == []  # due again from then
    assert sent(broker, DEFAULT_QUEUE) == [(TASK, kwargs)]
    # once the task stores them they are due no more
    assert slice_store.resend_waiting(later + timedelta(days=1)) == [board.pk]
    assert store_slice_statistics(**kwargs)["stored"] > 0
    assert slice_store.resend_waiting(later + timedelta(days=2)) == []


def test_no_message_for_a_split_without_unit_slices(
    teams, splits, make_entry, broker, django_capture_on_commit_callbacks
):
    split = splits["public-test"]
    make_entry(teams["alpha"], split, 0.5, units=[1.0, 0.0])
    with django_capture_on_commit_callbacks(execute=True):
        board_store.results_changed(split.pk)
    assert sent(broker, DEFAULT_QUEUE) == []


@pytest.mark.django_db(transaction=True)
def test_two_tasks_of_one_split_at_once_leave_whole_rows(teams, splits, make_entry, monkeypatch):
    split = _board(splits["public-test"], teams, make_entry)
    split.refresh_from_db()
    version = str(split.results_version)
    expected = slice_statistics(split, "", "domain")
    computing, both = slice_store.slice_statistics, threading.Barrier(2, timeout=10)

    def together(split: Split, setting: str, dimension: str, known: object = None):
        if dimension == "domain":
            both.wait()  # the two tasks compute at once, then both store
        return computing(split, setting, dimension, known)

    monkeypatch.setattr(slice_store, "slice_statistics", together)
    outcomes: list[dict] = []

    def task() -> None:
        try:
            outcomes.append(store_slice_statistics(split.pk, version))
        finally:
            connection.close()

    threads = [threading.Thread(target=task) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(outcomes) == 2 and all(o["stored"] > 0 for o in outcomes), outcomes
    assert set(_rows(split).values()) == {version}
    assert RankedSlices.objects.filter(split=split).count() == len(_rows(split))
    assert slice_store.read(split, "", "domain") == expected


@pytest.mark.django_db(transaction=True)
def test_a_change_in_progress_makes_the_task_drop_its_numbers_without_waiting(
    teams, splits, make_entry
):
    split = _board(splits["public-test"], teams, make_entry)
    split.refresh_from_db()
    holding, release = threading.Event(), threading.Event()

    def change() -> None:
        try:
            with transaction.atomic():
                board_store.results_changed(split.pk)  # holds the split's row until commit
                holding.set()
                release.wait(20)
        finally:
            connection.close()

    changing = threading.Thread(target=change)
    changing.start()
    try:
        assert holding.wait(10)
        started = time.monotonic()
        outcome = store_slice_statistics(split.pk, str(split.results_version))
        assert time.monotonic() - started < 10  # did not wait for the change's commit
    finally:
        release.set()
        changing.join(10)
    assert outcome["stored"] == 0 and "while they were computed" in outcome["why"]
    assert _rows(split) == {}


def test_a_private_splits_stored_statistics_reach_no_team_before_its_reveal(
    teams, splits, make_entry, make_user, request
):
    private = _board(splits["private-test"], teams, make_entry)
    finished_audit(private, make_user(staff=True))
    private.refresh_from_db()
    assert store_slice_statistics(private.pk, str(private.results_version))["stored"] > 0
    stored = b"".join(
        zlib.decompress(bytes(row))
        for row in RankedSlices.objects.filter(split=private).values_list("statistics", flat=True)
    ).decode()
    for secret in ("the hidden question", "an answer", '"i3"', "hallucinated"):
        assert secret not in stored  # aggregates only: no label, item or verdict
    request.getfixturevalue("no_computing")
    query = "?dimension=domain"
    paths = (
        reverse("leaderboard:slices", args=_args(private)) + query,
        reverse("leaderboard:slices-export-json", args=_args(private)) + query,
        reverse("api:split-slices", args=[private.pk]) + query,
    )
    team, organiser = Client(), Client()
    team.force_login(make_user("member", team=teams["alpha"]))
    organiser.force_login(make_user("organiser", staff=True))
    for path in paths:
        assert Client().get(path).status_code == 403  # anonymous
        assert team.get(path).status_code == 403
        assert organiser.get(path).status_code == 200  # read from the stored row


@pytest.mark.django_db(transaction=True)
def test_a_store_in_progress_does_not_make_another_drop_its_numbers(teams, splits, make_entry):
    split = _board(splits["public-test"], teams, make_entry)
    split.refresh_from_db()
    holding, release = threading.Event(), threading.Event()

    def storing() -> None:  # what another task's store holds on the split while it writes
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    "SELECT 1 FROM leaderboard_split WHERE id = %s FOR SHARE", [split.pk]
                )
                holding.set()
                release.wait(20)
        finally:
            connection.close()

    other = threading.Thread(target=storing)
    other.start()
    try:
        assert holding.wait(10)
        outcome = store_slice_statistics(split.pk, str(split.results_version))
    finally:
        release.set()
        other.join(10)
    assert outcome["stored"] > 0, outcome
    assert set(_rows(split).values()) == {str(split.results_version)}
