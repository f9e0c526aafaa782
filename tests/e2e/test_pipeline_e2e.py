"""End to end: the web form -> a Celery worker process -> agent containers -> the rules judge
-> the leaderboard page; the stored slice numbers equal ``python -m evaluator score`` on the
same answers."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from evaluator.benchmarks.crag_mm.sample import write_sample
from leaderboard import board_store
from leaderboard.models import (
    Challenge,
    EntryComparison,
    EvaluationRun,
    ItemAnswer,
    Membership,
    RunUnits,
    SliceScore,
    Submission,
    Team,
)
from leaderboard.pipeline.bundles import store_corpus
from leaderboard.slice_statistics import slice_statistics
from leaderboard.splits import import_split_dir
from tests.e2e.harness import REPO, make_task, pipeline, submit_through_form, team_member

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
__all__ = ["pipeline", "team_member"]  # fixtures used by the test below

TASK = "single-source-augmentation"
AGENTS = {
    "rag-kit-a-agent": REPO / "examples/agents/rag-kit-a",
    "idk-agent": REPO / "examples/agents/idk",
}


def _cli_scores(run: EvaluationRun, split_dir, tmp_path, *judge: str) -> dict:
    """``python -m evaluator score`` on the run's stored answers (the rules judge, or
    ``judge``'s flags)."""
    predictions = tmp_path / f"run-{run.pk}.jsonl"
    answered = run.answers.filter(outcome=ItemAnswer.Outcome.ANSWERED)
    predictions.write_text(
        "".join(
            json.dumps(
                {
                    "session_id": a.group,
                    "interaction_id": a.item_key,
                    "response": a.response,
                }
            )
            + "\n"
            for a in answered
        )
    )
    out = tmp_path / f"scores-{run.pk}-{len(judge)}"
    task = run.task
    subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator",
            "score",
            "--split",
            str(split_dir),
            "--predictions",
            str(predictions),
            "--out",
            str(out),
            "--no-cache",
            "--no-progress",
            "--missing-variant",
            task.effective_settings["missing_variant"],
            "--counting",
            task.effective_settings["counting"],
            *judge,
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    return json.loads((out / "scores.json").read_text())


def _same(stored, expected, where: str) -> None:
    if isinstance(expected, dict):
        assert set(stored) == set(expected), where
        for key in expected:
            _same(stored[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert len(stored) == len(expected), where
        for i, (a, b) in enumerate(zip(stored, expected, strict=True)):
            _same(a, b, f"{where}[{i}]")
    elif isinstance(expected, float) and stored is not None:
        assert math.isclose(stored, expected, rel_tol=1e-9, abs_tol=1e-12), where
    else:
        assert stored == expected, where


def test_submissions_from_the_web_form_reach_the_leaderboard(
    pipeline, team_member, client, tmp_path
):
    team, user = team_member
    sample = tmp_path / "sample"
    write_sample(sample)
    challenge = Challenge.objects.create(name="CRAG-MM e2e", slug="crag-mm-e2e", is_published=True)
    task = make_task(challenge, TASK, image_search_enabled=True)
    split_dir = sample / TASK / "validation"
    split = import_split_dir(task, "validation", split_dir)
    store_corpus(challenge, sample / "corpus")

    other_team = Team.objects.create(name="Other team")  # one entry per team on the board
    other = User.objects.create_user("other-lead", password="pw-secret-123")
    Membership.objects.create(team=other_team, user=other)  # one team per challenge
    client.force_login(user)
    submissions = submit_through_form(client, challenge, AGENTS, (team, other_team))
    client.force_login(user)  # the first team's member reads the pages

    pipeline.start_worker("worker")
    runs = {}
    for method, submission in submissions.items():
        (run,) = pipeline.wait_finished(submission)
        assert run.state == EvaluationRun.State.DONE, (run.failure_reason, run.operator_detail)
        runs[method] = run
        submission.refresh_from_db()
        assert submission.image_digest.startswith("sha256:")
        assert submission.state == Submission.State.READY
    rag, idk = runs["rag-kit-a-agent"], runs["idk-agent"]
    assert rag.answers.count() == split.items

    board = reverse("leaderboard:leaderboard", args=[challenge.slug, TASK, "validation"])
    page = client.get(board)
    assert page.status_code == 200
    html = page.content.decode()
    assert html.index(">rag-kit-a-agent</a>") < html.index(">idk-agent</a>"), "rag ranks first"
    best = SliceScore.objects.get(run=rag, dimension="all")
    worst = SliceScore.objects.get(run=idk, dimension="all")
    assert best.primary > worst.primary == 0.0  # truthfulness, the task's primary metric

    for method, run in runs.items():
        expected = _cli_scores(run, split_dir, tmp_path)
        rows = SliceScore.objects.filter(run=run)
        assert rows.count() == 1 + sum(len(v) for v in expected["slices"].values())
        for row in rows:
            if (row.dimension, row.value) == ("all", "all"):
                block = expected["all"]
            else:
                block = expected["slices"][row.dimension][row.value]
            _same(row.metrics, block, f"{method} {row.dimension}={row.value}")
        assert row.run.scores_complete
        # The judge transcript the team downloads replays to the same numbers, no judge asked.
        client.force_login(run.submission.team.members.first())  # the team's own
        page = client.get(reverse("leaderboard:run-transcript", args=[run.pk]))
        assert page.status_code == 200 and page["Content-Type"] == "application/x-ndjson"
        transcript = tmp_path / f"transcript-{run.pk}.jsonl"
        transcript.write_bytes(b"".join(page.streaming_content))
        calls = [json.loads(line) for line in transcript.read_text().splitlines()]
        assert all(c["key"].startswith("turn/") and c["judge"] == "rules@1" for c in calls)
        replayed = _cli_scores(
            run, split_dir, tmp_path, "--judge=replay", f"--transcript={transcript}"
        )
        if calls:
            assert replayed == expected
        else:  # every turn missing or exact: no judge call, nothing owed to one
            assert replayed["judge"]["id"] == "replay:no-judge-calls"
            assert {**replayed, "judge": expected["judge"]} == expected
    assert any(r.transcript for r in runs.values())
    # Computed when the second run was aggregated; the compare page only reads it.
    pair = sorted((rag.pk, idk.pk))
    stored = EntryComparison.objects.get(run_a=pair[0], run_b=pair[1])
    sign = 1 if pair[0] == rag.pk else -1
    assert sign * stored.difference == pytest.approx(best.primary - worst.primary)
    # the scoring stage kept each run's units: the board has rank intervals and groups
    for run in (rag, idk):
        units = RunUnits.objects.get(run=run)
        assert units.array().mean() == pytest.approx(run.headline.primary)
        assert sum(units.verdicts.values()) == split.items
    entries = board_store.entries(split)
    assert all(e.rank_low is not None and e.rank_low <= e.rank <= e.rank_high for e in entries)
    assert board_store.board(split).statistics["units"] == units.array().size
    # and which slice value each unit belongs to: the slice tables have theirs too
    domains = units.slice_verdicts["domain"]
    assert units.slices and sum(n for v in domains.values() for n in v.values()) == split.items
    by_domain = slice_statistics(split, "", "domain")
    assert not by_domain.unavailable, by_domain.unavailable
    assert set(by_domain.values) == set(domains)
    assert all(p.rank_low for v in by_domain.values.values() for p in v.places.values())
