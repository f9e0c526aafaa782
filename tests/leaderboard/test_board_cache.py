"""The read path's cache and pagination: pages stay exact while they are served from memory."""

import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from leaderboard import board_store
from leaderboard.models import EvaluationRun, Split, Team
from leaderboard.scores import store_scores
from leaderboard.views.boards import ENTRIES_PER_PAGE

from .factories import scores_dict

BOARD_ARGS = ("crag-mm-2026", "multi-turn-qa", "public-test")


def url(name, **query):
    path = reverse(f"leaderboard:{name}", args=BOARD_ARGS)
    return path + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def methods(client, name="leaderboard", **query):
    response = client.get(url(name, **query))
    assert response.status_code == 200
    body = response.content.decode().split("<tbody>")[1]
    return re.findall(r'class="entry"[^>]*>([\w-]+)<', body)


@pytest.fixture
def public(splits):
    return splits["public-test"]


@pytest.fixture
def two(teams, public, make_entry):
    return {
        "alpha": make_entry(teams["alpha"], public, 0.4, method="alpha-rag"),
        "beta": make_entry(teams["beta"], public, 0.2, method="beta-agent"),
    }


def queries(client, path):
    with CaptureQueriesContext(connection) as captured:
        assert client.get(path).status_code == 200
    return [q["sql"] for q in captured]


def test_a_second_view_reads_no_scores(client, two):
    first = queries(client, url("leaderboard"))
    second = queries(client, url("leaderboard"))
    assert any("leaderboard_headline" in q for q in first)
    assert not any("leaderboard_headline" in q for q in second)
    assert not any("leaderboard_headline" in q for q in queries(client, url("leaderboard")))


def test_stored_scores_show_at_once(client, teams, public, two):
    assert methods(client) == ["alpha-rag", "beta-agent"]
    store_scores(two["beta"], scores_dict(0.9))
    assert methods(client) == ["beta-agent", "alpha-rag"]
    assert methods(client, "slices", dimension="domain")[0] == "beta-agent"


def test_every_change_a_page_shows_renders_it_afresh(client, teams, public, two, make_entry):
    assert methods(client) == ["alpha-rag", "beta-agent"]
    submission = two["alpha"].submission
    submission.method_name = "alpha-renamed"
    submission.save()
    assert methods(client) == ["alpha-renamed", "beta-agent"]
    team = Team.objects.get(pk=teams["beta"].pk)
    team.name = "beta-renamed"
    team.save()
    assert "beta-renamed" in client.get(url("leaderboard")).content.decode()
    run = two["alpha"]
    run.move_to(EvaluationRun.State.SCORING)  # re-scoring: off the board until done again
    assert methods(client) == ["beta-agent"]
    run.move_to(EvaluationRun.State.DONE)
    assert methods(client) == ["alpha-renamed", "beta-agent"]
    make_entry(teams["beta"], public, 0.1, method="beta-newest")
    assert methods(client) == ["alpha-renamed", "beta-agent"]
    task = public.task
    task.entry_rule = "latest"
    task.save()
    assert methods(client) == ["alpha-renamed", "beta-newest"]
    two["alpha"].delete()
    assert methods(client) == ["beta-newest"]


def test_visibility_is_checked_before_anything_cached(client, make_user, teams, splits, make_entry):
    private = splits["private-test"]
    make_entry(teams["alpha"], private, 0.3, method="secret-agent")
    client.force_login(make_user("org", staff=True))
    path = reverse("leaderboard:leaderboard", args=(*BOARD_ARGS[:2], "private-test"))
    assert "secret-agent" in client.get(path).content.decode()
    client.logout()
    assert client.get(path).status_code == 403
    assert client.get(path.replace("/private-test/", "/private-test/slices/")).status_code == 403


def test_pages_list_a_hundred_entries_and_exports_list_all(client, public, make_entry):
    total = ENTRIES_PER_PAGE + 7
    for i in range(total):
        make_entry(Team.objects.create(name=f"crowd{i:03d}"), public, i / 1000, method=f"m{i:03d}")
    first, second = methods(client), methods(client, page=2)
    assert len(first) == ENTRIES_PER_PAGE and len(second) == 7
    assert first[0] == f"m{total - 1:03d}" and second[-1] == "m000"
    page = client.get(url("leaderboard", page=2)).content.decode()
    assert f"{total} entries · page 2 of 2" in page and 'rel="prev" href="?page=1"' in page
    slices = client.get(url("slices", dimension="domain", metric="accuracy", page=2))
    assert len(re.findall(r'<tr data-team="\d+">\s*<td>\d+</td>', slices.content.decode())) == 7
    assert "?dimension=domain&amp;metric=accuracy&amp;page=1" in slices.content.decode()
    assert len(json.loads(client.get(url("export-json")).content)["entries"]) == total


@pytest.mark.parametrize(
    ("name", "query"),
    [
        ("leaderboard", {"page": "3"}),
        ("leaderboard", {"page": "0"}),
        ("leaderboard", {"page": "two"}),
        ("slices", {"dimension": "domain", "page": "9"}),
        ("slices", {"dimension": "nope"}),
    ],
)
def test_bad_pages_and_dimensions_are_not_found_cached_or_not(client, two, name, query):
    assert client.get(url(name)).status_code == 200
    for _ in range(2):
        response = client.get(url(name, **query))
        assert response.status_code == 404


def test_entries_carry_the_stored_headline_numbers(two, public):
    first, second = board_store.entries(Split.objects.select_related("task").get(pk=public.pk))
    assert first.record()["metrics"]["truthfulness"] == pytest.approx(0.4)
    assert first.record()["primary_ci95"] == pytest.approx([0.3, 0.5])
    assert (first.team, first.method_name, first.rank, first.run_id) == (
        "alpha",
        "alpha-rag",
        1,
        two["alpha"].pk,
    )
    assert second.rank == 2 and second.complete and second.judge_id == "rules@1"


def test_responses_say_how_long_the_server_took(client, two):
    timing = client.get(url("leaderboard"))["Server-Timing"]
    assert re.fullmatch(r"app;dur=\d+\.\d\d", timing)


def test_a_board_page_finds_its_split_with_its_challenge_in_one_query(client, two):
    sql = queries(client, url("leaderboard"))
    assert any('FROM "leaderboard_split"' in q and "leaderboard_challenge" in q for q in sql)
    assert not any(q.startswith('SELECT "leaderboard_challenge"') for q in sql)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("no-such-challenge", "multi-turn-qa", "public-test"), "No Challenge matches"),
        (
            ("crag-mm-2026", "no-such-task", "public-test"),
            "crag-mm-2026 has no split no-such-task/public-test",
        ),
        (
            ("crag-mm-2026", "multi-turn-qa", "no-such-kind"),
            "crag-mm-2026 has no split multi-turn-qa/no-such-kind",
        ),
    ],
)
def test_an_unknown_board_says_whether_its_challenge_or_its_split_is_unknown(
    client, two, settings, args, says
):
    settings.DEBUG = True  # the 404 page carries the message
    response = client.get(reverse("leaderboard:leaderboard", args=args))
    assert response.status_code == 404
    assert says in response.content.decode()


def test_a_board_of_an_unpublished_challenge_is_unknown_to_visitors(client, two, public):
    public.task.challenge.is_published = False
    public.task.challenge.save()
    assert client.get(url("leaderboard")).status_code == 404
