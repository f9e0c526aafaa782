"""A bundle's baseline end to end: imported from its build context, built and evaluated by a
real worker as any team's submission is, and shown on the board unranked."""

from __future__ import annotations

import shutil

import pytest
from django.urls import reverse

from leaderboard.challenge_bundle.importer import import_bundle
from leaderboard.models import EvaluationRun, Submission
from tests.e2e.harness import REPO, pipeline
from tests.leaderboard.bundle_support import write_bundle

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]
__all__ = ["pipeline"]  # fixtures used by the test below

BASELINE = """\
baselines:
  - method_name: I do not know
    description: the organisers' floor
    context: baselines/idk
    tasks: [multi-turn-qa]
"""


def test_a_bundle_baseline_is_built_evaluated_and_shown_unranked(pipeline, tmp_path, client):
    root = write_bundle(tmp_path / "bundle")
    shutil.copytree(REPO / "examples" / "agents" / "idk", root / "baselines" / "idk")
    with (root / "challenge.yaml").open("a") as manifest:
        manifest.write(BASELINE)
    import_bundle(root)  # its runs are queued as it commits
    submission = Submission.objects.get(is_baseline=True)
    pipeline.start_worker("worker")
    runs = pipeline.wait_finished(submission)
    assert [r.split.kind for r in runs] == ["validation", "private-test"]
    for run in runs:
        assert run.state == EvaluationRun.State.DONE, (run.failure_reason, run.operator_detail)
    submission.refresh_from_db()
    assert submission.state == Submission.State.READY
    board = reverse("leaderboard:leaderboard", args=["bundle-test", "multi-turn-qa", "validation"])
    html = client.get(board).content.decode()
    assert "I do not know" in html and "Baselines (bundle-test)" in html
