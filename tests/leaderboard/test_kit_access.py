"""Who may download the starter kit and the base image: pages and API alike."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from leaderboard import api_tokens, pages

from .kit_support import kit_challenge, kit_settings

__all__ = ["kit_challenge", "kit_settings"]  # fixtures used by name

SLUG = "crag-mm-2026"
PAGES = ("leaderboard:kit", "leaderboard:kit-download", "leaderboard:kit-base-image")
API = ("api:kit", "api:kit-download")


@pytest.fixture
def users(make_user, teams, kit_challenge):
    organiser = make_user("olga")
    kit_challenge.organisers.add(organiser)
    return {
        "own team": make_user("ann", team=teams["alpha"]),
        "other team": make_user("bob", team=teams["beta"]),
        "no team": make_user("cid"),
        "organiser": organiser,
    }


def _api(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {api_tokens.create(user, 'tests')[1]}")
    return client


@pytest.mark.parametrize("name", PAGES)
def test_anonymous_visitors_are_sent_to_sign_in(client, kit_challenge, name):
    response = client.get(reverse(name, args=[SLUG]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("account_login") + "?next=/c/crag-mm-2026/kit/")


@pytest.mark.parametrize("name", API)
def test_the_api_wants_credentials(kit_challenge, name):
    assert _api().get(reverse(name, args=[SLUG])).status_code == 401


@pytest.mark.parametrize("who", ["own team", "other team", "no team", "organiser"])
def test_every_signed_in_user_gets_the_kit_of_a_published_challenge(client, users, who):
    client.force_login(users[who])
    assert client.get(reverse("leaderboard:kit", args=[SLUG])).status_code == 200
    response = client.get(reverse("leaderboard:kit-download", args=[SLUG]))
    assert response.status_code == 200 and response["X-Content-SHA256"]
    body = _api(users[who]).get(reverse("api:kit", args=[SLUG])).json()
    assert body["sha256"] == response["X-Content-SHA256"]
    assert [s["kind"] for s in body["splits"]] == ["validation", "public-test"]
    assert body["withheld"] == [
        {"task_id": "multi-turn-qa", "kind": "private-test", "why": "a private test is never in "
         "the kit"}
    ]  # fmt: skip


@pytest.mark.parametrize("who", ["own team", "no team"])
def test_a_draft_challenge_is_its_organisers_only(client, users, kit_challenge, who):
    kit_challenge.is_published = False
    kit_challenge.save()
    client.force_login(users[who])
    for name in PAGES:
        assert client.get(reverse(name, args=[SLUG])).status_code == 404, name
    for name in (*API, "api:kit-base-image"):
        assert _api(users[who]).get(reverse(name, args=[SLUG])).status_code == 404, name
    client.force_login(users["organiser"])
    assert client.get(reverse("leaderboard:kit-download", args=[SLUG])).status_code == 200
    assert _api(users["organiser"]).get(reverse("api:kit", args=[SLUG])).status_code == 200


def test_the_rules_are_accepted_first_and_again_when_they_change(client, users, kit_challenge):
    kit_challenge.rules = "Play fair."
    kit_challenge.save()
    participant = users["own team"]
    client.force_login(participant)
    for name in PAGES:
        response = client.get(reverse(name, args=[SLUG]), follow=True)
        assert response.redirect_chain[-1][0] == "/c/crag-mm-2026/?tab=rules", name
        assert "Accept the rules of CRAG-MM 2026 to download its starter kit" in (
            response.content.decode()
        )
    api = _api(participant)
    refused = api.get(reverse("api:kit-download", args=[SLUG]))
    assert refused.status_code == 403
    assert refused.json()["detail"].startswith("accept the rules of CRAG-MM 2026 to download")
    pages.accept_rules(participant, kit_challenge)
    assert client.get(reverse("leaderboard:kit-download", args=[SLUG])).status_code == 200
    assert api.get(reverse("api:kit", args=[SLUG])).status_code == 200
    kit_challenge.rules = "Play fair. No hand labelling."
    kit_challenge.save()
    refused = api.get(reverse("api:kit", args=[SLUG]))
    assert (
        refused.status_code == 403
        and "they changed since you last accepted them" in (refused.json()["detail"])
    )
    client.force_login(users["organiser"])  # organisers need not accept
    assert client.get(reverse("leaderboard:kit-download", args=[SLUG])).status_code == 200


def test_no_docker_engine_is_a_clear_message(client, users, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    client.force_login(users["own team"])
    response = client.get(reverse("leaderboard:kit-base-image", args=[SLUG]))
    assert response.status_code == 503
    assert "no Docker engine answers on Podium&#x27;s web server" in response.content.decode()
    assert "nonexistent" not in response.content.decode(), "the engine's own words stay in logs"
    api = _api(users["own team"]).get(reverse("api:kit-base-image", args=[SLUG]))
    assert api.status_code == 503 and "no Docker engine answers" in api.json()["detail"]
    page = client.get(reverse("leaderboard:kit", args=[SLUG])).content.decode()
    assert "podium/agent-base:py3.11" in page and "saved on the first download" not in page
    assert "Cannot be downloaded now: no Docker engine answers" in page, "no link to a 503"


def test_only_an_allowed_base_image_is_saved(client, users):
    client.force_login(users["own team"])
    url = reverse("leaderboard:kit-base-image", args=[SLUG]) + "?image=postgres:16"
    response = client.get(url)
    assert response.status_code == 400 and "is not a base image here" in response.content.decode()
    api = _api(users["own team"]).get(reverse("api:kit-base-image", args=[SLUG]), {"image": "x"})
    assert api.status_code == 400 and "'x' is not a base image here" in api.json()["image"][0]
