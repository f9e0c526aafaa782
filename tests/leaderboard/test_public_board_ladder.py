"""The Ladder on a public test (``leaderboard.public_board``): the board ranks teams by their
released scores, and whatever anyone but an organiser reads of the split (pages, exports, the
API, run pages, slices, comparisons, answers) is a function of released scores only."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from leaderboard import api_tokens, board_store, permissions
from leaderboard.models import Challenge, EntryComparison, RankedBoard, Split, Team

ETA = 0.05
# alpha: 0.4012 released as 0.4; 0.4388 not > 0.45; 0.5237 > 0.45, released as 0.5; 0.1234 worse
ALPHA = (0.4012, 0.4388, 0.5237, 0.1234)
BETA = 0.3121  # released as 0.3
BASE = 0.3561  # the organisers' baseline: 0.35


@pytest.fixture
def public(splits, challenge) -> Split:
    challenge.ladder_threshold = ETA
    challenge.save()
    return splits["public-test"]


@pytest.fixture
def runs(teams, public, make_entry) -> dict[str, Any]:
    alpha = [
        make_entry(teams["alpha"], public, score, method=f"a{i}", age_days=5 - i)
        for i, score in enumerate(ALPHA)
    ]
    organisers = Team.objects.create(name="organisers")
    return {
        "alpha": alpha,
        "beta": make_entry(teams["beta"], public, BETA, method="b", age_days=2),
        "base": make_entry(organisers, public, BASE, method="base", baseline=True),
    }


def raw_texts(public: Split) -> list[str]:
    """How the raw scores behind the board would read on a page: each value of alpha's best
    run (primary, its interval, other metrics), beta's and the baseline's, as shown."""
    benchmark = public.task.declared()
    texts = []
    for score in (*ALPHA[:3], BETA, BASE):
        accuracy = (1 + score) / 2 * 0.8
        texts += [benchmark.metric("truthfulness").shown(v) for v in (score, score - 0.1)]
        texts.append(benchmark.metric("accuracy").shown(accuracy))
    return texts


def leaks(text: str, raw: list[str]) -> list[str]:
    """The raw values ``raw`` that ``text`` shows as numbers of their own."""
    return [t for t in raw if re.search(rf"(?<![\w.]){re.escape(t)}(?![\w])", text)]


def raw_numbers() -> set[float]:
    numbers = set()
    for score in (*ALPHA, BETA, BASE):
        numbers |= {round(score, 4), round(score - 0.1, 4), round(score + 0.1, 4)}
        numbers.add(round((1 + score) / 2 * 0.8, 4))
    return numbers


def numbers_in(value: Any) -> set[float]:
    """Every number in a JSON document, rounded as ``raw_numbers``."""
    if isinstance(value, dict):
        return set().union(*(numbers_in(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(numbers_in(v) for v in value)) if value else set()
    if isinstance(value, float):
        return {round(value, 4)}
    return set()


def _api(user=None) -> APIClient:
    api = APIClient()
    if user is not None:
        api.credentials(HTTP_AUTHORIZATION=f"Token {api_tokens.create(user, 'tests')[1]}")
    return api


def _board_url(public: Split, name: str = "leaderboard", *args: object) -> str:
    task = public.task
    return reverse(
        f"leaderboard:{name}", args=(task.challenge.slug, task.task_id, public.kind, *args)
    )


def test_the_board_ranks_teams_by_their_released_scores(public, runs):
    entries = board_store.entries(public)
    assert [(e.rank, e.team, e.method_name, e.primary) for e in entries] == [
        (1, "alpha", "a2", 0.5),
        (None, "organisers", "base", 0.35),
        (2, "beta", "b", 0.3),
    ]
    assert all(e.laddered and e.primary_ci_low is None and e.group is None for e in entries)
    assert entries[0].metrics == {"truthfulness": 0.5}  # no other metric of the raw run
    stored = RankedBoard.objects.get(split=public)
    assert stored.released == [[0.5], [0.35], [0.3]]
    assert stored.dimensions == [] and stored.statistics == {"ladder": {"threshold": ETA}}


def test_a_team_under_the_threshold_keeps_its_place(public, runs, make_entry, teams):
    # beta's 0.3449 is not above 0.3 + 0.05: beta stays at 0.3 behind the baseline
    make_entry(teams["beta"], public, 0.3449, method="b2")
    assert [(e.team, e.method_name, e.primary) for e in board_store.entries(public)][2] == (
        "beta", "b", 0.3,
    )  # fmt: skip
    make_entry(teams["beta"], public, 0.61, method="b3")
    assert next((e.team, e.primary) for e in board_store.entries(public)) == ("beta", 0.6)


@pytest.mark.parametrize("who", ["anonymous", "member", "outsider"])
def test_board_pages_and_exports_read_released_scores_only(
    client, public, runs, make_user, teams, who
):
    if who != "anonymous":
        client.force_login(make_user(team=teams["alpha"] if who == "member" else None))
    a, b = sorted((runs["alpha"][2].pk, runs["beta"].pk))
    EntryComparison.objects.create(
        split=public, run_a_id=a, run_b_id=b, difference=0.2116, ci_low=0.1116, ci_high=0.3116,
        separable=True, p_value=0.0123,
    )  # fmt: skip
    raw = [*raw_texts(public), "0.0123"]
    raw += [public.task.declared().metric("truthfulness").shown(v) for v in (0.2116, 0.3116)]
    for url in (
        _board_url(public),
        _board_url(public) + "?sort=accuracy&dir=desc",
        _board_url(public) + "?raw=1",  # an organiser's view: ignored for anyone else
        _board_url(public, "slices") + "?dimension=domain",
        _board_url(public, "entry", runs["alpha"][2].pk),
        _board_url(public, "compare") + f"?a={runs['alpha'][2].pk}&b={runs['beta'].pk}",
        _board_url(public, "export-csv"),
    ):
        response = client.get(url)
        assert response.status_code in (200, 404), url
        text = response.content.decode()
        leaked = leaks(text, raw)
        assert not leaked, (url, leaked)
    page = client.get(_board_url(public)).content.decode()
    assert "Scores published by the Ladder" in page
    exported = client.get(_board_url(public, "export-json") + "?raw=1").json()
    assert not numbers_in(exported) & raw_numbers()
    assert [e["primary"] for e in exported["entries"]] == [0.5, 0.35, 0.3]
    assert all(e["laddered"] for e in exported["entries"])


def test_the_api_reads_released_scores_only(public, runs, make_user, teams):
    for api in (_api(), _api(make_user(team=teams["alpha"]))):
        found = api.get(reverse("api:split-leaderboard", args=[public.pk])).json()
        assert not numbers_in(found) & raw_numbers()
        assert [e["primary"] for e in found["entries"]] == [0.5, 0.35, 0.3]
        statistics = {k: v for k, v in found["statistics"].items() if v is not None}
        assert statistics == {"ladder": {"threshold": ETA}}


def test_the_apis_raw_board_is_the_organisers_alone(public, runs, make_user, teams):
    url = reverse("api:split-leaderboard", args=[public.pk]) + "?raw=1"
    for api in (_api(), _api(make_user(team=teams["alpha"]))):  # ignored: the released scores
        found = api.get(url).json()
        assert not numbers_in(found) & raw_numbers()
        assert [e["primary"] for e in found["entries"]] == [0.5, 0.35, 0.3]
    found = _api(make_user("org", staff=True)).get(url).json()
    assert [e["primary"] for e in found["entries"]] == pytest.approx([ALPHA[2], BASE, BETA])
    assert not any(e["laddered"] for e in found["entries"])


def test_a_team_reads_what_was_published_of_its_runs_never_their_scores(
    client, public, runs, make_user, teams
):
    member = make_user(team=teams["alpha"])
    api = _api(member)
    listed = {r["id"]: r for r in api.get(reverse("api:run-list")).json()["results"]}
    published = [listed[run.pk]["published"] for run in runs["alpha"]]
    assert published == [
        {"released": 0.4, "improved": True, "withheld_until": None},
        {"released": 0.4, "improved": False, "withheld_until": None},
        {"released": 0.5, "improved": True, "withheld_until": None},
        {"released": 0.5, "improved": False, "withheld_until": None},
    ]
    assert all(listed[run.pk]["score"] is None for run in runs["alpha"])
    assert not numbers_in(list(listed.values())) & raw_numbers()
    submission = api.get(reverse("api:submission-detail", args=[runs["alpha"][2].submission_id]))
    assert not numbers_in(submission.json()) & raw_numbers()
    client.force_login(member)
    raw = raw_texts(public)
    run = runs["alpha"][3]
    page = client.get(reverse("leaderboard:run", args=[run.pk])).content.decode()
    assert "published: 0.5" in page and "stays" in page
    assert not leaks(page, raw)
    mine = client.get(reverse("leaderboard:my-submissions")).content.decode()
    assert "published: 0.5" in mine and not leaks(mine, raw)
    assert not permissions.can_see_answers(member, run)
    for name in ("run-transcript", "run-log"):
        assert client.get(reverse(f"leaderboard:{name}", args=[run.pk])).status_code in (403, 404)


def test_organisers_still_read_raw_scores(client, public, runs, make_user):
    organiser = make_user("org", staff=True)
    run = runs["alpha"][2]
    assert permissions.can_see_score(organiser, run) and permissions.can_see_answers(organiser, run)
    listed = {r["id"]: r for r in _api(organiser).get(reverse("api:run-list")).json()["results"]}
    assert listed[run.pk]["score"]["value"] == pytest.approx(0.5237)
    client.force_login(organiser)
    page = client.get(reverse("leaderboard:run", args=[run.pk])).content.decode()
    assert public.task.declared().metric("truthfulness").shown(0.5237) in page


def test_every_score_is_published_again_when_the_ladder_is_turned_off(public, runs):
    challenge = Challenge.objects.get(pk=public.task.challenge_id)
    challenge.ladder_threshold = None
    challenge.save()  # ranks the public test's boards again
    entries = board_store.entries(public)
    assert next((e.team, e.primary, e.laddered) for e in entries) == ("alpha", 0.5237, False)
    assert not any(RankedBoard.objects.get(split=public).released)


def test_other_splits_are_never_laddered(splits, public, make_entry, teams):
    make_entry(teams["alpha"], splits["validation"], 0.4237)
    (entry,) = board_store.entries(splits["validation"])
    assert (entry.primary, entry.laddered) == (0.4237, False)
    assert json.loads(entry.metrics_json)["accuracy"] == pytest.approx((1 + 0.4237) / 2 * 0.8)


def test_the_overall_board_counts_released_scores(client, challenge, public, runs, make_user):
    challenge = Challenge.objects.get(pk=challenge.pk)
    challenge.overall = {"method": "mean"}
    challenge.save()
    page = client.get(reverse("leaderboard:overall", args=[challenge.slug])).content.decode()
    assert not leaks(page, raw_texts(public))
    found = _api().get(reverse("api:challenge-overall", args=[challenge.slug])).json()
    assert not numbers_in(found) & raw_numbers()
    assert 0.5 in numbers_in(found) and 0.3 in numbers_in(found)


def test_organisers_read_the_raw_board_on_asking(client, public, runs, make_user):
    client.force_login(make_user("org", staff=True))
    published = client.get(_board_url(public)).content.decode()
    assert not leaks(published, raw_texts(public)) and "?raw=1" in published
    page = client.get(_board_url(public) + "?raw=1").content.decode()
    assert "Raw scores, organisers only" in page
    shown = public.task.declared().metric("truthfulness").shown
    assert leaks(page, [shown(0.5237), shown(BETA)])  # the task's entry rule: alpha's best
    exported = client.get(_board_url(public, "export-json") + "?raw=1").json()
    assert [e["primary"] for e in exported["entries"]] == [0.5237, BASE, BETA]
    assert not any(e["laddered"] for e in exported["entries"])
