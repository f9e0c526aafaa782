"""The leaderboard page's table and surroundings: sortable columns (checked against the board's
own columns), submission dates, the task / split switcher, the signed-in user's own team
highlighted without ever reaching another user through the cached fragment."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from leaderboard.models import Split, Task

BOARD_ARGS = ("crag-mm-2026", "multi-turn-qa", "public-test")


def url(name: str = "leaderboard", query: str = "", args: tuple = BOARD_ARGS) -> str:
    return reverse(f"leaderboard:{name}", args=args) + (f"?{query}" if query else "")


def page(client, query: str = "") -> str:
    response = client.get(url(query=query))
    assert response.status_code == 200, response.content[:300]
    return response.content.decode()


def methods(html: str) -> list[str]:
    table = html.split('<table id="leaderboard">')[1].split("</table>")[0]
    return re.findall(r'class="entry"[^>]*>([\w-]+)<', table)


def ranks(html: str) -> list[str]:
    table = html.split("<tbody>")[1].split("</tbody>")[0]
    return re.findall(r'<tr data-team="\d+">\s*<td>(\d+)</td>', table)


def header(html: str, label: str) -> tuple[str, str]:
    """The (aria-sort, href) of the column header labelled ``label``."""
    found = re.search(rf'<th[^>]*?(?: aria-sort="(\w+)")?><a href="([^"]*)"[^>]*>{label}</a>', html)
    assert found, f"no sortable header {label!r}"
    return found.group(1) or "", unescape(found.group(2))


@pytest.fixture
def three(teams, splits, make_entry):
    """alpha 0.4 (oldest), beta 0.2, gamma 0.1 (newest) on the public test."""
    public = splits["public-test"]
    return {
        "alpha": make_entry(teams["alpha"], public, 0.4, method="alpha-rag", age_days=3),
        "beta": make_entry(teams["beta"], public, 0.2, method="beta-agent", age_days=2),
        "gamma": make_entry(teams["gamma"], public, 0.1, method="gamma-agent", age_days=1),
    }


def test_a_column_sorts_best_first_then_reversed_and_the_ranks_stay(client, three):
    assert methods(page(client)) == ["alpha-rag", "beta-agent", "gamma-agent"]
    # missing: lower is better, so its first click lists the lowest first
    by_missing = page(client, "sort=missing")
    assert methods(by_missing) == ["gamma-agent", "beta-agent", "alpha-rag"]
    assert ranks(by_missing) == ["3", "2", "1"]  # the board's ranks, whatever the order
    assert header(by_missing, "Missing") == ("ascending", "?sort=missing&dir=desc")
    reversed_ = page(client, "sort=missing&dir=desc")
    assert methods(reversed_) == ["alpha-rag", "beta-agent", "gamma-agent"]
    assert header(reversed_, "Missing") == ("descending", "?sort=missing&dir=asc")
    # higher is better: best first
    assert methods(page(client, "sort=accuracy")) == ["alpha-rag", "beta-agent", "gamma-agent"]
    assert methods(page(client, "sort=truthfulness&dir=asc"))[0] == "gamma-agent"


def test_the_headers_link_to_each_order_and_back_to_the_ranks(client, three):
    html = page(client, "sort=accuracy&dir=asc")
    assert header(html, "#") == ("", "?")
    assert header(html, "Truthfulness")[1] == "?sort=truthfulness&dir=desc"
    assert header(html, "Hallucination")[1] == "?sort=hallucination_rate&dir=asc"
    assert header(html, "Submitted")[1] == "?sort=submitted&dir=desc"
    assert header(page(client), "#")[0] == "ascending"


def test_submission_dates_are_shown_and_sort_newest_first(client, three):
    html = page(client)
    day = (timezone.now() - timedelta(days=3)).strftime("%Y-%m-%d")
    assert re.search(rf'<time datetime="{day}T[^"]+">{day}</time>', html)
    assert methods(page(client, "sort=submitted")) == ["gamma-agent", "beta-agent", "alpha-rag"]
    assert methods(page(client, "sort=submitted&dir=asc"))[0] == "alpha-rag"


def test_empty_values_sort_last_either_way(client, teams, three, make_entry, splits):
    make_entry(teams["alpha"], splits["public-test"], None, method="alpha-unscored")
    for direction in ("asc", "desc"):
        assert methods(page(client, f"sort=accuracy&dir={direction}"))[-1] != "alpha-unscored"


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("sort=ego_truthfulness", "sort='ego_truthfulness': this leaderboard sorts by rank, "),
        ("sort=metrics", "sort='metrics'"),
        ("sort=accuracy&dir=up", "dir='up': expected asc or desc"),
        ("dir=asc", "dir= goes with sort=<column>"),
    ],
)
def test_an_unknown_order_is_refused_naming_the_choices(client, three, settings, query, says):
    settings.DEBUG = True  # the 404 page carries the message
    response = client.get(url(query=query))
    assert response.status_code == 404
    assert says in unescape(response.content.decode())


def test_each_order_is_cached_apart(client, three):
    first = methods(page(client, "sort=missing"))
    assert methods(page(client)) == ["alpha-rag", "beta-agent", "gamma-agent"]
    assert methods(page(client, "sort=missing")) == first == list(reversed(methods(page(client))))


def test_the_switcher_links_the_boards_a_user_may_see(client, make_user, challenge, three):
    other = Task.objects.create(
        challenge=challenge, task_id="single-source", name="Single", order=1
    )
    Split.objects.create(task=other, kind=Split.Kind.PUBLIC_TEST)
    html = page(client)
    nav = html.split('<nav id="boards"')[1].split("</nav>")[0]
    assert re.findall(r'href="([^"]+)"', nav) == [
        url(args=("crag-mm-2026", "multi-turn-qa", "validation")),
        url(),
        url(args=("crag-mm-2026", "single-source", "public-test")),
    ]
    assert 'class="current" aria-current="page">public test<' in nav
    assert "private test (results from " in nav  # named, not linked, before its reveal
    Split.objects.filter(kind="validation").update(visibility=Split.Visibility.HIDDEN)
    nav = page(client).split('<nav id="boards"')[1].split("</nav>")[0]
    assert "validation (not public)" in nav and "/validation/" not in nav
    organiser = make_user()
    challenge.organisers.add(organiser)
    client.force_login(organiser)
    nav = page(client).split('<nav id="boards"')[1].split("</nav>")[0]
    assert url(args=("crag-mm-2026", "multi-turn-qa", "private-test")) in nav
    slices = client.get(url("slices")).content.decode().split('<nav id="boards"')[1]
    assert url("slices", args=("crag-mm-2026", "single-source", "public-test")) in slices


def test_the_own_team_is_highlighted_and_never_reaches_another_user(
    client, make_user, teams, three
):
    alpha, beta = teams["alpha"], teams["beta"]
    client.force_login(make_user(team=alpha))
    mine = page(client)
    assert f'tr[data-team="{alpha.pk}"]' in mine and f'tr[data-team="{beta.pk}"]' not in mine
    assert f'<tr data-team="{alpha.pk}">' in mine  # the row the rule marks
    client.force_login(make_user(team=beta))
    with CaptureQueriesContext(connection) as captured:
        theirs = page(client)
    assert not any("leaderboard_headline" in q["sql"] for q in captured)  # the cached fragment
    assert f'tr[data-team="{beta.pk}"]' in theirs and f'tr[data-team="{alpha.pk}"]' not in theirs
    client.logout()
    assert "your team" not in page(client)


def test_the_slice_page_marks_rows_by_team_and_highlights_the_own(client, make_user, teams, three):
    client.force_login(make_user(team=teams["gamma"]))
    html = client.get(url("slices", "dimension=domain")).content.decode()
    assert f'tr[data-team="{teams["gamma"].pk}"]' in html
    assert f'<tr data-team="{teams["gamma"].pk}">' in html
