"""End to end for a second benchmark: a Visual-RAG task evaluated in five settings, submitted
through the web form, run by a Celery worker process in real containers (one run per setting),
judged by the rules judge, ranked per setting with gCUE across settings; every stored number
equals ``python -m evaluator score --protocol visual-rag`` on the same answers, and the judge
transcript a team downloads replays to the same numbers with no judge call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from evaluator.benchmarks.visual_rag import VisualRAG
from evaluator.benchmarks.visual_rag.metrics import gcue
from evaluator.benchmarks.visual_rag.sample import write_sample
from leaderboard import board_store
from leaderboard.models import (
    Challenge,
    EvaluationRun,
    ItemAnswer,
    Membership,
    SliceScore,
    Team,
)
from leaderboard.splits import import_split_dir
from tests.e2e.harness import REPO, make_task, pipeline, submit_through_form, team_member
from tests.e2e.test_pipeline_e2e import _same

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
__all__ = ["pipeline", "team_member"]  # fixtures used by the test below

SETTINGS = ("retrieval", "zero_shot", "gt_clue", "non_clue", "one_in_3")
AGENTS = {
    "colour-agent": REPO / "examples/agents/visual-rag-colour",
    "idk-agent": REPO / "examples/agents/visual-rag-idk",
}


def _cli_scores(run: EvaluationRun, split_dir: Path, tmp_path: Path, *judge: str) -> dict:
    """``python -m evaluator score --protocol visual-rag`` on the run's stored answers."""
    predictions = tmp_path / f"run-{run.pk}.jsonl"
    lines = []
    for answer in run.answers.filter(outcome=ItemAnswer.Outcome.ANSWERED):
        setting, query_id = answer.item_key.split("/", 1)
        reply = json.loads(answer.response)
        lines.append(json.dumps({"query_id": query_id, "setting": setting, **reply}) + "\n")
    predictions.write_text("".join(lines))
    out = tmp_path / f"scores-{run.pk}-{len(judge)}"
    subprocess.run(
        [
            sys.executable, "-m", "evaluator", "score", "--protocol", "visual-rag",
            "--split", str(split_dir), "--predictions", str(predictions), "--out", str(out),
            "--settings", run.setting, "--no-cache", "--no-progress", *judge,
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
    )  # fmt: skip
    return json.loads((out / "scores.json").read_text())


def test_a_visual_rag_challenge_from_the_web_form_to_its_leaderboards(
    pipeline, team_member, client, tmp_path
):
    team, user = team_member
    write_sample(tmp_path / "sample")
    split_dir = tmp_path / "sample" / "validation"
    challenge = Challenge.objects.create(
        name="Visual-RAG e2e", slug="visual-rag-e2e", is_published=True
    )
    task = make_task(
        challenge,
        "visual-rag",
        benchmark="visual-rag",
        primary_metric="accuracy",
        settings={"evaluated": list(SETTINGS)},
    )
    split = import_split_dir(task, "validation", split_dir)
    other_team = Team.objects.create(name="Other team")
    other = User.objects.create_user("other-lead", password="pw-secret-123")
    Membership.objects.create(team=other_team, user=other)  # one team per challenge
    client.force_login(user)
    submissions = submit_through_form(client, challenge, AGENTS, (team, other_team))
    client.force_login(user)  # the first team's member reads the pages

    pipeline.start_worker("worker")
    runs: dict[tuple[str, str], EvaluationRun] = {}
    for method, submission in submissions.items():
        finished = pipeline.wait_finished(submission, timeout_s=400)
        assert sorted(r.setting for r in finished) == sorted(SETTINGS)  # one run per setting
        for run in finished:
            assert run.state == EvaluationRun.State.DONE, (run.failure_reason, run.operator_detail)
            assert run.answers.count() == split.items == 28
            runs[method, run.setting] = run

    benchmark = VisualRAG.from_settings(task.settings)
    for (method, setting), run in runs.items():
        expected = _cli_scores(run, split_dir, tmp_path)
        blocks = benchmark.for_setting(setting).score_blocks(expected)
        rows = {(r.dimension, r.value): r for r in SliceScore.objects.filter(run=run)}
        assert set(rows) == {(b.dimension, b.value) for b in blocks}, (method, setting)
        for block in blocks:
            row = rows[block.dimension, block.value]
            where = f"{method} {setting} {block.dimension}={block.value}"
            _same(row.metrics, json.loads(json.dumps(block.metrics)), where)
            assert row.count == block.count, where
        # The transcript replays to the same numbers with no judge call.
        client.force_login(run.submission.team.members.first())  # the team's own
        page = client.get(reverse("leaderboard:run-transcript", args=[run.pk]))
        assert page.status_code == 200
        transcript = tmp_path / f"transcript-{run.pk}.jsonl"
        transcript.write_bytes(b"".join(page.streaming_content))
        calls = [json.loads(line) for line in transcript.read_text().splitlines()]
        assert calls and all(c["key"].startswith("answer/") for c in calls)
        assert all(c["key"].endswith(f"/{setting}") for c in calls)
        replayed = _cli_scores(
            run, split_dir, tmp_path, "--judge=replay", f"--transcript={transcript}"
        )
        assert {**replayed, "judge": expected["judge"]} == expected

    colour = {
        s: SliceScore.objects.get(run=runs["colour-agent", s], dimension="all") for s in SETTINGS
    }
    idk = {s: SliceScore.objects.get(run=runs["idk-agent", s], dimension="all") for s in SETTINGS}
    assert colour["gt_clue"].primary > colour["non_clue"].primary
    assert all(idk[s].primary == 0.0 for s in SETTINGS)
    assert colour["retrieval"].metrics["hit@5"] > idk["retrieval"].metrics["hit@5"]

    # Each setting's board ranks that setting's runs; gCUE comes across the settings' runs.
    for setting in SETTINGS:
        board = board_store.board(split, setting)
        assert [e.method_name for e in board.entries] == ["colour-agent", "idk-agent"]
        assert {e.run_id for e in board.entries} == {
            runs["colour-agent", setting].pk,
            runs["idk-agent", setting].pk,
        }
    derived = board_store.board(split, "gt_clue").derived
    accuracies = {s: {"accuracy": colour[s].metrics["accuracy"]} for s in SETTINGS}
    assert derived[submissions["colour-agent"].pk] == gcue(accuracies, 0.5)[0]
    assert derived[submissions["idk-agent"].pk] == {"gcue@3": None}  # A_GT = B: undefined
    board_url = reverse(
        "leaderboard:leaderboard", args=[challenge.slug, task.task_id, "validation"]
    )
    page = client.get(board_url, {"setting": "retrieval"})
    assert page.status_code == 200
    html = page.content.decode()
    assert html.index("colour-agent") < html.index("idk-agent")
