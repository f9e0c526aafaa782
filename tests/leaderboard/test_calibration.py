"""Scores calibrated by a finished judge audit beside the judge's (``leaderboard.calibration``):
the estimate against its formula on a small fixed audit, the organiser's choice of the score
that ranks, and a private split's labels and verdicts never reaching a team."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard import board_store
from leaderboard.models import AuditItem, AuditLabel, JudgeAudit, Split, Task, Team

SE = 0.2 / (2 * 1.959963984540054)  # the factories' intervals: the score +- 0.1
# The audit: judged correct 4 times, people said correct x3 and hallucinated (corrections
# 0, 0, 0, -2: mean -0.5, variance 1); judged hallucinated twice, people said hallucinated and
# missing (0, 1: mean 0.5, variance 0.5); one contested item, left out.
LABELS = [
    ("correct", ["correct"]), ("correct", ["correct"]), ("correct", ["correct"]),
    ("correct", ["hallucinated"]), ("hallucinated", ["hallucinated"]),
    ("hallucinated", ["missing"]), ("correct", ["correct", "missing"]),
]  # fmt: skip


@pytest.fixture
def public(splits) -> Split:
    return splits["public-test"]


def audit_of(split: Split, labeller, finished: bool = True, note: str = "") -> JudgeAudit:
    audit = JudgeAudit.objects.create(split=split, judge_id="rules@1", menu=["correct"], size=7)
    for position, (verdict, labels) in enumerate(LABELS):
        item = AuditItem.objects.create(
            audit=audit, position=position, item_key=f"i{position}", judge_verdict=verdict,
            question="the hidden question", truth=["gold"], response="an answer",
        )  # fmt: skip
        for label in labels:
            labeller_ = (
                labeller
                if label == labels[0]
                else labeller.__class__.objects.create(username=f"second{position}")
            )
            AuditLabel.objects.create(item=item, labeller=labeller_, verdict=label, note=note)
    if finished:
        audit.finished_at = timezone.now()
        audit.save()  # what finishing does; its receiver ranks the split's boards again
    return audit


@pytest.fixture
def board(teams, public, make_entry) -> Split:
    # a: 0.5, judged correct 6, missing 2, hallucinated 2: 0.5 + 0.6 x -0.5 + 0.2 x 0.5 = 0.3
    # b: 0.45, judged hallucinated on all 10: 0.45 + 0.5 = 0.95
    make_entry(teams["alpha"], public, 0.5, method="a", units=[1.0, 0.0],
               verdicts={"correct": 6, "missing": 2, "hallucinated": 2})  # fmt: skip
    make_entry(teams["beta"], public, 0.45, method="b", units=[0.5, 0.4],
               verdicts={"hallucinated": 10})  # fmt: skip
    return public


def calibrated(split: Split) -> list[tuple[str, int | None, float | None]]:
    return [(e.method_name, e.rank, e.calibrated) for e in board_store.entries(split)]


def test_no_calibration_before_an_audit_finishes(board, make_user):
    audit_of(board, make_user(staff=True), finished=False)
    assert calibrated(board) == [("a", 1, None), ("b", 2, None)]
    assert "calibration" not in board_store.board(board).statistics


def test_the_estimate_is_the_formula_on_a_fixed_audit(board, make_user):
    audit = audit_of(board, make_user(staff=True))
    entries = board_store.entries(board)
    assert [e.calibrated for e in entries] == pytest.approx([0.3, 0.95])
    half = 1.959964 * math.sqrt(SE**2 + 0.36 * 1.0 / 4 + 0.04 * 0.5 / 2)
    assert (entries[0].calibrated_low, entries[0].calibrated_high) == pytest.approx(
        (0.3 - half, 0.3 + half), rel=1e-5
    )
    half = 1.959964 * math.sqrt(SE**2 + 1.0 * 0.5 / 2)
    assert entries[1].calibrated_high == pytest.approx(0.95 + half, rel=1e-5)
    statistics = board_store.board(board).statistics
    assert statistics["calibration"] == {
        "audit": audit.pk, "judge_id": "rules@1", "labels": 6, "ranks": False,
    }  # fmt: skip
    # the judge's score ranks by default
    assert [(e.method_name, e.rank) for e in entries] == [("a", 1), ("b", 2)]


def test_the_organiser_chooses_the_calibrated_score_to_rank(board, make_user):
    audit_of(board, make_user(staff=True))
    board.task.ranked_by = Task.RankedBy.CALIBRATED
    board.task.save()
    assert calibrated(board) == [("b", 1, pytest.approx(0.95)), ("a", 2, pytest.approx(0.3))]
    statistics = board_store.board(board).statistics
    assert statistics["calibration"]["ranks"] is True
    # rank intervals and groups of the calibrated scores: b - a = (0.45 - 0.5) + (0 - 0.6) x
    # -0.5 + (1 - 0.2) x 0.5 = 0.65; its variance, the units' (-0.5, 0.4): 0.405 / 2, plus the
    # corrections' 0.6^2 x 1/4 + 0.8^2 x 1/4 = 0.25: z = 0.65 / sqrt(0.4525), not apart
    assert "unavailable" not in statistics and statistics["calibrated"] is True
    entries = board_store.entries(board)
    assert [(e.rank_low, e.rank_high, e.group) for e in entries] == [(1, 2, 1), (1, 2, 1)]


def test_entries_of_another_judge_are_not_calibrated(board, teams, make_user, make_entry):
    other = make_entry(Team.objects.create(name="delta"), board, 0.1, method="d",
                       units=[0.1, 0.1], verdicts={"correct": 5})  # fmt: skip
    other.judge_id = "other@2"
    other.save()
    audit_of(board, make_user(staff=True))
    assert dict((m, c) for m, _, c in calibrated(board))["d"] is None


def test_the_page_shows_the_calibrated_column(board, client, make_user):
    audit_of(board, make_user(staff=True))
    args = (board.task.challenge.slug, board.task.task_id, board.kind)
    page = client.get(reverse("leaderboard:leaderboard", args=args)).content.decode()
    assert "Calibrated by people</th>" in page
    assert "30.0 [" in page  # truthfulness x100, with its interval
    assert "the judge&#x27;s score ranks." in page
    assert "redraws the audit&#x27;s labels" not in page
    board.task.ranked_by = Task.RankedBy.CALIBRATED
    board.task.save()
    page = client.get(reverse("leaderboard:leaderboard", args=args)).content.decode()
    assert "redraws the audit&#x27;s labels too" in page and "(1–2)</span>" in page


def test_a_private_splits_labels_and_verdicts_never_reach_a_team(
    teams, splits, make_entry, make_user
):
    private = splits["private-test"]
    make_entry(teams["alpha"], private, 0.5, method="a", units=[1.0, 0.0],
               verdicts={"correct": 6, "missing": 2, "hallucinated": 2})  # fmt: skip
    audit_of(private, make_user(staff=True), note="secret-labeller-note")
    api = APIClient()
    api.force_authenticate(make_user("member", team=teams["alpha"]))
    path = reverse("api:split-leaderboard", args=[private.pk])
    assert api.get(path).status_code == 403  # not revealed: nothing at all
    private.reveal_at = timezone.now() - timedelta(minutes=1)
    private.save()
    body = api.get(path).json()
    assert body["entries"][0]["calibrated"]["value"] == pytest.approx(0.3)  # the aggregate only
    text = str(body)
    for secret in ("secret-labeller-note", "the hidden question", "hallucinated", "i3"):
        assert secret not in text
    audits = api.get(f"/c/{private.task.challenge.slug}/").content.decode()
    assert "secret-labeller-note" not in audits
