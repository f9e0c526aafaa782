"""The panel's action log, paged: the actions on runs and on submissions as one stream, newest
first, each page its share of it; another challenge's actions never in it; a page costs the
same number of queries however long the log."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from leaderboard.models import Challenge, RunAction, SubmissionAction
from leaderboard.views import panel


@pytest.fixture
def logged(challenge, teams, splits, make_entry, make_user, monkeypatch):
    """Seven actions, one a minute, alternating between a run and its submission (the newest:
    "action 6"), and one on another challenge's run; three lines a page."""
    monkeypatch.setattr(panel, "LOG_PER_PAGE", 3)
    organiser = make_user("olga")
    challenge.organisers.add(organiser)
    run = make_entry(teams["alpha"], splits["public-test"], 0.5)
    start = timezone.now() - timedelta(hours=1)
    for n in range(7):
        when = {"why": f"action {n}", "at": start + timedelta(minutes=n), "by": organiser}
        if n % 2:
            SubmissionAction.objects.create(
                submission=run.submission, kind="hide", from_standing="shown", **when
            )
        else:
            RunAction.objects.create(run=run, kind="rerun", from_state="done", **when)
    other = Challenge.objects.create(slug="other", name="Other")
    foreign = make_entry(teams["beta"], splits["public-test"], 0.4)
    foreign.submission.challenge = other
    foreign.submission.save(update_fields=["challenge"])
    RunAction.objects.create(run=foreign, kind="rerun", from_state="done", why="elsewhere")
    return organiser


def _page(client, challenge, number: int | None = None) -> str:
    url = reverse("leaderboard:action-log", args=[challenge.slug])
    query = {"page": number} if number else {}
    return client.get(url, query).content.decode()


def test_the_log_is_paged_newest_first_across_both_kinds(client, challenge, logged):
    client.force_login(logged)
    pages = [_page(client, challenge, n) for n in (1, 2, 3)]
    reasons = [re.findall(r"<td>(action \d)</td>", page) for page in pages]
    assert reasons == [
        ["action 6", "action 5", "action 4"],
        ["action 3", "action 2", "action 1"],
        ["action 0"],
    ]
    assert "run #" in pages[0] and "submission #" in pages[0]  # both kinds on one page
    assert "7 actions · page 1 of 3" in pages[0]
    assert 'rel="next" href="?page=2"' in pages[0] and 'rel="prev"' not in pages[0]
    assert 'rel="prev" href="?page=2"' in pages[2] and 'rel="next"' not in pages[2]
    assert "all entries (CSV)" not in pages[0]
    assert all("elsewhere" not in page for page in pages)
    assert re.findall(r"<td>(action \d)</td>", _page(client, challenge, 99)) == ["action 0"]


def test_a_page_costs_the_same_queries_however_long_the_log(client, challenge, logged, monkeypatch):
    client.force_login(logged)
    with CaptureQueriesContext(connection) as short:
        _page(client, challenge)
    monkeypatch.setattr(panel, "LOG_PER_PAGE", 7)
    with CaptureQueriesContext(connection) as whole:
        assert len(re.findall(r"<td>(action \d)</td>", _page(client, challenge))) == 7
    assert len(whole.captured_queries) == len(short.captured_queries)
