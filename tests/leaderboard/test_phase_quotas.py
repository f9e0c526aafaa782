"""A phase's quotas: per team and task, over the submissions made during the phase, beside the
task's own (the tighter refuses); the refusal and the preflight name the limit; set by a
bundle, edited in the admin."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard import api_tokens
from leaderboard.challenge_bundle.importer import import_bundle
from leaderboard.challenge_bundle.problems import BundleInvalid
from leaderboard.models import Challenge, Phase, Submission, Task
from leaderboard.quotas import QuotaExceeded, usage
from leaderboard.submitting import Artifact, MethodInfo, submit
from tests.leaderboard.bundle_support import edit, write_bundle

from .submit_support import open_splits

__all__ = ["open_splits"]  # fixtures used by name

REF = Artifact(Submission.ArtifactKind.REGISTRY_REF, registry_ref="team/agent:1")
START = timezone.now().replace(microsecond=0) - timedelta(days=15)


@pytest.fixture
def member(make_user, teams):
    return make_user("ann", team=teams["alpha"])


@pytest.fixture
def phases(open_splits, challenge) -> tuple[Phase, Phase]:
    """Phase 1: days 0-10, at most 2 submissions; Phase 2: days 10-20 (open now), 1 a day."""
    Task.objects.update(quota_per_day=None, quota_total=None, quota_concurrent=None)
    first = Phase.objects.create(
        challenge=challenge, name="Phase 1", starts_at=START,
        ends_at=START + timedelta(days=10), quota_total=2,
    )  # fmt: skip
    second = Phase.objects.create(
        challenge=challenge, name="Phase 2", starts_at=START + timedelta(days=10),
        ends_at=START + timedelta(days=20), quota_per_day=1,
    )  # fmt: skip
    return first, second


def _submit(member, team, day: float):
    when = START + timedelta(days=day)
    return submit(team, Challenge.objects.get(), member, REF, MethodInfo("m"), now=when)


def test_a_phase_total_refuses_at_its_limit_and_the_next_phase_counts_afresh(phases, member, teams):
    _submit(member, teams["alpha"], 1)
    _submit(member, teams["alpha"], 2)
    with pytest.raises(QuotaExceeded) as refused:
        _submit(member, teams["alpha"], 3)
    assert str(refused.value) == (
        "Team alpha: all 2 submissions allowed on task multi-turn-qa in Phase 1 are used"
    )
    task = Task.objects.get()
    assert usage(teams["alpha"], task, START + timedelta(days=3)).limit == "phase_total"
    assert _submit(member, teams["alpha"], 11).pk  # Phase 2: Phase 1's two do not count
    in_phase_2 = usage(teams["alpha"], task, START + timedelta(days=11, hours=1))
    assert (in_phase_2.phase.name, in_phase_2.phase_total, in_phase_2.total) == ("Phase 2", 1, 3)


def test_a_phase_per_day_refuses_within_the_day_and_says_when(phases, member, teams):
    made = _submit(member, teams["alpha"], 11)
    with pytest.raises(QuotaExceeded) as refused:
        _submit(member, teams["alpha"], 11.5)
    slot = made.created_at + timedelta(hours=24)
    assert str(refused.value) == (
        "Team alpha: 1 submissions on task multi-turn-qa in the last 24 hours of Phase 2 (at "
        f"most 1 a day in this phase); the next one is possible from {slot:%Y-%m-%d %H:%M} UTC"
    )
    assert _submit(member, teams["alpha"], 12.1).pk


def test_the_tighter_of_the_task_and_the_phase_refuses(phases, member, teams):
    Phase.objects.filter(name="Phase 2").update(quota_per_day=5)
    Task.objects.update(quota_per_day=1)
    _submit(member, teams["alpha"], 11)
    with pytest.raises(QuotaExceeded, match=r"in the last 24 hours \(at most 1\)"):
        _submit(member, teams["alpha"], 11.5)
    use = usage(teams["alpha"], Task.objects.get(), START + timedelta(days=11.5))
    assert (use.limit, use.remaining) == ("per_day", 0)
    Task.objects.update(quota_per_day=None)
    assert usage(teams["alpha"], Task.objects.get(), START + timedelta(days=11.5)).remaining == 4


def test_organisers_are_exempt_from_phase_quotas(phases, make_user, teams):
    organiser = make_user("org", staff=True, team=teams["alpha"])
    for day in (1, 1.1, 1.2):
        assert _submit(organiser, teams["alpha"], day).pk


def test_the_preflight_names_the_phase_limit(phases, member, teams):
    submit(teams["alpha"], Challenge.objects.get(), member, REF, MethodInfo("m"))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_tokens.create(member, 'tests')[1]}")
    body = api.get("/api/challenges/crag-mm-2026/quota/").json()
    assert body["allowed"] is False and "of Phase 2 (at most 1 a day" in body["problem"]
    (row,) = body["tasks"]
    assert (row["limit"], row["phase"], row["phase_quota_per_day"], row["phase_today"]) == (
        "phase_per_day", "Phase 2", 1, 1,
    )  # fmt: skip
    assert (row["phase_quota_total"], row["phase_total"], row["remaining"]) == (None, 1, 0)


def test_phase_quotas_are_editable_in_the_admin(phases, client, make_user):
    admin = make_user("admin", staff=True)
    admin.is_superuser = True
    admin.save()
    client.force_login(admin)
    first, _ = phases
    page = client.get(f"/admin/leaderboard/phase/{first.pk}/change/").content.decode()
    assert 'name="quota_per_day"' in page and 'name="quota_total"' in page


def test_a_bundle_sets_phase_quotas_and_checks_their_types(db, tmp_path):
    bundle = write_bundle(tmp_path / "bundle")
    edit(bundle, "ends_at: 2099-01-01T00:00:00Z", "ends_at: 2099-01-01T00:00:00Z\n"
         "    quotas: {per_day: two, total: -1}")  # fmt: skip
    with pytest.raises(BundleInvalid) as refused:
        import_bundle(bundle)
    line = next(
        i for i, text in enumerate((bundle / "challenge.yaml").read_text().splitlines(), 1)
        if "quotas: {per_day: two" in text
    )  # fmt: skip
    assert [str(p) for p in refused.value.problems] == [
        f"challenge.yaml:{line}: phases[0].quotas.per_day: 'two' is not of type 'integer', 'null'",
        f"challenge.yaml:{line}: phases[0].quotas.total: -1 is less than the minimum of 0",
    ]
    edit(bundle, "quotas: {per_day: two, total: -1}", "quotas: {per_day: 2, total: 9}")
    import_bundle(bundle)
    phase = Phase.objects.get()
    assert (phase.quota_per_day, phase.quota_total) == (2, 9)
    edit(bundle, "quotas: {per_day: 2, total: 9}", "quotas: {per_day: 2}")
    assert import_bundle(bundle).changes == ["~ phases.Phase 1.quotas.total: 9 -> None"]


def test_the_challenge_page_and_the_api_show_phase_quotas(phases, client):
    page = client.get("/c/crag-mm-2026/?tab=leaderboards").content.decode()
    assert "<td>2 in the phase</td>" in page and "<td>1 a day</td>" in page
    (listed,) = APIClient().get("/api/challenges/").json()["results"]
    assert [(p["name"], p["quota_per_day"], p["quota_total"]) for p in listed["phases"]] == [
        ("Phase 1", None, 2),
        ("Phase 2", 1, None),
    ]
