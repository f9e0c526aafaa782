"""Labelling a challenge's judge audits and taking part in it exclude each other, for the
challenge's lifetime, in both directions (issue #32, part 3): nobody taking part is made a
labeller, and nobody ever made one takes part, nor does a team they are in. Each path is
driven through its page or the API, asserting the reason shown and that nothing was made."""

from __future__ import annotations

import re
import threading
import time

import pytest
from django.core import mail
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from leaderboard import api_tokens, audits
from leaderboard.models import (
    AuditItem,
    ChallengeLabeller,
    Invitation,
    JudgeAudit,
    Membership,
    Submission,
    TermsAcceptance,
)
from leaderboard.submitting import Artifact, MethodInfo, submit

from .submit_support import broker, open_splits

__all__ = ["broker", "open_splits"]  # fixtures used by name

LABELS = "the judge audits of CRAG-MM 2026"  # what every refusal of a labeller names
SUBMIT = reverse("leaderboard:submit", args=["crag-mm-2026"])


@pytest.fixture
def audit(open_splits, challenge, make_user) -> JudgeAudit:
    """An open audit of the private test, one item with its gold answer; ``org`` organises."""
    organiser = make_user("org")
    challenge.organisers.add(organiser)
    audit = JudgeAudit.objects.create(
        split=open_splits["private-test"], judge_id="rules@1", menu=["correct", "missing"], size=1
    )
    AuditItem.objects.create(
        audit=audit, position=0, item_key="i0", judge_verdict="correct",
        question="What is the hidden question?", truth=["the gold answer"], response="x",
    )  # fmt: skip
    return audit


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def api_as(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_tokens.create(user, 'tests')[1]}")
    return api


def invite_labeller(audit: JudgeAudit, who: str) -> str:
    """The organiser invites ``who`` on the audit's page; the page they come back to."""
    organiser = audit.split.task.challenge.organisers.get()
    url = reverse("leaderboard:audit-action", args=[audit.pk, "invite"])
    return signed_in(organiser).post(url, {"who": who}, follow=True).content.decode()


def enter(team, challenge, by=None) -> Submission:
    """``team`` takes part in ``challenge``: a submission of it is stored."""
    return Submission.objects.create(
        team=team, challenge=challenge, submitted_by=by, artifact_kind="registry-ref",
        registry_ref="a/b:1", method_name="m",
    )  # fmt: skip


def form(team) -> dict:
    return {"team": team.pk, "artifact_kind": "registry-ref", "registry_ref": "ghcr.io/a/b:1",
            "method_name": "m", "tasks": ["multi-turn-qa"]}  # fmt: skip


def test_a_labeller_whose_team_had_not_submitted_reads_the_gold_then_cannot_submit(
    audit, make_user, teams
):
    """The issue's attack: invited while her team had not submitted, she reads the private
    split's gold answers, then her team submits; by the API and by the form it is refused."""
    lena = make_user("lena", team=teams["alpha"])
    assert "lena may label this audit" in invite_labeller(audit, "lena")
    page = signed_in(lena).get(reverse("leaderboard:label", args=[audit.pk])).content.decode()
    assert "the gold answer" in page
    body = {"challenge": "crag-mm-2026", "method_name": "m", "artifact_kind": "registry-ref",
            "registry_ref": "ghcr.io/a/b:1"}  # fmt: skip
    response = api_as(lena).post(reverse("api:submission-list"), body, format="json")
    assert response.status_code == 400
    assert f"you label {LABELS}" in response.json()["non_field_errors"][0]
    preflight = api_as(lena).get("/api/challenges/crag-mm-2026/quota/")
    assert f"you label {LABELS}" in str(preflight.json())
    shown = signed_in(lena).get(SUBMIT).content.decode()
    assert f"You cannot submit to CRAG-MM 2026: you label {LABELS}" in shown
    refused = signed_in(lena).post(SUBMIT, form(teams["alpha"]))
    assert refused.status_code == 400
    assert f"you label {LABELS}" in refused.content.decode()
    assert not Submission.objects.exists()


def test_a_team_with_a_labeller_in_it_cannot_submit(audit, make_user, teams):
    """Her teammate submitting instead is refused too, naming her, by the form and the API."""
    make_user("lena", team=teams["alpha"])
    ann = make_user("ann", team=teams["alpha"])
    invite_labeller(audit, "lena")
    refused = signed_in(ann).post(SUBMIT, form(teams["alpha"]))
    assert refused.status_code == 400
    assert f"lena labels {LABELS}" in refused.content.decode()
    body = {"challenge": "crag-mm-2026", "team": "alpha", "method_name": "m",
            "artifact_kind": "registry-ref", "registry_ref": "ghcr.io/a/b:1"}  # fmt: skip
    response = api_as(ann).post(reverse("api:submission-list"), body, format="json")
    assert response.status_code == 400
    assert f"lena labels {LABELS}" in response.json()["non_field_errors"][0]
    assert not Submission.objects.exists()
    # a team without her still submits
    bob = make_user("bob", team=teams["beta"])
    assert signed_in(bob).post(SUBMIT, form(teams["beta"])).status_code == 302
    assert Submission.objects.get().team == teams["beta"]


@pytest.fixture
def beta_takes_part(make_user, teams, challenge):
    """Team beta, captained by cap, has submitted to the challenge."""
    cap = make_user("cap", team=teams["beta"])
    Membership.objects.filter(user=cap).update(role="owner")
    enter(teams["beta"], challenge, by=cap)
    return cap


def test_a_captain_cannot_invite_a_labeller_into_a_team_that_takes_part(
    audit, make_user, teams, beta_takes_part
):
    make_user("lena")
    invite_labeller(audit, "lena")
    mail.outbox.clear()
    invite = reverse("leaderboard:team-action", args=[teams["beta"].pk, "invite"])
    shown = signed_in(beta_takes_part).post(invite, {"email": "Lena@example.org"}, follow=True)
    assert f"lena@example.org cannot join beta: lena labels {LABELS}" in shown.content.decode()
    assert not Invitation.objects.exists() and not mail.outbox


def test_a_labeller_cannot_accept_an_invitation_to_a_team_that_takes_part(
    audit, make_user, teams, beta_takes_part
):
    """Mailed before she was made a labeller, the invitation no longer lets her in."""
    lena = make_user("lena")
    early = Invitation.objects.create(team=teams["beta"], email="lena@example.org")
    invite_labeller(audit, "lena")
    accept = reverse("leaderboard:invitation", args=[early.token])
    refused = signed_in(lena).post(accept, follow=True).content.decode()
    assert f"you label {LABELS}" in refused
    assert not Membership.objects.filter(user=lena).exists()
    early.refresh_from_db()
    assert early.accepted_at is None


def test_a_labeller_cannot_accept_the_rules(audit, make_user, challenge):
    challenge.rules = "Play fair."
    challenge.save(update_fields=["rules"])
    lena = make_user("lena")
    invite_labeller(audit, "lena")
    url = reverse("leaderboard:challenge", args=["crag-mm-2026"]) + "?tab=rules"
    page = signed_in(lena).get(url).content.decode()
    assert f"You cannot accept these rules: you label {LABELS}" in page
    assert "I accept these rules" not in page
    refused = signed_in(lena).post(url, follow=True).content.decode()
    assert f"you label {LABELS}" in refused
    assert not TermsAcceptance.objects.exists()


def test_being_a_labeller_outlives_the_audit(audit, make_user, teams, challenge):
    """The audit deleted (or its labellers changed), she still takes no part: she read it."""
    lena = make_user("lena", team=teams["alpha"])
    invite_labeller(audit, "lena")
    record = ChallengeLabeller.objects.get()
    assert (record.user, record.challenge, record.invited_by.username) == (lena, challenge, "org")
    audit.delete()
    refused = signed_in(lena).post(SUBMIT, form(teams["alpha"]))
    assert f"you label {LABELS}" in refused.content.decode()
    assert not Submission.objects.exists()


@pytest.mark.parametrize("way", ["member", "former member", "rules"])
def test_nobody_taking_part_can_be_invited_and_the_organiser_sees_who_and_why(
    audit, make_user, teams, challenge, way
):
    """In a team that submitted, having submitted (for a team left since), or having accepted
    the rules: the invitation is refused naming why, and the audit's page lists them."""
    bob = make_user("bob", team=teams["beta"])
    enter(teams["beta"], challenge, by=bob)
    why = f"bob is in team beta, which takes part in {challenge.name}"
    if way == "former member":
        Membership.objects.filter(user=bob).delete()
        why = f"bob submitted to {challenge.name} for team beta"
    elif way == "rules":
        Membership.objects.filter(user=bob).delete()
        Submission.objects.update(submitted_by=None)
        TermsAcceptance.objects.create(user=bob, challenge=challenge, rules_sha256="0" * 64)
        why = f"bob accepted the rules of {challenge.name}"
    shown = invite_labeller(audit, "bob@example.org")
    assert f"{why}: a labeller reads its private split" in shown.replace("&#x27;", "'")
    assert not audit.labellers.exists() and not ChallengeLabeller.objects.exists()
    listed = re.search(r'<details id="not-invitable">.*?</details>', shown, re.S)[0]
    assert "1 taking part" in listed and f"<li>{why}</li>" in listed


def test_someone_who_took_part_cannot_label_even_when_listed(audit, make_user, teams, challenge):
    """Listed on the audit by any means, a participant gets no labelling page nor image."""
    cid = make_user("cid", team=teams["gamma"])
    enter(teams["gamma"], challenge, by=cid)
    Membership.objects.filter(user=cid).delete()  # left the team after submitting
    audit.labellers.add(cid)
    assert signed_in(cid).get(reverse("leaderboard:label", args=[audit.pk])).status_code == 404


@pytest.mark.django_db(transaction=True)
def test_an_invitation_and_a_submission_at_the_same_moment_do_not_both_pass(
    audit, make_user, teams, challenge, broker
):
    """Her team's submission checks while her invitation is being made: it waits for the
    invitation to commit, then sees her as a labeller and is refused."""
    lena = make_user("lena", team=teams["alpha"])
    organiser = challenge.organisers.get()
    holding, release = threading.Event(), threading.Event()
    outcome: list[str] = []

    def invite() -> None:
        try:
            with transaction.atomic():
                audits.invite(audit, organiser, "lena")
                holding.set()
                release.wait(10)
        finally:
            connection.close()

    def submit_for_alpha() -> None:
        try:
            artifact = Artifact(kind="registry-ref", registry_ref="ghcr.io/a/b:1")
            submit(teams["alpha"], challenge, lena, artifact, MethodInfo(method_name="m"))
            outcome.append("submitted")
        except ValidationError as exc:
            outcome.append(" ".join(exc.messages))
        finally:
            connection.close()

    one = threading.Thread(target=invite)
    one.start()
    assert holding.wait(10)
    two = threading.Thread(target=submit_for_alpha)
    two.start()
    time.sleep(1)  # the submission waits on her row
    release.set()
    one.join(10)
    two.join(10)
    assert len(outcome) == 1 and f"you label {LABELS}" in outcome[0]
    assert not Submission.objects.exists()
    assert ChallengeLabeller.objects.filter(user=lena).exists()
