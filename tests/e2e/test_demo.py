"""``manage.py demo --no-serve`` end to end on PostgreSQL, twice (the second reuses the first)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from leaderboard.demo.setup import AGENTS, SLUG
from leaderboard.models import EvaluationRun, SliceScore, Split, Submission
from tests.e2e.harness import REPO, pipeline

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
__all__ = ["pipeline"]  # the fixture used below


def _demo(env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", "demo", "--no-serve"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_the_demo_evaluates_every_split_and_prints_the_rankings(pipeline):
    output = _demo(pipeline.env)

    splits = Split.objects.filter(task__challenge__slug=SLUG)
    assert splits.count() == 9
    runs = EvaluationRun.objects.filter(submission__challenge__slug=SLUG)
    assert runs.count() == 9 * len(AGENTS)
    assert set(runs.values_list("state", flat=True)) == {EvaluationRun.State.DONE}
    assert f"{runs.count()} of {runs.count()} runs done." in output
    # Every board: the retrieval agent first, the abstaining one last, as stored.
    for split in splits:
        board = output.split(f"\n{split.task.task_id} / {split.kind}\n", 1)[1].split("\n\n")[0]
        methods = [line.split()[1] for line in board.splitlines()[1:]]
        assert methods[0] == "rag-kit-a" and methods[-1] == "idk", board
    idk = SliceScore.objects.filter(run__submission__method_name="idk", dimension="all")
    assert {row.metrics["missing"] for row in idk} == {1.0}

    before = set(Submission.objects.values_list("pk", flat=True))
    again = _demo(pipeline.env)
    assert set(Submission.objects.values_list("pk", flat=True)) == before
    assert "0 runs to go" in again
