"""One entry's page: its score on every slice with intervals, one chart per dimension, reached
from the board; only entries of a board the user may see."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.urls import reverse

from leaderboard.models import Team

from .factories import block

BOARD = ("crag-mm-2026", "multi-turn-qa")


def entry_url(run, kind: str = "public-test", query: str = "") -> str:
    path = reverse("leaderboard:entry", args=(*BOARD, kind, run.pk))
    return path + (f"?{query}" if query else "")


@pytest.fixture
def entries(teams, splits, make_entry):
    slices = {
        "domain": {"food": block(0.5, turns=12), "vehicle": block(-0.25, turns=8)},
        "turn_idx": {"0": block(0.5), "1": block(0.1), "10": block(0.2)},
    }
    public = splits["public-test"]
    return {
        "alpha": make_entry(teams["alpha"], public, 0.4, method="alpha-rag", slices=slices),
        "alpha-old": make_entry(teams["alpha"], public, 0.1, method="alpha-old", age_days=2),
        "beta": make_entry(teams["beta"], public, 0.2, method="beta-agent"),
        "private": make_entry(teams["alpha"], splits["private-test"], 0.3, method="alpha-priv"),
    }


def test_the_board_links_each_entry_to_its_page(client, entries):
    board = client.get(reverse("leaderboard:leaderboard", args=(*BOARD, "public-test")))
    links = re.findall(r'<a class="entry" href="([^"]+)"', board.content.decode())
    assert links == [entry_url(entries["alpha"]), entry_url(entries["beta"])]
    slices = client.get(
        reverse("leaderboard:slices", args=(*BOARD, "public-test")) + "?dimension=domain"
    ).content.decode()
    assert unescape(entry_url(entries["alpha"], query="dimension=domain&metric=truthfulness")) in (
        unescape(slices)
    )


def test_a_chart_per_dimension_with_each_slice_and_its_interval(client, entries):
    html = client.get(entry_url(entries["alpha"])).content.decode()
    assert "alpha-rag" in html and "rank 1" in html
    sections = re.findall(r'<section class="entry-slices" id="slices-([\w-]+)">', html)
    assert sections == ["domain", "turn_idx"]
    domain = html.split('id="slices-domain"')[1].split("</section>")[0]
    assert domain.count('<rect class="s0"') == 2 + 1  # two bars, one legend swatch
    assert domain.count('<line class="ci"') == 2
    assert "food" in domain and "vehicle" in domain
    # block(0.5): truthfulness 50.0 with its interval [40.0, 60.0]; n = the slice's items
    food = re.search(r"<tr><td>food</td>(.*?)</tr>", domain).group(1)
    assert re.findall(r'<td class="num">([^<]+)</td>', food) == ["50.0", "[40.0, 60.0]", "12"]
    turns = html.split('id="slices-turn_idx"')[1].split("</section>")[0]
    assert re.findall(r"<tr><td>(\d+)</td>", turns) == ["0", "1", "10"]  # numeric order
    assert "-25.0" in domain  # a negative slice, drawn on the signed axis


def test_the_metric_is_chosen_and_an_unknown_one_refused(client, entries, settings):
    html = client.get(entry_url(entries["alpha"], query="metric=accuracy")).content.decode()
    assert "Accuracy by domain" in html
    settings.DEBUG = True
    refused = client.get(entry_url(entries["alpha"], query="metric=secret"))
    assert refused.status_code == 404
    assert "unknown metric 'secret': this board has truthfulness" in unescape(
        refused.content.decode()
    )


def test_only_entries_of_the_board_have_a_page(client, entries, settings):
    settings.DEBUG = True
    # the team's older submission is not its entry; a private run is not on this board
    for run in (entries["alpha-old"], entries["private"]):
        response = client.get(entry_url(run))
        assert response.status_code == 404
        assert "is not an entry of this leaderboard" in response.content.decode()


def test_who_sees_an_entry_page(client, make_user, challenge, teams, entries):
    public, private = entry_url(entries["alpha"]), entry_url(entries["private"], "private-test")
    organiser = make_user()
    challenge.organisers.add(organiser)
    viewers = {
        "anonymous": None,
        "other team": make_user(team=teams["beta"]),
        "own team": make_user(team=teams["alpha"]),
        "organiser": organiser,
    }
    for name, user in viewers.items():
        client.logout()
        if user is not None:
            client.force_login(user)
        assert client.get(public).status_code == 200, name
        # a private board before its reveal: its organisers only, not even the entry's team
        expected = 200 if name == "organiser" else 403
        assert client.get(private).status_code == expected, name
        assert "alpha-priv" not in client.get(private).content.decode() or expected == 200


def test_an_unpublished_challenge_hides_its_entries(client, challenge, entries):
    challenge.is_published = False
    challenge.save()
    assert client.get(entry_url(entries["alpha"])).status_code == 404
    assert Team.objects.filter(name="alpha").exists()
