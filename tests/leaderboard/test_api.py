from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard import api_tokens


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture
def board(teams, splits, make_entry):
    return {
        "alpha": make_entry(teams["alpha"], splits["public-test"], 0.4, method="alpha-m"),
        "beta": make_entry(teams["beta"], splits["public-test"], 0.1, method="beta-m"),
        "private": make_entry(teams["alpha"], splits["private-test"], 0.2, method="alpha-m"),
    }


def test_token_auth_gives_the_own_runs_with_progress(api, board, make_user, teams):
    user = make_user(team=teams["alpha"])
    assert api.get(reverse("api:run-list")).status_code in (401, 403)
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_tokens.create(user, 'tests')[1]}")
    runs = api.get(reverse("api:run-list")).json()["results"]
    assert {r["id"] for r in runs} == {board["alpha"].pk, board["private"].pk}
    assert {"state", "items_done", "items_total", "progress", "failure_reason"} <= set(runs[0])
    api.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert api.get(reverse("api:run-list")).status_code == 401


def test_anonymous_reads_challenges_tasks_and_public_leaderboards(api, board, splits):
    challenges = api.get(reverse("api:challenge-list")).json()["results"]
    assert [c["slug"] for c in challenges] == ["crag-mm-2026"]
    tasks = api.get(reverse("api:task-list"), {"challenge": "crag-mm-2026"}).json()["results"]
    assert tasks[0]["task_id"] == "multi-turn-qa" and tasks[0]["judge"] == "rules"
    public = splits["public-test"]
    body = api.get(reverse("api:split-leaderboard", args=[public.pk])).json()
    assert [e["method_name"] for e in body["entries"]] == ["alpha-m", "beta-m"]
    assert body["entries"][0]["primary_ci95"] == pytest.approx([0.3, 0.5])
    assert body["split"]["kind"] == "public-test" and body["split"]["revealed"] is True


def test_private_leaderboard_refused_until_the_reveal(api, board, splits, make_user):
    private = splits["private-test"]
    path = reverse("api:split-leaderboard", args=[private.pk])
    assert api.get(path).status_code == 403
    api.force_authenticate(make_user(staff=True))
    assert len(api.get(path).json()["entries"]) == 1
    api.force_authenticate(None)
    private.reveal_at = timezone.now() - timedelta(minutes=1)
    private.save()
    assert api.get(path).json()["entries"][0]["run_id"] == board["private"].pk


def test_openapi_schema_and_docs_without_external_assets(api):
    schema = api.get(reverse("api:schema"), HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    document = schema.json()
    assert document["openapi"].startswith("3.")
    for path in ("/api/challenges/", "/api/splits/{id}/leaderboard/", "/api/runs/{id}/"):
        assert path in document["paths"], path
    assert "tokenAuth" in document["components"]["securitySchemes"]
    docs = api.get(reverse("api:docs")).content.decode()
    assert "swagger-ui" in docs and "cdn.jsdelivr" not in docs and "unpkg" not in docs
