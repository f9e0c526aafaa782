"""Submitting and setting flags through the REST API (token auth), and who may see what."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from leaderboard import api_tokens
from leaderboard.models import Challenge, Submission, Task

from .submit_support import build_context, open_splits

__all__ = ["open_splits"]  # fixtures used by name

LIST = reverse("api:submission-list")


@pytest.fixture
def member(make_user, teams):
    return make_user("ann", team=teams["alpha"])


def _api(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_tokens.create(user, 'tests')[1]}")
    return api


def _body(**fields):
    return {"challenge": "crag-mm-2026", "method_name": "RAG v1", **fields}


def test_a_reference_submitted_by_token_comes_back_with_its_runs(open_splits, member):
    response = _api(member).post(
        LIST, _body(artifact_kind="registry-ref", registry_ref="ghcr.io/a/b:1"), format="json"
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["team"], body["registry_ref"], body["state"]) == (
        "alpha",
        "ghcr.io/a/b:1",
        "received",
    )
    assert sorted(r["split_kind"] for r in body["runs"]) == [
        "private-test",
        "public-test",
        "validation",
    ]
    status = _api(member).get(reverse("api:submission-detail", args=[body["id"]])).json()
    assert [r["state"] for r in status["runs"]] == ["queued"] * 3


def test_a_multipart_upload_goes_through_the_same_checks(
    open_splits, member, tmp_path, each_storage
):
    api = _api(member)
    context = build_context(tmp_path / "ctx.tar.gz", compression="gz")
    with context.open("rb") as upload:
        response = api.post(
            LIST, _body(artifact_kind="build-context", artifact=upload), format="multipart"
        )
    assert response.status_code == 201, response.json()
    assert Submission.objects.get().artifact.name.endswith(".tar.gz")
    bad = tmp_path / "ctx.tar"
    bad.write_bytes(b"not a tar")
    with bad.open("rb") as upload:
        response = api.post(
            LIST, _body(artifact_kind="build-context", artifact=upload), format="multipart"
        )
    assert response.status_code == 400
    assert response.json()["artifact"][0].startswith("ctx.tar: not a tar archive (")


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"artifact_kind": "registry-ref"}, {"registry_ref"}),
        ({"artifact_kind": "image-archive"}, {"artifact"}),
        ({"artifact_kind": "registry-ref", "registry_ref": "a", "code_url": "nope"}, {"code_url"}),
        ({"artifact_kind": "registry-ref", "registry_ref": "a", "challenge": "x"}, {"challenge"}),
        ({"artifact_kind": "docker"}, {"artifact_kind"}),
    ],
)
def test_bad_requests_name_their_field(open_splits, member, fields, expected):
    response = _api(member).post(LIST, _body(**fields), format="json")
    assert response.status_code == 400 and set(response.json()) == expected


def test_team_must_be_named_when_in_several_and_be_ones_own(open_splits, member, teams):
    teams["beta"].memberships.create(user=member)
    ref = _body(artifact_kind="registry-ref", registry_ref="a")
    response = _api(member).post(LIST, ref, format="json")
    assert response.json() == {"team": ["you are in several teams; name one"]}
    response = _api(member).post(LIST, {**ref, "team": "gamma"}, format="json")
    assert response.status_code == 403
    assert response.json()["detail"] == "you are not a member of team gamma"
    assert _api(member).post(LIST, {**ref, "team": "beta"}, format="json").status_code == 201


def test_an_exhausted_quota_answers_429(open_splits, member):
    Task.objects.update(quota_total=0)
    ref = _body(artifact_kind="registry-ref", registry_ref="a")
    response = _api(member).post(LIST, ref, format="json")
    assert response.status_code == 429 and "all 0 submissions" in response.json()["detail"]


def test_anonymous_users_cannot_submit(open_splits):
    ref = _body(artifact_kind="registry-ref", registry_ref="a")
    assert APIClient().post(LIST, ref, format="json").status_code in (401, 403)
    assert not Submission.objects.exists()


def test_baseline_flag_is_for_organisers_and_final_choice_for_the_team(
    open_splits, member, make_user, teams
):
    ref = _body(artifact_kind="registry-ref", registry_ref="a")
    participant = _api(member)
    assert participant.post(LIST, {**ref, "is_baseline": True}, format="json").status_code == 403
    first = participant.post(LIST, ref, format="json").json()["id"]
    Task.objects.update(quota_concurrent=None)
    second = participant.post(LIST, ref, format="json").json()["id"]
    detail = reverse("api:submission-detail", args=[first])
    assert participant.patch(detail, {"is_baseline": True}, format="json").status_code == 403
    assert participant.patch(detail, {"chosen_for_final": True}, format="json").status_code == 200
    second_detail = reverse("api:submission-detail", args=[second])
    assert participant.patch(second_detail, {"chosen_for_final": True}, format="json").json()[
        "chosen_for_final"
    ]
    assert list(Submission.objects.filter(chosen_for_final=True).values_list("pk", flat=True)) == [
        second
    ]
    organiser = make_user("olga")
    Challenge.objects.get().organisers.add(organiser)
    response = _api(organiser).patch(detail, {"is_baseline": True}, format="json")
    assert response.status_code == 200 and response.json()["is_baseline"] is True
    assert participant.put(detail, {"is_baseline": False}, format="json").status_code == 405


def test_another_teams_submission_is_not_found(open_splits, member, make_user, teams):
    ref = _body(artifact_kind="registry-ref", registry_ref="a")
    mine = _api(member).post(LIST, ref, format="json").json()["id"]
    other = _api(make_user("bob", team=teams["beta"]))
    detail = reverse("api:submission-detail", args=[mine])
    assert other.get(detail).status_code == 404
    assert other.patch(detail, {"chosen_for_final": True}, format="json").status_code == 404
    assert other.get(LIST).json()["results"] == []


def test_the_schema_documents_submitting(client):
    schema = client.get(reverse("api:schema"), HTTP_ACCEPT="application/json").json()
    create = schema["paths"]["/api/submissions/"]["post"]
    assert {"multipart/form-data", "application/json"} <= set(create["requestBody"]["content"])
    assert {"201", "400", "403", "429"} <= set(create["responses"])
    fields = schema["components"]["schemas"]["SubmissionCreate"]["properties"]
    assert {"challenge", "artifact_kind", "artifact", "registry_ref", "method_name"} <= set(fields)
    assert "patch" in schema["paths"]["/api/submissions/{id}/"]
